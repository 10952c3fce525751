#!/usr/bin/env bash
# Renders a kustomization with the manager image set to IMG and prints the YAML on stdout:
# what `make deploy` applies, `make undeploy` deletes and `make build-installer` writes to
# dist/install.yaml.
#
#   [ADAPTER_IMG=IMAGE] hack/render-install.sh IMG [KUSTOMIZATION_DIR]     (default config/default)
#
# ADAPTER_IMG, when set, becomes the images ConfigMap's adapterImage: the manager's
# ADAPTER_IMAGE (the image of the adapters and conformance Jobs it creates) and an image its
# admission policy allows (config/policy/images.yaml's value otherwise).
#
# INSTALL_NAMESPACE and INSTALL_PREFIX, when set, rename the installation: config/default's
# namespace and namePrefix, changed in a throwaway copy of config/ (KUSTOMIZATION_DIR must then
# be under config/). config/default's replacements carry the new names into the admission
# policies and the manager (docs/operator.md#renaming-the-installation).
#
# MONITORING_NAMESPACE, when set, adds config/monitoring to config/default (in the same
# throwaway copy) with that namespace: every adapter's NetworkPolicy then admits it to the
# adapter's metrics port, and the Grafana dashboard ships as a ConfigMap.
#
# kustomize is the one built into kubectl (`kubectl kustomize`), and kubectl is the one
# hack/k8s-binaries.sh builds (or MAO_KUBECTL, below), so no separate kustomize download is
# needed. The image is set through an `images:` override in a throwaway kustomization that
# names the real one as its base, so no checked-in file changes (kubebuilder's `kustomize edit
# set image` would rewrite config/manager/kustomization.yaml on every deploy). kustomize
# refuses absolute paths to a base, so the throwaway directory sits in the checkout
# (gitignored, removed on exit) and names the base relatively.
set -euo pipefail
cd "$(dirname "$0")/.."

img=${1:-}
base=${2:-config/default}
if [ -z "$img" ]; then
  echo "usage: $0 IMG [KUSTOMIZATION_DIR]" >&2
  exit 2
fi
[ -f "$base/kustomization.yaml" ] || { echo "$0: no kustomization.yaml in $base" >&2; exit 2; }

# Split IMG into kustomize's newName plus newTag or digest. A tag is what follows the last
# ':' after the last '/', so a registry port (localhost:5000/x) is not taken for a tag.
name=$img tag="" digest=""
case "$img" in
  *@*) name=${img%%@*} digest=${img#*@} ;;
  *)
    last=${img##*/}
    if [[ $last == *:* ]]; then
      tag=${last##*:}
      name=${img%:*}
    fi
    ;;
esac

namespace=${INSTALL_NAMESPACE:-}
prefix=${INSTALL_PREFIX:-}
if [ -n "$namespace" ] && ! [[ $namespace =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]]; then
  echo "$0: INSTALL_NAMESPACE=$namespace is not a namespace name (a DNS label: lower-case letters, digits and '-', at most 63)" >&2
  exit 2
fi
if [ -n "$prefix" ]; then
  # The longest name it prefixes is a Service's, controller-manager-metrics-service (34
  # characters), and a Service's name is a DNS label that starts with a letter (at most 63).
  if ! [[ $prefix =~ ^[a-z][-a-z0-9]{0,28}$ ]]; then
    echo "$0: INSTALL_PREFIX=$prefix is not a name prefix: a lower-case letter, then at most 28 lower-case letters, digits or '-'" >&2
    exit 2
  fi
  # config/default reads the prefix back off the names it renders, by these suffixes.
  case "$prefix" in
    *controller-manager*|*webhook-service*)
      echo "$0: INSTALL_PREFIX=$prefix contains controller-manager or webhook-service, from which config/default reads the prefix back" >&2
      exit 2 ;;
  esac
fi
monitoring=${MONITORING_NAMESPACE:-}
if [ -n "$monitoring" ] && ! [[ $monitoring =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]]; then
  echo "$0: MONITORING_NAMESPACE=$monitoring is not a namespace name (a DNS label: lower-case letters, digits and '-', at most 63)" >&2
  exit 2
fi
if { [ -n "$namespace" ] || [ -n "$prefix" ] || [ -n "$monitoring" ]; } && [[ ${base%/} != config/* ]]; then
  echo "$0: INSTALL_NAMESPACE, INSTALL_PREFIX and MONITORING_NAMESPACE change config/default; $base is not under config/" >&2
  exit 2
fi

# MAO_KUBECTL names a kubectl to use instead: make deploy, undeploy and build-installer pass
# the one hack/kubectl.sh chose (the user's, within one minor of the tested Kubernetes), and the
# API test suite the one it already has, so rendering never waits for a build.
kubectl="${MAO_KUBECTL:-$(hack/k8s-binaries.sh kubectl)/kubectl}"
tmp=$(mktemp -d .render-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
rel="../${base%/}"
if [ -n "$namespace" ] || [ -n "$prefix" ] || [ -n "$monitoring" ]; then
  cp -R config "$tmp/config"
  def="$tmp/config/default/kustomization.yaml"
  grep -q '^namespace: ' "$def" && grep -q '^namePrefix: ' "$def" || {
    echo "$0: config/default/kustomization.yaml has no top-level namespace: or namePrefix: line to change" >&2
    exit 1
  }
  [ -z "$namespace" ] || sed -i "s|^namespace: .*|namespace: $namespace|" "$def"
  [ -z "$prefix" ] || sed -i "s|^namePrefix: .*|namePrefix: $prefix|" "$def"
  if [ -n "$monitoring" ]; then
    if grep -q '^components:' "$def"; then
      echo "$0: config/default already lists components; add ../monitoring there instead of MONITORING_NAMESPACE" >&2
      exit 1
    fi
    printf 'components:\n- ../monitoring\n' >>"$def"
    sed -i "s|^              value: monitoring$|              value: $monitoring|" "$tmp/config/monitoring/kustomization.yaml"
    grep -q "^              value: $monitoring\$" "$tmp/config/monitoring/kustomization.yaml" || {
      echo "$0: config/monitoring/kustomization.yaml has no MONITORING_NAMESPACE value line to change" >&2
      exit 1
    }
  fi
  rel="${base%/}"
fi
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "- $rel"
  echo "images:"
  # "controller" is the placeholder image name in config/manager/manager.yaml.
  echo "- name: controller"
  echo "  newName: $name"
  [ -z "$tag" ] || echo "  newTag: \"$tag\""
  [ -z "$digest" ] || echo "  digest: $digest"
  if [ -n "${ADAPTER_IMG:-}" ]; then
    # The images ConfigMap is both the manager's ADAPTER_IMAGE and what the admission policy
    # on its workloads allows (config/policy/images.yaml).
    echo "patches:"
    echo "- target: {kind: ConfigMap, name: images}"
    echo "  patch: |-"
    echo "    apiVersion: v1"
    echo "    kind: ConfigMap"
    echo "    metadata: {name: images}"
    echo "    data:"
    echo "      adapterImage: \"$ADAPTER_IMG\""
  fi
} >"$tmp/kustomization.yaml"
"$kubectl" kustomize "$tmp"
