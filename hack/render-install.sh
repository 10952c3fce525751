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

# MAO_KUBECTL names a kubectl to use instead: make deploy, undeploy and build-installer pass
# the one hack/kubectl.sh chose (the user's, within one minor of the tested Kubernetes), and the
# API test suite the one it already has, so rendering never waits for a build.
kubectl="${MAO_KUBECTL:-$(hack/k8s-binaries.sh kubectl)/kubectl}"
tmp=$(mktemp -d .render-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "- ../${base%/}"
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
    echo "- target: {kind: ConfigMap, name: memory-adapter-operator-images}"
    echo "  patch: |-"
    echo "    apiVersion: v1"
    echo "    kind: ConfigMap"
    echo "    metadata: {name: memory-adapter-operator-images}"
    echo "    data:"
    echo "      adapterImage: \"$ADAPTER_IMG\""
  fi
} >"$tmp/kustomization.yaml"
"$kubectl" kustomize "$tmp"
