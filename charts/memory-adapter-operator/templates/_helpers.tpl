{{/*
The installation's name prefix: every object's name starts with it, as config/default's
namePrefix does for the kustomize installer, and the manager gets it as NAME_PREFIX to name the
Secrets and webhook objects it makes itself. Not derived from the release name: the CRD and the
cluster-scoped roles and policies make one operator per cluster, and with the same default as
config/default a Helm install and a kustomize install name every object alike. The bounds are
hack/render-install.sh's: the longest name it prefixes is a Service's,
controller-manager-metrics-service (34 characters), and a Service name is a DNS label.
*/}}
{{- define "mao.prefix" -}}
{{- $p := .Values.namePrefix | toString -}}
{{- if not (regexMatch "^[a-z][-a-z0-9]{0,28}$" $p) -}}
{{- fail (printf "namePrefix %q must be a lower-case letter, then at most 28 lower-case letters, digits or '-'" $p) -}}
{{- end -}}
{{- $p -}}
{{- end -}}

{{/* The manager's ServiceAccount, the identity every admission policy names. */}}
{{- define "mao.serviceAccountName" -}}
{{- include "mao.prefix" . }}controller-manager
{{- end -}}

{{/*
Labels on every object. app.kubernetes.io/name is the one config/ puts on most objects;
the others are Helm's. Selectors never use the Helm ones, so they match the kustomize
installer's pods and Services exactly.
*/}}
{{- define "mao.labels" -}}
app.kubernetes.io/name: memory-adapter-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The manager pods' selector, config/manager's. */}}
{{- define "mao.selectorLabels" -}}
app.kubernetes.io/name: memory-adapter-operator
control-plane: controller-manager
{{- end -}}

{{/* An image reference from {repository, tag, digest}; the tag defaults to appVersion. */}}
{{- define "mao.image" -}}
{{- $img := index . 0 -}}
{{- $root := index . 1 -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default $root.Chart.AppVersion $img.tag | toString) -}}
{{- end -}}
{{- end -}}

{{/*
mao.object renders an object read from files/ (a verbatim copy of a config/ file, kept equal
by charts/sync-files.sh and test/chart) with the installation's prefix on its name, the
release's namespace when it is namespaced and the chart's labels added. Called with
(list OBJECT ROOT NAMESPACED).
*/}}
{{- define "mao.object" -}}
{{- $o := index . 0 -}}
{{- $root := index . 1 -}}
{{- $namespaced := index . 2 -}}
{{- $md := $o.metadata -}}
{{- $_ := set $md "name" (printf "%s%s" (include "mao.prefix" $root) $md.name) -}}
{{- if $namespaced -}}
{{- $_ := set $md "namespace" $root.Release.Namespace -}}
{{- else -}}
{{- $_ := unset $md "namespace" -}}
{{- end -}}
{{- $labels := default dict $md.labels -}}
{{- $_ := unset $labels "app.kubernetes.io/managed-by" -}}
{{- $_ := set $md "labels" (merge (include "mao.labels" $root | fromYaml) $labels) -}}
{{- toYaml $o -}}
{{- end -}}

{{/*
mao.replaceQuoted replaces the quoted pieces of a CEL expression that config/default's
replacements replace: the expression split at ' (kustomize's delimiter option), piece INDEX
set to VALUE, joined again. Called with (list EXPRESSION INDEX VALUE).
*/}}
{{- define "mao.replaceQuoted" -}}
{{- $parts := splitList "'" (index . 0) -}}
{{- $want := index . 1 -}}
{{- if le (len $parts) $want -}}
{{- fail (printf "expression %q has no quoted piece %d to replace" (index . 0) $want) -}}
{{- end -}}
{{- $out := list -}}
{{- range $i, $p := $parts -}}
{{- $out = append $out (ternary (index $ 2) $p (eq $i $want)) -}}
{{- end -}}
{{- join "'" $out -}}
{{- end -}}
