#!/usr/bin/env bash
# The test stage of `make ci`: envtest assets, the alert rules under promtool, go vet, every
# package's tests under the race detector, then every fuzz target for a short run. It does all its own set-up, so it works on a
# fresh machine with only Go installed.
#
# Every step that can take longer than a few seconds runs under heartbeat_run
# (hack/lib/heartbeat.sh): it says what it is doing and how long that usually takes, and prints
# the elapsed time every 30 seconds, so no part of the stage is silent for long.
#
# Environment:
#   KUBEBUILDER_ASSETS  use these envtest binaries instead of building them (standard envtest).
#   FUZZTIME            how much each fuzz target runs: an iteration count (default 10000x; see
#                       the fuzz section for why a count and not a duration), or a duration
#                       such as 5m for a longer exploratory run by hand, where the Go 1.26
#                       engine race described there can still end it with a false failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/lib/heartbeat.sh
. hack/lib/heartbeat.sh
# shellcheck source=hack/estimates.sh
. hack/estimates.sh

FUZZTIME="${FUZZTIME:-10000x}"
# The envtest suites are Ginkgo suites, and Ginkgo colours its report unless told not to: a log
# or a pipe gets plain text.
[ -t 1 ] || export GINKGO_NO_COLOR=TRUE

section() { printf '\n==== %s ====\n' "$*"; }

section "envtest assets"
if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  echo "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS (already set)"
else
  # Built from the Go module proxy on first use (EST_K8S_ENVTEST), then cached by version.
  KUBEBUILDER_ASSETS="$(hack/k8s-binaries.sh kube-apiserver etcd kubectl)"
  export KUBEBUILDER_ASSETS
  echo "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
fi
# kubectl is built beside them: the API suite runs `kubectl explain` and `kubectl get` against
# envtest, and must not depend on whatever kubectl a machine happens to have.
for bin in kube-apiserver etcd kubectl; do
  if [ ! -x "$KUBEBUILDER_ASSETS/$bin" ]; then
    echo "FAIL: $KUBEBUILDER_ASSETS/$bin is missing or not executable" >&2
    exit 1
  fi
done

section "backend server packages"
# The live PostgreSQL and Redis tests start their own throwaway servers, and the test packages
# run in parallel: install the packages once, first (hack/install-backends.sh says why).
hack/install-backends.sh
work_dir=$(mktemp -d /tmp/mao-test.XXXXXX)
trap 'rm -rf "$work_dir"' EXIT

section "alert rules (promtool test rules)"
# The shipped rules (config/prometheus/alerts.rules.yaml) against recorded series, firing and
# not firing (test/prometheus/alerts_test.yaml). promtool is Debian's, fetched on first use by
# hack/prometheus-bin.sh; if it cannot be had, that script fails and so does this stage.
prom_bin=$(hack/prometheus-bin.sh)
"$prom_bin/promtool" check rules config/prometheus/alerts.rules.yaml
"$prom_bin/promtool" test rules test/prometheus/alerts_test.yaml

section "Helm chart (helm lint, helm template)"
# charts/memory-adapter-operator with its defaults and with every optional part switched on
# (ci/all-on-values.yaml): lint in strict mode, then render, so a template that fails only
# with some values fails here. helm is built from the Go module proxy by hack/helm.sh and
# cached by version. test/chart (in go test below) compares the chart's rendering with
# hack/render-install.sh's, object by object.
helm_bin=$(hack/helm.sh)
for values in "" charts/memory-adapter-operator/ci/all-on-values.yaml; do
  helm_args=()
  [ -z "$values" ] || helm_args=(--values "$values")
  "$helm_bin" lint --strict charts/memory-adapter-operator "${helm_args[@]}"
  "$helm_bin" template memory-adapter-operator charts/memory-adapter-operator \
    --namespace memory-adapter-operator-system "${helm_args[@]}" >/dev/null
done

# The contract (api/memory) and the suite (conformance) are modules of their own, which the
# operator's module uses through replace lines: `./...` stops at a module boundary, so their
# packages are named by import path. Built from here they are vetted and tested with exactly
# the sources in this checkout; test/contract builds them on their own go.mod as well.
module=$(go list -m)
mapfile -t contract_pkgs < <(go list "$module/api/memory/..." "$module/conformance/...")

section "go vet ./... and the contract modules"
heartbeat_run -v vetting -e "$EST_VET" "go vet" go vet ./... "${contract_pkgs[@]}"
# The opt-in scale runs (docs/performance.md) are behind build tags no other stage builds: vet
# compiles them, so one that stopped building fails here instead of on the day it is run.
go vet -tags scalebench ./adapters/...
go vet -tags scale ./internal/controller/...

section "both binaries cross-compiled for linux/arm64"
# Releases and make docker-buildx ship arm64 binaries that no test here runs: building them
# catches code that compiles on amd64 only (a build-tagged file, assembly, a dependency without
# an arm64 port) before a release does. Built and linked, then discarded (-o /dev/null); the
# go build cache keeps the arm64 packages, so after the first run only what changed compiles,
# and -trimpath, as hack/release.sh builds, lets make release reuse them.
heartbeat_run -v cross-compiling -e "$EST_CROSS_ARM64" "linux/arm64 binaries" \
  env GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -o /dev/null ./cmd ./cmd/memory-adapter

