#!/usr/bin/env bash
# Brings up (or reuses) the local single-node cluster: installs containerd, runc and the CNI
# plugins with apt when missing, builds the Kubernetes binaries and kubectl from the Go
# module proxy when missing (cached by version outside the checkout, shared with envtest),
# builds CoreDNS and the pause image, then runs hack/cluster (Go) to start and wait for every component.
# Prints "export KUBECONFIG=..." on stdout; progress goes to stderr. Idempotent.
#
# Env: MAO_CLUSTER_DIR (state, default /var/tmp/mao-cluster), MAO_NODE_IP (default: the
#      default route's source address), K8S_VERSION/MAO_CACHE_DIR (see hack/k8s-binaries.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

export MAO_CLUSTER_DIR="${MAO_CLUSTER_DIR:-/var/tmp/mao-cluster}"
log() { printf '[cluster-up] %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ]; then
  log "must run as root (containerd, runc, iptables and mounts need it)"
  exit 1
fi
mkdir -p "$MAO_CLUSTER_DIR/tools" "$MAO_CLUSTER_DIR/images"

# 1. Host packages.
need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
command -v iptables >/dev/null || need+=(iptables)
command -v ip >/dev/null || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]} with apt"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${need[@]}" >&2
fi

# 2. Kubernetes binaries (hack/k8s-binaries.sh builds only what is missing, under a lock).
# kubectl is not needed by the cluster itself; it is there for people using the cluster.
log "ensuring Kubernetes binaries (first build takes ~15 minutes on 2 cores; cached afterwards)"
BIN_DIR=$(hack/k8s-binaries.sh etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
echo "$BIN_DIR" >"$MAO_CLUSTER_DIR/bin-dir"

# 3. CoreDNS for cluster DNS, built from the Go module proxy once and cached by version. The
# version must match corednsImage in hack/cluster/dns.go.
COREDNS_VERSION=v1.15.0
CACHE_ROOT="${MAO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memory-adapter-operator}"
COREDNS_BIN="$CACHE_ROOT/coredns/$COREDNS_VERSION/coredns"
if [ ! -x "$COREDNS_BIN" ]; then
  mkdir -p "$(dirname "$COREDNS_BIN")" "$CACHE_ROOT/build"
  (
    # The same lock as hack/k8s-binaries.sh: one large build at a time on small machines.
    exec 9>"$CACHE_ROOT/build/.lock"
    flock 9
    if [ ! -x "$COREDNS_BIN" ]; then
      log "building CoreDNS $COREDNS_VERSION from the Go module proxy (~5 minutes on 2 cores, once)"
      wrap="$CACHE_ROOT/build/coredns-$COREDNS_VERSION"
      mkdir -p "$wrap"
      if [ ! -f "$wrap/go.sum" ]; then
        printf 'module mao.local/corednsbuild\n\ngo 1.26\n\nrequire github.com/coredns/coredns %s\n' "$COREDNS_VERSION" >"$wrap/go.mod"
        printf '//go:build tools\n\npackage corednsbuild\n\nimport _ "github.com/coredns/coredns"\n' >"$wrap/tools.go"
        (cd "$wrap" && GOFLAGS=-mod=mod go mod tidy -e >&2)
      fi
      (cd "$wrap" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$COREDNS_BIN.tmp" github.com/coredns/coredns >&2)
      mv "$COREDNS_BIN.tmp" "$COREDNS_BIN"
    fi
  )
fi

# 4. The cluster tool, and the images every cluster needs: the pod sandbox (pause) and
# CoreDNS (there is no registry to pull them from).
go build -o "$MAO_CLUSTER_DIR/tools/cluster" ./hack/cluster
go build -o "$MAO_CLUSTER_DIR/tools/images" ./hack/images
"$MAO_CLUSTER_DIR/tools/images" -out "$MAO_CLUSTER_DIR/images" \
  registry.k8s.io/pause:3.10=./hack/images/pause:/pause:65535 \
  "registry.k8s.io/coredns/coredns:$COREDNS_VERSION=@$COREDNS_BIN:/coredns"

# 5. Start or reuse every component.
"$MAO_CLUSTER_DIR/tools/cluster" -bin-dir "$BIN_DIR" \
  -import "$MAO_CLUSTER_DIR/images/registry.k8s.io_pause_3.10.tar:$MAO_CLUSTER_DIR/images/registry.k8s.io_coredns_coredns_$COREDNS_VERSION.tar" up
log "kubectl: $BIN_DIR/kubectl"
