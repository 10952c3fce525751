#!/usr/bin/env bash
# The verify stage of `make ci`: fails when `make manifests generate` changes any generated
# file (CRDs, RBAC, webhook configuration, zz_generated DeepCopy code, the API reference in
# docs/reference), and when a Go file is
# not gofmt-clean. It compares content before and after instead of asking git, so it also
# works in a tree with unrelated uncommitted edits.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

snapshot() {
  {
    for d in config/crd config/rbac config/webhook docs/reference; do
      [ -d "$d" ] && find "$d" -type f
    done
    find . \( -path ./bin -o -path ./.git \) -prune -o -name 'zz_generated.*.go' -type f -print
  } | sed 's#^\./##' | sort | while read -r f; do sha256sum "$f"; done
}

before="$(snapshot)"
make --no-print-directory manifests generate
after="$(snapshot)"
if [ "$before" != "$after" ]; then
  echo "FAIL: generated files are stale; run 'make manifests generate' and commit the result:" >&2
  diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") >&2 || true
  exit 1
fi
echo "generated files are current"

mapfile -t unformatted < <(
  find . \( -path ./bin -o -path ./.git -o -name testdata -o -name vendor \) -prune -o -name '*.go' -type f -print |
    xargs -r gofmt -l
)
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "FAIL: not gofmt-clean (run 'make fmt'):" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
echo "Go sources are gofmt-clean"
