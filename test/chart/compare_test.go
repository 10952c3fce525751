package chart

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// helmLabels are the labels a chart puts on every object for Helm's and its users' bookkeeping
// (the chart, the release, the app version, who manages it). config/ writes its own
// app.kubernetes.io/managed-by: kustomize. No selector of either installer reads them, so they
// are removed from both sides before the comparison.
var helmLabels = []string{
	"helm.sh/chart",
	"app.kubernetes.io/managed-by",
	"app.kubernetes.io/instance",
	"app.kubernetes.io/version",
}

// clusterScopedKinds are kinds that kustomize's namespace transformer does not know to be
// cluster-scoped, so config/default's `namespace:` gives them a metadata.namespace that the
// API server drops (kubectl clears it on apply). The chart writes none. Only the kustomize
// side's namespace is removed, and only for these kinds: a namespace the chart puts on them,
// or one missing from a namespaced object, is still a difference.
var clusterScopedKinds = map[string]bool{
	"ValidatingAdmissionPolicy":        true,
	"ValidatingAdmissionPolicyBinding": true,
}

// comparison says which whole objects one installer may have and the other not, each with its
// reason; every other object must be on both sides.
type comparison struct {
	onlyInChart     map[string]string // kind -> why the chart has it and config/ does not
	onlyInKustomize map[string]string // kind -> why config/ has it and the chart does not
}

// objectKey identifies an object across the two renderings.
type objectKey struct {
	group, kind, namespace, name string
}

func (k objectKey) String() string {
	s := k.kind
	if k.group != "" {
		s += "." + k.group
	}
	if k.namespace != "" {
		return s + " " + k.namespace + "/" + k.name
	}
	return s + " " + k.name
}

func keyOf(o *unstructured.Unstructured) objectKey {
	return objectKey{o.GroupVersionKind().Group, o.GetKind(), o.GetNamespace(), o.GetName()}
}

// compareInstalls compares the kustomize installer's objects with the chart's, object by
// object, and returns every difference, sorted; none means the two install the same thing. The
// allowed differences are exactly the ones normalize removes (each documented there) and the
// whole objects c lists; everything else must be equal, field by field, lists in order.
func compareInstalls(kustomize, chart []*unstructured.Unstructured, c comparison) []string {
	var diffs []string
	index := func(side string, objs []*unstructured.Unstructured) map[objectKey]*unstructured.Unstructured {
		m := map[objectKey]*unstructured.Unstructured{}
		for _, o := range objs {
			o = o.DeepCopy()
			if side == "kustomize" && clusterScopedKinds[o.GetKind()] {
				o.SetNamespace("")
			}
			k := keyOf(o)
			if _, dup := m[k]; dup {
				diffs = append(diffs, fmt.Sprintf("%s: rendered twice by %s", k, side))
			}
			m[k] = o
		}
		return m
	}
	ks, cs := index("kustomize", kustomize), index("chart", chart)
	for k, ko := range ks {
		co, ok := cs[k]
		if !ok {
			if _, allowed := c.onlyInKustomize[k.kind]; !allowed {
				diffs = append(diffs, fmt.Sprintf("%s: rendered by hack/render-install.sh, not by the chart", k))
			}
			continue
		}
		kn, cn := normalize(ko.Object, co.Object)
		for _, d := range diffValues("", kn, cn) {
			diffs = append(diffs, fmt.Sprintf("%s: %s", k, d))
		}
	}
	for k := range cs {
		if _, ok := ks[k]; !ok {
			if _, allowed := c.onlyInChart[k.kind]; !allowed {
				diffs = append(diffs, fmt.Sprintf("%s: rendered by the chart, not by hack/render-install.sh", k))
			}
		}
	}
	sort.Strings(diffs)
	return diffs
}

