#!/usr/bin/env bash
# Builds Kubernetes control-plane and node binaries (and etcd) from the Go module proxy into a
# cache outside the checkout, keyed by version, and prints the directory holding them.
#
# Why: nothing can be downloaded from GitHub or storage buckets on our machines, so
# setup-envtest's download fails; the Go module proxy is the one source that answers. The same
# cache serves envtest (kube-apiserver, etcd) and the local cluster (all of them).
#
# Usage: hack/k8s-binaries.sh [component ...]   (default: kube-apiserver etcd kubectl, what envtest suites use)
# Components: kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl etcd
# (kubectl is built here too, so tests that drive kubectl against envtest never depend on the
# machine's own kubectl or its version.)
# The directory is printed on stdout; progress goes to stderr.
set -euo pipefail

# K8S_VERSION and ETCD_VERSION come from hack/versions.env unless set in the environment.
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
CACHE_ROOT="${MAO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memory-adapter-operator}"
BIN_DIR="$CACHE_ROOT/k8s/${K8S_VERSION}-etcd-${ETCD_VERSION}"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"

components=("$@")
[ ${#components[@]} -eq 0 ] && components=(kube-apiserver etcd kubectl)

log() { printf '[k8s-binaries] %s\n' "$*" >&2; }

missing=()
for c in "${components[@]}"; do
  case "$c" in
    kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kube-proxy|kubectl|etcd) ;;
    *) log "unknown component: $c"; exit 2 ;;
  esac
  [ -x "$BIN_DIR/$c" ] || missing+=("$c")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "$BIN_DIR"
  exit 0
fi

mkdir -p "$BIN_DIR" "$CACHE_ROOT/build"
# One builder at a time: envtest and cluster-up may ask concurrently.
exec 9>"$CACHE_ROOT/build/.lock"
flock 9

build_k8s() {
  local wrap="$CACHE_ROOT/build/kubernetes-$K8S_VERSION"
  mkdir -p "$wrap"
  if [ ! -f "$wrap/go.sum" ]; then
    log "preparing wrapper module for k8s.io/kubernetes $K8S_VERSION"
    local gomod
    gomod=$(cd "$wrap" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    {
      echo "module mao.local/k8sbuild"
      echo
      echo "go $(sed -n 's/^go \(.*\)/\1/p' "$gomod")"
      echo
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo
      echo "replace ("
      sed -n '/^replace (/,/^)/p' "$gomod" | sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\t\1 => \1 '"$STAGING_VERSION"'#p'
      echo ")"
    } >"$wrap/go.mod"
    cat >"$wrap/tools.go" <<'GO'
//go:build tools

package k8sbuild

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
    (cd "$wrap" && GOFLAGS=-mod=mod go mod tidy -e >&2)
  fi
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ldflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  local c="$1"
  log "building $c $K8S_VERSION from the Go module proxy (the first kube-apiserver takes ~10 minutes on 2 cores; later builds reuse the Go build cache)"
  (cd "$wrap" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$BIN_DIR/.$c.tmp" "k8s.io/kubernetes/cmd/$c")
  mv "$BIN_DIR/.$c.tmp" "$BIN_DIR/$c"
}

build_etcd() {
  local wrap="$CACHE_ROOT/build/etcd-$ETCD_VERSION"
  mkdir -p "$wrap"
  if [ ! -f "$wrap/go.sum" ]; then
    log "preparing wrapper module for etcd $ETCD_VERSION"
    cat >"$wrap/go.mod" <<GOMOD
module mao.local/etcdbuild

go 1.26

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
GOMOD
    cat >"$wrap/tools.go" <<'GO'
//go:build tools

package etcdbuild

import _ "go.etcd.io/etcd/server/v3"
GO
    (cd "$wrap" && GOFLAGS=-mod=mod go mod tidy -e >&2)
  fi
  log "building etcd $ETCD_VERSION from the Go module proxy (~2 minutes)"
  (cd "$wrap" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$BIN_DIR/.etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$BIN_DIR/.etcd.tmp" "$BIN_DIR/etcd"
}

for c in "${missing[@]}"; do
  [ -x "$BIN_DIR/$c" ] && continue # built by a concurrent caller while we waited for the lock
  if [ "$c" = etcd ]; then build_etcd; else build_k8s "$c"; fi
  log "built $BIN_DIR/$c"
done
echo "$BIN_DIR"
