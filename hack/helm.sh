#!/usr/bin/env bash
# Builds helm (HELM_VERSION, from hack/versions.env) from the Go module proxy into the tool
# cache outside the checkout, keyed by version, and prints the binary's path on stdout and
# nothing else there, so `"$(hack/helm.sh)" lint charts/memory-adapter-operator` works.
# Progress goes to stderr.
#
# Why built and not downloaded: get.helm.sh and GitHub are not reachable from our machines;
# the Go module proxy is (the same reason hack/k8s-binaries.sh builds kubectl). Why
# `go install MODULE@VERSION` with GOBIN set: it builds in module-aware mode from helm's own
# go.mod, outside this project's module, so the project's go.mod and go.sum never see helm's
# dependency graph (helm.sh/helm/v4 has no replace directives, which `go install @version`
# would refuse).
#
# The version is stamped into the binary as helm's release Makefile does (-X .../version), so
# `helm version` says v4.x.y rather than the source's "v4.3" placeholder; the chart's
# Chart.yaml does not depend on it, but a bug report will.
set -euo pipefail
hack_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/heartbeat.sh
. "$hack_dir/lib/heartbeat.sh"
# shellcheck source=hack/estimates.sh
. "$hack_dir/estimates.sh"
# HELM_VERSION comes from hack/versions.env unless set in the environment.
# shellcheck source=hack/versions.sh
. "$hack_dir/versions.sh"

log() { printf '[helm.sh] %s\n' "$*" >&2; }

[ -n "${HELM_VERSION:-}" ] || { log "HELM_VERSION is not set (hack/versions.env)"; exit 2; }
module=helm.sh/helm/${HELM_VERSION%%.*}
cache_root="${MAO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memory-adapter-operator}"
dir="$cache_root/helm/$HELM_VERSION"
bin="$dir/helm"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$dir"
# One builder at a time: make test and a release may ask at the same moment, and two go
# installs into one GOBIN would race on the final rename.
exec 9>"$dir/.lock"
if ! flock -n 9; then
  heartbeat_run -v "waiting for another build of helm to finish" -e "up to its build time; lock $dir/.lock" \
    helm flock 9
fi
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

gobin=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$gobin"' EXIT
# GOFLAGS is cleared: a caller's -mod=vendor or -mod=readonly belongs to the caller's module,
# not to helm's. CGO off and -trimpath as helm's release builds; -s -w because nobody debugs
# this binary and the link without DWARF is faster.
heartbeat_run -v building -e "$EST_TOOL_HELM; cached by version in $dir" \
  "$module@$HELM_VERSION" \
  env GOBIN="$gobin" GOFLAGS= CGO_ENABLED=0 go install -trimpath \
  -ldflags "-s -w -X $module/internal/version.version=$HELM_VERSION -X $module/internal/version.gitTreeState=clean" \
  "$module/cmd/helm@$HELM_VERSION" >&2
got=$("$gobin/helm" version --template '{{.Version}}') || { log "the built helm does not run"; exit 1; }
if [ "$got" != "$HELM_VERSION" ]; then
  log "the built helm says it is $got, not $HELM_VERSION"
  exit 1
fi
mv "$gobin/helm" "$bin"
log "built $bin"
echo "$bin"
