#!/usr/bin/env bash
# Brings up (or reuses) the local single-node cluster: installs containerd, runc and the CNI
# plugins with apt when missing, builds the Kubernetes binaries and kubectl from the Go
# module proxy when missing (cached by version outside the checkout, shared with envtest),
# builds CoreDNS and local-path-provisioner, fetches Debian's busybox-static, images them and
# the pause program with hack/images, then runs hack/cluster (Go) to start and wait for every
# component. Every version comes from hack/versions.env.
# Prints "export KUBECONFIG=..." on stdout; progress goes to stderr. Idempotent.
#
# Env: MAO_CLUSTER_DIR (state, default /var/tmp/mao-cluster), MAO_NODE_IP (default: the
#      default route's source address), MAO_CACHE_DIR (see hack/k8s-binaries.sh), and any
#      key of hack/versions.env to override it for one run.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
# shellcheck source=hack/estimates.sh
. hack/estimates.sh

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
command -v nsenter >/dev/null && command -v unshare >/dev/null || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]} with apt"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${need[@]}" >&2
fi

# 2. Kubernetes binaries (hack/k8s-binaries.sh builds only what is missing, under a lock).
# kubectl is not needed by the cluster itself; it is there for people using the cluster.
log "ensuring Kubernetes binaries (built once, cached afterwards; each build says what it expects)"
BIN_DIR=$(hack/k8s-binaries.sh etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
echo "$BIN_DIR" >"$MAO_CLUSTER_DIR/bin-dir"

# 3. Third-party Go programs the cluster runs as pods, built from the Go module proxy once
# and cached by version: CoreDNS (cluster DNS) and Rancher's local-path-provisioner (the
# default StorageClass). go_program NAME MODULE VERSION EXPECTED [LDFLAGS] prints the cached binary's
# path; LDFLAGS are extra -X settings a program's release build would make.
CACHE_ROOT="${MAO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memory-adapter-operator}"
# shellcheck source=hack/lib/heartbeat.sh
. hack/lib/heartbeat.sh
# go_program builds module's main package at version into the cache, once. MAIN, when set,
# names a function that writes the wrapper's main package itself (go.mod and main.go in the
# directory it is given), and the build then compiles that package instead.
go_program() {
  local name=$1 module=$2 version=$3 expected=$4 ldflags=${5:-} variant=${MAIN:-}
  local key=$version${variant:+-$variant}${MAIN_KEY:+-$MAIN_KEY}
  local bin="$CACHE_ROOT/$name/$key/$name"
  if [ ! -x "$bin" ]; then
    mkdir -p "$(dirname "$bin")" "$CACHE_ROOT/build"
    (
      # The same lock as hack/k8s-binaries.sh: one large build at a time on small machines.
      exec 9>"$CACHE_ROOT/build/.lock"
      flock 9
      if [ ! -x "$bin" ]; then
        local wrap="$CACHE_ROOT/build/$name-$key" mod="mao.local/${name//-/}build" target=$module
        mkdir -p "$wrap"
        if [ ! -f "$wrap/go.sum" ]; then
          # A wrapper module: the program's own go.mod decides its dependencies' versions.
          printf 'module %s\n\ngo 1.26\n\nrequire %s %s\n' "$mod" "$module" "$version" >"$wrap/go.mod"
          if [ -n "$variant" ]; then
            "$variant" "$wrap" "$version"
          else
            printf '//go:build tools\n\npackage %s\n\nimport _ "%s"\n' "${name//-/}build" "$module" >"$wrap/tools.go"
          fi
          (cd "$wrap" && GOFLAGS=-mod=mod go mod tidy -e >&2)
        fi
        [ -z "$variant" ] || target=.
        heartbeat_run -v building -e "$expected, once; from the Go module proxy" "$name $version${variant:+ ($variant)}" \
          env -C "$wrap" CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w $ldflags" -o "$bin.tmp" "$target" >&2
        mv "$bin.tmp" "$bin"
      fi
    )
  fi
  echo "$bin"
}
# CoreDNS with only the plugins the cluster's Corefile uses (hack/cluster/dns.go; a test there
# keeps the two in step), in CoreDNS's own directive order (its plugin.cfg). CoreDNS supports
# such builds: a main that imports coremain and the chosen plugin packages and sets
# dnsserver.Directives. The full build also compiles the cloud DNS providers (AWS, Azure,
# Google), etcd, dnstap, geoip and more that this cluster never loads.
COREDNS_PLUGINS="reload ready health errors loadbalance cache kubernetes forward"
cluster() {
  local wrap=$1 version=$2 p directives=""
  {
    printf '// Command coredns is CoreDNS %s with the plugins of the local cluster only.\n' "$version"
    printf 'package main\n\nimport (\n\t"github.com/coredns/coredns/core/dnsserver"\n\t"github.com/coredns/coredns/coremain"\n\n'
    for p in $COREDNS_PLUGINS; do printf '\t_ "github.com/coredns/coredns/plugin/%s"\n' "$p"; done
    printf ')\n\nfunc init() {\n\tdnsserver.Directives = []string{'
    for p in $COREDNS_PLUGINS; do directives+="\"$p\", "; done
    printf '%s}\n}\n\nfunc main() { coremain.Run() }\n' "${directives%, }"
  } >"$wrap/main.go"
}
COREDNS_BIN=$(MAIN=cluster go_program coredns github.com/coredns/coredns "$COREDNS_VERSION" "$EST_COREDNS" \
  "-X github.com/coredns/coredns/coremain.GitCommit=cluster")
# Its release build stamps the tag into main.VERSION (--version); otherwise it says 0.0.1.
LOCAL_PATH_BIN=$(go_program local-path-provisioner github.com/rancher/local-path-provisioner "$LOCAL_PATH_PROVISIONER_VERSION" "$EST_LOCAL_PATH" \
  "-X main.VERSION=$LOCAL_PATH_PROVISIONER_VERSION")

# The NetworkPolicy agent: kube-network-policies's controller package behind our main
# (hack/cluster/netpolagent/main.go: a kubeconfig instead of in-cluster credentials, and the
# -cleanup/-check-clean of its nftables table). Keyed by that file's hash too, so an edit
# rebuilds. The tool runs it from the state directory, where down finds it without flags.
NETPOL_MAIN=hack/cluster/netpolagent/main.go
netpolagent() { grep -v '^//go:build ignore$' "$NETPOL_MAIN" >"$1/main.go"; }
NETPOL_BIN=$(MAIN=netpolagent MAIN_KEY=$(sha256sum "$NETPOL_MAIN" | cut -c1-12) go_program kube-network-policies \
  sigs.k8s.io/kube-network-policies "$KUBE_NETWORK_POLICIES_VERSION" "$EST_NETPOL_AGENT")
install -m 0755 "$NETPOL_BIN" "$MAO_CLUSTER_DIR/tools/kube-network-policies"

# 4. The provisioner's helper pods run /bin/sh scripts (mkdir, rm) on the node's disk, so their
# image needs a real shell: Debian's busybox-static, a single static binary. The package is
# downloaded and unpacked into the cache, not installed, so the host's own /bin (and a host
# busybox package, which conflicts with busybox-static) stay untouched.
BUSYBOX_BIN="$CACHE_ROOT/busybox/$BUSYBOX_VERSION/busybox"
if [ ! -x "$BUSYBOX_BIN" ]; then
  log "fetching Debian's busybox-static (for the local-path-provisioner helper image)"
  bb_tmp=$(mktemp -d)
  if ! (cd "$bb_tmp" && apt-get download busybox-static >&2 2>/dev/null); then
    apt-get update -qq >&2
    (cd "$bb_tmp" && apt-get download busybox-static >&2)
  fi
  dpkg-deb -x "$bb_tmp"/busybox-static_*.deb "$bb_tmp/root"
  got=$("$bb_tmp/root/bin/busybox" 2>/dev/null | head -n 1 || true)
  case "$got" in
    "BusyBox v$BUSYBOX_VERSION "*) ;;
    *)
      rm -rf "$bb_tmp"
      log "Debian's busybox-static reports '$got', not v$BUSYBOX_VERSION: set BUSYBOX_VERSION in hack/versions.env to the version apt offers"
      exit 1
      ;;
  esac
  mkdir -p "$(dirname "$BUSYBOX_BIN")"
  install -m 0755 "$bb_tmp/root/bin/busybox" "$BUSYBOX_BIN"
  rm -rf "$bb_tmp"