section "go test -race ./... and the contract modules"
# One `go test` over the whole module, not one run per package group: go test builds and runs
# up to GOMAXPROCS packages at a time and overlaps building later packages with testing
# earlier ones; run group by group, every group would wait for its slowest package (the
# envtest suite, a live backend) with a core idle before the next group even starts building.
# (Not timed against each other: during issue 15 the shared machine ran at load 11-31, too
# noisy to measure the difference fairly.) go test's own output names each package as it
# finishes; the heartbeat adds how many have finished and which are not yet, so a long
# envtest or live-backend package is never a silent minute.
mapfile -t test_pkgs < <(go list ./... "${contract_pkgs[@]}")
test_log="$work_dir/go-test.log"
: >"$test_log"
go_test_status() {
  local -A finished=()
  local p pending=()
  # go test prints "ok", "FAIL" or "?" and then the package path when a package is done.
  while read -r p; do finished[$p]=1; done < <(awk '($1 == "ok" || $1 == "FAIL" || $1 == "?") && $2 != "" { print $2 }' "$test_log")
  for p in "${test_pkgs[@]}"; do
    [ -n "${finished[$p]:-}" ] || pending+=("${p#"$module"/}")
  done
  # go test reports packages in this order while building and running up to GOMAXPROCS at a
  # time, so the first unreported package is the one being waited for; the first three are
  # named and the rest only counted, to keep the line short.
  local shown="${pending[*]:0:3}"
  [ ${#pending[@]} -gt 3 ] && shown+=" (+$((${#pending[@]} - 3)) more)"
  printf '%d/%d packages finished; not finished: %s' \
    $((${#test_pkgs[@]} - ${#pending[@]})) "${#test_pkgs[@]}" "${shown:-none}"
}
# Tests run in a shuffled order, so one that depends on another having run first fails here
# and not only when run alone. The seed is printed; SHUFFLE=<seed> repeats an order exactly.
shuffle_seed=${SHUFFLE:-$(( $(date +%s) % 1000000007 ))}
printf '[test] go test -shuffle=%s (rerun this order with SHUFFLE=%s make test)\n' "$shuffle_seed" "$shuffle_seed"
go_test_race() {
  # -timeout 30m: go test's default 10 minutes per package binary is a latency bound, and the
  # exhaustive CEL/Go parity sweep of api/v1alpha1 under -race has come close to it on a
  # loaded 2-core machine; a hang still fails, later.
  go test -race -count=1 -shuffle="$shuffle_seed" -timeout 30m ./... "${contract_pkgs[@]}" 2>&1 | tee "$test_log"
}
heartbeat_run -v testing -e "$EST_TEST_RACE" -s go_test_status "go test -race" go_test_race

section "fuzz targets (-fuzztime=${FUZZTIME} each)"
# Why an iteration count and not a duration: with a duration, Go's fuzzing coordinator
# (internal/fuzz.CoordinateFuzzing, Go 1.26) wraps its context in context.WithTimeout and
# derives the workers' context from it. When the timer fires, context closes the parent's
# Done channel before it cancels the child; if the coordinator's loop wakes in between, its
# check `err == fuzzCtx.Err()` compares DeadlineExceeded with nil, keeps the error, and
# testing reports `--- FAIL: FuzzXxx ... context deadline exceeded` with no failing input:
# an engine race, not a finding (issue 15). With `-fuzztime=Nx` there is no timer at all: the
# coordinator stops itself with stop(nil) once N calls are done, and the only remaining
# context is the ^C one. A count also makes the amount of fuzzing the same on a slow or busy
# machine instead of shrinking with it. The other option, a fixed toolchain: Go 1.27.4's
# coordinator also accepts ctx.Err() there (go.dev/issue/75804), but the newest 1.26 release,
# 1.26.11, has the same code as the 1.26.8 we run; moving the module and every machine to Go
# 1.27 is a larger change than a flag, and a count is the better CI setting anyway.
#
# 10000 calls per target, measured on this 2-core machine while it was busy (load 12-13):
# FuzzManifestConversion, the slowest, 14 s; FuzzResponses 6 s; FuzzItemDecode 2 s. The old
# 10 s per target gave the slowest targets about as many calls (9,000-15,000 under the same
# load) and the fast decoders 100,000+; the count keeps the slow ones' depth, spends seconds
# rather than 10 s on the fast ones, and makes no run depend on machine speed.
#
# Discover targets instead of listing them, so that fuzz targets added later run too. A file
# may hold several targets; -fuzz must match exactly one, hence the anchored pattern.
mapfile -t targets < <(
  grep -rE --include='*_test.go' --exclude-dir=bin --exclude-dir=.git --exclude-dir=testdata \
    -o '^func Fuzz[A-Za-z0-9_]*\(' . |
    sed -E 's#^\./##; s#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#; s#^[^/ ]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#. \1#' |
    sort -u
)
if [ ${#targets[@]} -eq 0 ]; then
  echo "FAIL: no fuzz targets found; the api/memory decoders must have at least one" >&2
  exit 1
fi
for t in "${targets[@]}"; do
  dir="${t% *}"
  name="${t#* }"
  # The first target in a package also compiles it and everything it imports with fuzzing
  # instrumentation: on the busy machine above that took 5.6 min for api/v1alpha1 (it imports
  # the Kubernetes API packages), 2 min for adapters/redis, under a minute for the others.
  heartbeat_run -v fuzzing -e "$EST_FUZZ" "$name in ./$dir" \
    go -C "$dir" test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" .
done

section "all tests passed"
