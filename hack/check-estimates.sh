#!/usr/bin/env bash
# Checks that every time estimate comes from hack/estimates.sh (part of `make verify`):
#   - the README and docs/performance.md quote the two commands' ranges exactly as that file
#     sets them, so the first screen cannot drift from what the scripts print;
#   - no script or Makefile recipe prints a duration of its own: a heartbeat's -e argument or a
#     progress line with a figure such as "~15 minutes" must take it from an EST_ variable.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/estimates.sh
. hack/estimates.sh

fail=0
for doc in README.md docs/performance.md; do
  for v in EST_DEMO_COLD EST_DEMO_WARM EST_CI_COLD EST_CI_WARM; do
    if ! grep -qF -- "${!v}" "$doc"; then
      printf 'check-estimates: %s does not quote %s ("%s" in hack/estimates.sh)\n' "$doc" "$v" "${!v}" >&2
      fail=1
    fi
  done
done

# Code lines (comments dropped) of the scripts and the Makefile that print a duration written
# into the line itself: a heartbeat's expected time, or a log line such as "takes ~15 minutes".
scripts=(Makefile hack/*.sh hack/lib/*.sh hack/perf/*.sh)
while IFS= read -r hit; do
  printf 'check-estimates: a duration not from hack/estimates.sh: %s\n' "$hit" >&2
  fail=1
done < <(
  for f in "${scripts[@]}"; do
    [ "$f" = hack/estimates.sh ] && continue
    grep -nHP -- '^(?!\s*#).*(-e "[^"$]*\b\d+(\.\d+)?(-\d+(\.\d+)?)? ?(s|min|minutes)\b|\b(takes|expected|about) ~?\d+(-\d+)? ?(min|minutes)\b)' "$f" || true
  done
)

if [ "$fail" != 0 ]; then
  echo "check-estimates: every estimate lives in hack/estimates.sh; see docs/performance.md (Build, test and demo times)" >&2
  exit 1
fi
echo "check-estimates: the README, docs/performance.md and every heartbeat take their times from hack/estimates.sh"
