#!/usr/bin/env bash
# The test stage of `make ci`: envtest assets, go vet, every package's tests under the race
# detector, then every fuzz target for a short run. It does all its own set-up, so it works on a
# fresh machine with only Go installed.
#
# Environment:
#   KUBEBUILDER_ASSETS  use these envtest binaries instead of building them (standard envtest).
#   FUZZTIME            how long each fuzz target runs (default 10s).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

FUZZTIME="${FUZZTIME:-10s}"

section() { printf '\n==== %s ====\n' "$*"; }

section "envtest assets"
if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  echo "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS (already set)"
else
  # Built from the Go module proxy on first use (~10-15 minutes), then cached by version.
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
# run in parallel. On a fresh machine each would install the Debian package itself, and two
# concurrent apt-get runs fight over dpkg's lock; so install them once, here, by starting and
# stopping one server of each through the same scripts the tests use.
probe_dir=$(mktemp -d /tmp/mao-probe.XXXXXX)
chmod 755 "$probe_dir"
trap 'rm -rf "$probe_dir"' EXIT
hack/postgres-server.sh start "$probe_dir/pg" >/dev/null
hack/postgres-server.sh stop "$probe_dir/pg"
hack/redis-server.sh start "$probe_dir/redis" >/dev/null
hack/redis-server.sh stop "$probe_dir/redis"
echo "postgresql and redis-server are installed"

section "go vet ./..."
go vet ./...

section "go test -race ./..."
go test -race -count=1 ./...

section "fuzz targets (${FUZZTIME} each)"
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
  echo "--- $name in ./$dir"
  go test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "./$dir"
done

section "all tests passed"