// normalize returns copies of one object as kustomize and as the chart render it, with the
// differences a Helm install has by nature removed, and nothing else:
//   - Helm's labels (helmLabels) and config/'s managed-by label, on the object's own metadata
//     only (never in a selector or a pod template);
//   - app.kubernetes.io/name: memory-adapter-operator where the chart adds it to an object
//     config/ leaves unlabelled (controller-gen's roles and webhook configuration, the
//     policies, the images ConfigMap): the chart labels every object so `kubectl get -l`
//     finds the whole release; no selector of either installer reads it there;
//   - the CRD's helm.sh/resource-policy annotation: `helm uninstall` keeps the CRD (and every
//     MemoryAdapter) instead of deleting it; kustomize has no uninstall of its own
//     (make undeploy deletes what it rendered);
//   - blank lines before an indented line in the admission policies' CEL, which kustomize's
//     YAML library adds (foldMoreIndentedBreaks says why).
func normalize(kustomize, chart map[string]any) (map[string]any, map[string]any) {
	k := runtimeDeepCopy(kustomize)
	c := runtimeDeepCopy(chart)
	kl, _, _ := unstructured.NestedStringMap(k, "metadata", "labels")
	cl, _, _ := unstructured.NestedStringMap(c, "metadata", "labels")
	for _, l := range helmLabels {
		delete(kl, l)
		delete(cl, l)
	}
	if _, has := kl["app.kubernetes.io/name"]; !has && cl["app.kubernetes.io/name"] == "memory-adapter-operator" {
		delete(cl, "app.kubernetes.io/name")
	}
	setOrRemove(k, kl, "metadata", "labels")
	setOrRemove(c, cl, "metadata", "labels")
	if c["kind"] == "CustomResourceDefinition" {
		for _, o := range []map[string]any{k, c} {
			a, _, _ := unstructured.NestedStringMap(o, "metadata", "annotations")
			delete(a, "helm.sh/resource-policy")
			setOrRemove(o, a, "metadata", "annotations")
		}
	}
	if c["kind"] == "ValidatingAdmissionPolicy" {
		k["spec"] = foldMoreIndentedBreaks(k["spec"])
		c["spec"] = foldMoreIndentedBreaks(c["spec"])
	}
	return k, c
}

// blankBeforeIndented is a run of blank lines before an indented line.
var blankBeforeIndented = regexp.MustCompile(`\n\n+( )`)

// foldMoreIndentedBreaks removes, from every string under v, the blank lines before an
// indented line. Why: config/policy writes long CEL as folded scalars (>-) whose continuation
// lines are more indented, and kustomize's YAML library (kyaml, on go-yaml v3) reads the line
// break before a more-indented line as two, where the YAML spec and helm's parser
// (sigs.k8s.io/yaml) read one (YAML 1.2, example 8.10). So the kustomize installer's policies
// carry an extra blank line in a few expressions that the chart's do not. CEL ignores
// whitespace between tokens, so the policies behave alike; any other change to the CEL, a
// character or a token, is still a difference.
func foldMoreIndentedBreaks(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for key, val := range t {
			t[key] = foldMoreIndentedBreaks(val)
		}
	case []any:
		for i, val := range t {
			t[i] = foldMoreIndentedBreaks(val)
		}
	case string:
		return blankBeforeIndented.ReplaceAllString(t, "\n$1")
	}
	return v
}

func setOrRemove(obj map[string]any, m map[string]string, path ...string) {
	if len(m) == 0 {
		unstructured.RemoveNestedField(obj, path...)
		return
	}
	_ = unstructured.SetNestedStringMap(obj, m, path...)
}

func runtimeDeepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

// diffValues lists where a (kustomize's) and b (the chart's) differ, as JSON-ish paths with
// both values.
func diffValues(path string, a, b any) []string {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return []string{describe(path, a, b)}
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out []string
		for _, k := range sorted {
			out = append(out, diffValues(path+"."+k, av[k], bv[k])...)
		}
		return out
	case []any:
		bv, ok := b.([]any)
		if !ok {
			return []string{describe(path, a, b)}
		}
		var out []string
		for i := 0; i < len(av) || i < len(bv); i++ {
			var x, y any
			if i < len(av) {
				x = av[i]
			}
			if i < len(bv) {
				y = bv[i]
			}
			out = append(out, diffValues(fmt.Sprintf("%s[%d]", path, i), x, y)...)
		}
		return out
	default:
		if reflect.DeepEqual(a, b) {
			return nil
		}
		return []string{describe(path, a, b)}
	}
}

func describe(path string, a, b any) string {
	show := func(v any) string {
		if v == nil {
			return "(absent)"
		}
		s := fmt.Sprintf("%#v", v)
		if len(s) > 160 {
			s = s[:160] + "..."
		}
		return strings.ReplaceAll(s, "\n", `\n`)
	}
	return fmt.Sprintf("%s: kustomize %s, chart %s", strings.TrimPrefix(path, "."), show(a), show(b))
}
