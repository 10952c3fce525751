#!/usr/bin/env bash
# Prints the path of the kubectl the Makefile's deployment targets use: the user's own kubectl
# on PATH when its client version is within one minor of the Kubernetes version the project
# tests (hack/versions.env; kubectl's supported skew against the API server), else the one
# hack/k8s-binaries.sh builds from the Go module proxy (cached, no download elsewhere).
# Says on stderr which one it chose and why, so a skewed kubectl never goes unnoticed.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
want_minor=${K8S_VERSION#v1.}
want_minor=${want_minor%%.*}
if own=$(command -v kubectl 2>/dev/null); then
  # `kubectl version --client` prints "Client Version: v1.N.P" on every version this targets.
  ver=$("$own" version --client 2>/dev/null | sed -n 's/^Client Version: v1\.\([0-9]*\)\..*/\1/p' | head -n1)
  if [[ -n "$ver" ]] && (( ver >= want_minor - 1 && ver <= want_minor + 1 )); then
    printf '[kubectl] using %s (v1.%s, within one minor of %s)\n' "$own" "$ver" "$K8S_VERSION" >&2
    echo "$own"
    exit 0
  fi
  printf '[kubectl] %s is v1.%s, more than one minor from %s: building the project'"'"'s own\n' "$own" "${ver:-?}" "$K8S_VERSION" >&2
fi
echo "$("$(dirname "${BASH_SOURCE[0]}")/k8s-binaries.sh" kubectl)/kubectl"
