#!/usr/bin/env bash
# Runs adapters/remote's BenchmarkWireInterleaved COUNT times (direct, wire and floor arms
# interleaved in blocks within one loop) and prints, per operation and metric, the median, min
# and max over the runs as markdown rows; then BenchmarkWireArms once for each arm's exact
# B/op and allocs/op. Wall-clock figures on a shared machine move with load, which is why
# the arms are interleaved and why a median of several runs is reported, never one run.
#
# usage: hack/perf/wire.sh [COUNT] [BENCHTIME]   (defaults 5 and 6000x: 2,000 calls per arm)
# env:   BIN, a test binary of adapters/remote to run instead of building the tree's
set -euo pipefail
count=${1:-5} benchtime=${2:-6000x}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${BIN:-}" ]; then
	cp "$BIN" "$tmp/remote.test" # a test binary built elsewhere, e.g. of an earlier commit
else
	go test -c -o "$tmp/remote.test" ./adapters/remote/
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$tmp/remote.test" -test.run '^$' -test.bench '^BenchmarkWireInterleaved$' \
	-test.benchtime "$benchtime" -test.count "$count" | tee "$tmp/interleaved.txt" >&2
echo
echo "| op | metric | median | min | max |"
echo "|---|---|---:|---:|---:|"
# Each result line is: name iterations ns/op value unit value unit ...
awk '/^BenchmarkWireInterleaved\// {
	split($1, p, "/"); op = p[2]; sub(/-[0-9]+$/, "", op)
	for (i = 5; i < NF; i += 2) { key = op SUBSEP $(i + 1); v[key] = v[key] " " $i; seen[key] = 1 }
}
END {
	for (key in seen) {
		n = split(substr(v[key], 2), a, " ")
		# insertion sort: at most a few dozen values
		for (i = 2; i <= n; i++) { x = a[i]; j = i - 1; while (j > 0 && a[j] + 0 > x + 0) { a[j + 1] = a[j]; j-- }; a[j + 1] = x }
		med = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		split(key, k, SUBSEP)
		printf "| %s | %s | %.3g | %.3g | %.3g |\n", k[1], k[2], med, a[1], a[n]
	}
}' "$tmp/interleaved.txt" | sort
echo
echo "| arm | ns/op | B/op | allocs/op |"
echo "|---|---:|---:|---:|"
"$tmp/remote.test" -test.run '^$' -test.bench '^BenchmarkWireArms$' -test.benchtime "$benchtime" |
	awk '/^BenchmarkWireArms\// { n = $1; sub(/^BenchmarkWireArms\//, "", n); sub(/-[0-9]+$/, "", n); printf "| %s | %s | %s | %s |\n", n, $3, $5, $7 }'
