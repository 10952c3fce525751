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
#
# All missing Kubernetes components are built by one `go build` (one package graph), and etcd,
# a separate module, is built at the same time; see "Build order and parallelism" in
# docs/local-cluster.md for why and for the measurements. Every build runs under heartbeat_run
# (hack/lib/heartbeat.sh), so a cold build says what it builds, how long that takes on 2 cores,
# and that it is still alive every 30 seconds.
set -euo pipefail
# shellcheck source=hack/lib/heartbeat.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/heartbeat.sh"

# K8S_VERSION and ETCD_VERSION come from hack/versions.env unless set in the environment.
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
# shellcheck source=hack/estimates.sh
. "$(dirname "${BASH_SOURCE[0]}")/estimates.sh"
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

# expected_cold COMPONENT...: the cold build time on 2 cores of the Kubernetes components being
# built together, for the heartbeat's first line; the figures and their measurements are in
# hack/estimates.sh (one place for every estimate).
EXPECTED_COLD_NOTE="seconds once built: the Go build cache keeps every compiled package"
expected_cold() {
  local c api=false node=false
  for c in "$@"; do
    case "$c" in
      kube-apiserver | kubectl) api=true ;;
      *) node=true ;;
    esac
  done
  if $api && $node; then
    echo "$EST_K8S_ALL"
  elif $api; then
    echo "$EST_K8S_ENVTEST"
  else
    echo "$EST_K8S_NODE"
  fi
}

mkdir -p "$BIN_DIR" "$CACHE_ROOT/build"
# One builder at a time: envtest and cluster-up may ask concurrently. Waiting for the other
# builder can take as long as its build, so that wait gets a heartbeat too.
exec 9>"$CACHE_ROOT/build/.lock"
if ! flock -n 9; then
  heartbeat_run -v "waiting for another build of the Kubernetes binaries to finish" \
    -e "up to its build time; lock $CACHE_ROOT/build/.lock" k8s-binaries flock 9
fi

build_k8s() {
  local wrap="$CACHE_ROOT/build/kubernetes-$K8S_VERSION"
  mkdir -p "$wrap"
  if [ ! -f "$wrap/go.sum" ]; then
    log "preparing wrapper module for k8s.io/kubernetes $K8S_VERSION"
    local gomod
    # The module is large and its output is captured, so the download gets a heartbeat too
    # (on stderr; only the JSON goes to sed).
    gomod=$(heartbeat_run -v downloading -e "$EST_K8S_DOWNLOAD" "k8s.io/kubernetes@$K8S_VERSION" \
      env GOFLAGS=-mod=mod go -C "$wrap" mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
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
    heartbeat_run -v "resolving modules" -e "$EST_K8S_MODULES" "kubernetes $K8S_VERSION module" \
      env GOFLAGS=-mod=mod go -C "$wrap" mod tidy -e >&2
  fi
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ldflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  # One `go build` for every missing component: one package graph, so both cores stay busy
  # across what the components share and what they do not, and one component's link runs
  # while another's packages still compile. -o DIR/ writes each binary into DIR as soon as it
  # is linked. -s -w: no symbol table and DWARF; nobody debugs these binaries, and writing
  # DWARF is a large part of each link.
  local out="$BIN_DIR/.build"
  rm -rf "$out"
  mkdir -p "$out"
  local pkgs=() c
  for c in "$@"; do
    pkgs+=("k8s.io/kubernetes/cmd/$c")
  done
  # With one component the heartbeat's name already says everything k8s_status would.
  local status=()
  [ $# -gt 1 ] && status=(-s k8s_status)
  K8S_OUT="$out" K8S_START=$(date +%s) heartbeat_run -v building "${status[@]}" \
    -e "$(expected_cold "$@"); $EXPECTED_COLD_NOTE" "$*" \
    env CGO_ENABLED=0 GOFLAGS=-mod=mod go -C "$wrap" build -trimpath -ldflags "-s -w $ldflags" -o "$out/" "${pkgs[@]}"
  for c in "$@"; do
    mv "$out/$c" "$BIN_DIR/$c"
    log "built $BIN_DIR/$c"
  done
  rmdir "$out"
}

# k8s_status: for the heartbeat of the combined build, which components are linked already
# (and when) and which are still compiling or linking.
k8s_status() {
  local c done_list="" pending=""
  for c in "${k8s_missing[@]}"; do
    if [ -x "$K8S_OUT/$c" ]; then
      done_list+="${done_list:+, }$c at $(heartbeat_fmt $(($(stat -c %Y "$K8S_OUT/$c") - K8S_START)))"
    else
      pending+="${pending:+, }$c"
    fi
  done
  printf 'linked: %s; compiling or linking: %s' "${done_list:-none yet}" "${pending:-none}"
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
    heartbeat_run -v "resolving modules" -e "$EST_K8S_MODULES" "etcd $ETCD_VERSION module" \
      env GOFLAGS=-mod=mod go -C "$wrap" mod tidy -e >&2
  fi
  heartbeat_run -v building -e "$EST_K8S_ETCD" etcd \
    env CGO_ENABLED=0 GOFLAGS=-mod=mod go -C "$wrap" build -trimpath -ldflags "-s -w" -o "$BIN_DIR/.etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$BIN_DIR/.etcd.tmp" "$BIN_DIR/etcd"
  log "built $BIN_DIR/etcd"
}

# Another caller may have built some of them while we waited for the lock. The Kubernetes
# components go to `go build` largest first, whatever order they were asked in: go build
# prefers the packages of earlier command-line arguments among those ready to compile, so the
# longest chain (kube-apiserver's) starts first and the smaller ones fill in around it.
k8s_missing=()
etcd_missing=false
for c in etcd kube-apiserver kube-controller-manager kubelet kubectl kube-proxy kube-scheduler; do
  [[ " ${missing[*]} " == *" $c "* ]] || continue
  [ -x "$BIN_DIR/$c" ] && continue
  if [ "$c" = etcd ]; then etcd_missing=true; else k8s_missing+=("$c"); fi
done

# etcd shares no packages with Kubernetes' graph worth waiting for, so it builds at the same
# time: its compile jobs fill the moments when the Kubernetes build runs fewer jobs than there
# are cores (long single packages, the links). Both builds run in background subshells so each
# keeps `set -e`; every heartbeat line names its component, so the interleaving stays readable.
pids=()
names=()
if $etcd_missing; then
  build_etcd &
  pids+=($!)
  names+=(etcd)
fi
if [ ${#k8s_missing[@]} -gt 0 ]; then
  build_k8s "${k8s_missing[@]}" &
  pids+=($!)
  names+=("${k8s_missing[*]}")
fi
# Wait for all of them even after a failure, so no build is left running behind the lock.
failed=()
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done
if [ ${#failed[@]} -gt 0 ]; then
  log "FAILED to build: ${failed[*]}"
  exit 1
fi
echo "$BIN_DIR"
