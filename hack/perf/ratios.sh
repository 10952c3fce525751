#!/usr/bin/env bash
# Runs an adapter-vs-driver benchmark (storetest.Interleave's metrics) COUNT times and prints
# one markdown row per sub-benchmark: the median of adapter/driver and adapter/driver-plain
# over the runs with their minimum and maximum, the same for the ratios of the arms' median
# calls (storetest.Interleave's p50 metrics, which a few calls that waited for a core move
# far less than the means), and the median microseconds per call of each arm. The load
# average is printed before and after, since the figures mean little without it on a shared
# machine. The raw `go test` output is kept in RAW (default a temp file) and
# its path printed, so a row can be checked against the runs it came from.
#
# usage: hack/perf/ratios.sh PKG BENCH [BENCHTIME] [COUNT]
#   e.g. hack/perf/ratios.sh ./adapters/sqlite/ 'BenchmarkSQLite/n=1000/' 1000x 5
#        hack/perf/ratios.sh ./adapters/redis/ 'BenchmarkStore/n=1000$' 2000x 5
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 2 ]] || { sed -n '2,11p' "$0" >&2; exit 2; }
pkg=$1 bench=$2 benchtime=${3:-1000x} count=${4:-5}
if ((count < 5)); then
	echo "ratios.sh: COUNT must be at least 5 for a median with a spread" >&2
	exit 2
fi
raw=${RAW:-$(mktemp /tmp/ratios.XXXXXX)}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
go test -run '^$' -bench "$bench" -benchtime "$benchtime" -count "$count" "$pkg" | tee "$raw" >/dev/null || {
	cat "$raw" >&2
	exit 1
}
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "raw output: $raw"
echo
awk -v count="$count" '
function median(s,    n, a, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	lo = a[1]; hi = a[n]; runs = n
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
/^Benchmark/ && /adapter\/driver-plain/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	if (!(name in seen)) { seen[name] = 1; order[++names] = name }
	for (i = 3; i < NF; i += 2) vals[name, $(i+1)] = vals[name, $(i+1)] " " $i
}
END {
	print "| benchmark | adapter/driver (deadline) median [min–max] | adapter/driver-plain median [min–max] | per-call p50: adapter/driver median [min–max] | p50: adapter/driver-plain median [min–max] | adapter µs | driver µs | driver-plain µs | runs |"
	print "|---|---|---|---|---|---:|---:|---:|---:|"
	for (k = 1; k <= names; k++) {
		n = order[k]
		r1 = median(vals[n, "adapter/driver"]); l1 = lo; h1 = hi
		r2 = median(vals[n, "adapter/driver-plain"]); l2 = lo; h2 = hi
		q1 = median(vals[n, "adapter/driver-p50"]); m1 = lo; x1 = hi
		q2 = median(vals[n, "adapter/driver-plain-p50"]); m2 = lo; x2 = hi
		a = median(vals[n, "adapter-ns/op"]) / 1000
		d = median(vals[n, "driver-ns/op"]) / 1000
		p = median(vals[n, "driver-plain-ns/op"]) / 1000
		if (runs < count) bad = 1
		printf "| %s | %.2f [%.2f–%.2f] | %.2f [%.2f–%.2f] | %.2f [%.2f–%.2f] | %.2f [%.2f–%.2f] | %.1f | %.1f | %.1f | %d |\n", n, r1, l1, h1, r2, l2, h2, q1, m1, x1, q2, m2, x2, a, d, p, runs
	}
	if (names == 0 || bad) { print "ratios.sh: fewer runs than COUNT, or no Interleave metrics, in the output" > "/dev/stderr"; exit 1 }
}' "$raw"