fi
# Every applet at its usual path (/bin/sh, /bin/mkdir, /usr/bin/env, ...), as in a busybox image.
BUSYBOX_LINKS=$("$BUSYBOX_BIN" --list-full | sed 's#^#/#' | paste -sd, -)

# 5. The cluster tool, and the images every cluster needs (there is no registry to pull them
# from): the pod sandbox (pause), CoreDNS, the provisioner and its helper.
COREDNS_IMAGE="registry.k8s.io/coredns/coredns:$COREDNS_VERSION"
LOCAL_PATH_IMAGE="docker.io/rancher/local-path-provisioner:$LOCAL_PATH_PROVISIONER_VERSION"
# Not busybox's own image (Docker Hub's is built differently): our name for Debian's binary.
LOCAL_PATH_HELPER_IMAGE="mao.local/busybox-static:$BUSYBOX_VERSION"
go build -o "$MAO_CLUSTER_DIR/tools/cluster" ./hack/cluster
go build -o "$MAO_CLUSTER_DIR/tools/images" ./hack/images
"$MAO_CLUSTER_DIR/tools/images" -out "$MAO_CLUSTER_DIR/images" \
  "$PAUSE_IMAGE=./hack/images/pause:/pause:65535" \
  "$COREDNS_IMAGE=@$COREDNS_BIN:/coredns" \
  "$LOCAL_PATH_IMAGE=@$LOCAL_PATH_BIN:/usr/bin/local-path-provisioner" \
  "$LOCAL_PATH_HELPER_IMAGE=@$BUSYBOX_BIN:/bin/busybox::$BUSYBOX_LINKS"
tarball() { printf '%s/images/%s.tar' "$MAO_CLUSTER_DIR" "$(printf '%s' "$1" | tr '/:' '__')"; }

# 6. Start or reuse every component.
"$MAO_CLUSTER_DIR/tools/cluster" -bin-dir "$BIN_DIR" \
  -pause-image "$PAUSE_IMAGE" -coredns-image "$COREDNS_IMAGE" \
  -local-path-image "$LOCAL_PATH_IMAGE" -local-path-helper-image "$LOCAL_PATH_HELPER_IMAGE" \
  -import "$(tarball "$PAUSE_IMAGE"):$(tarball "$COREDNS_IMAGE"):$(tarball "$LOCAL_PATH_IMAGE"):$(tarball "$LOCAL_PATH_HELPER_IMAGE")" up
log "kubectl: $BIN_DIR/kubectl"
