#!/usr/bin/env bash
# Runs one backend's scale benchmark (BenchmarkPostgresScale, BenchmarkSQLiteScale or
# BenchmarkRedisScale, build tag scalebench) and writes its markdown table, with the
# command, date, machine, load average, load times and memory lines, to OUT (default
# docs/perf/<backend>-scale.md), with each query's mean and its fastest call (storetest.Scale's
# min-µs/op: the mean moves with the machine's load, the fastest call much less). PostgreSQL
# writes each query's EXPLAIN ANALYZE and SQLite its EXPLAIN QUERY PLAN beside it under
# docs/perf/explain/. PostgreSQL uses
# $MAO_TEST_POSTGRES_URL and Redis $MAO_TEST_REDIS_ADDR when set, else the package's
# TestMain starts and stops a throwaway server. NICE (e.g. NICE=15) runs the build and the
# benchmark under nice, for a machine that is timing something else.
#
# usage: hack/perf/scale.sh [BACKEND] [SIZES] [COUNT] [BENCHTIME]
#   e.g. hack/perf/scale.sh postgres 10000,100000,1000000 3 100x
#        hack/perf/scale.sh sqlite 10000,100000,1000000 1 1s
# BACKEND is postgres (the default, so the older `scale.sh SIZES COUNT BENCHTIME` still
# works), sqlite or redis. A time BENCHTIME (1s) runs a query that takes longer than that
# once, which keeps O(scope) queries at 1M items affordable.
set -euo pipefail
cd "$(dirname "$0")/../.."
backend=postgres
if [[ $# -gt 0 && ! $1 =~ ^[0-9,]+$ ]]; then
	backend=$1
	shift
fi
case $backend in
postgres) bench=BenchmarkPostgresScale ;;
sqlite) bench=BenchmarkSQLiteScale ;;
redis) bench=BenchmarkRedisScale ;;
*)
	echo "usage: $0 [postgres|sqlite|redis] [SIZES] [COUNT] [BENCHTIME]" >&2
	exit 2
	;;
esac
sizes=${1:-10000,100000}
count=${2:-3}
benchtime=${3:-100x}
out=${OUT:-docs/perf/$backend-scale.md}
mkdir -p "$(dirname "$out")/explain"
# go test runs in the package's directory: the plans' directory must be absolute.
explain=$(cd "$(dirname "$out")/explain" && pwd)
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
nice=()
if [[ -n ${NICE:-} ]]; then
	nice=(nice -n "$NICE")
fi
cmd="MAO_BENCH_SCALE_SIZES=$sizes go test -tags scalebench -run '^\$' -bench $bench -benchtime $benchtime -count $count -v ./adapters/$backend/"
start=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
began=$(date +%s)
MAO_BENCH_SCALE_SIZES=$sizes MAO_BENCH_EXPLAIN_DIR=$explain "${nice[@]}" go test -tags scalebench -run '^$' \
	-bench "$bench" -benchtime "$benchtime" -count "$count" -v -timeout 120m \
	"./adapters/$backend/" | tee "$raw"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "Command: \`$cmd\` (via \`hack/perf/scale.sh $backend $sizes $count $benchtime\`${NICE:+ with NICE=$NICE})"
	echo
	echo "Recorded $start on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(go version | cut -d' ' -f3), load average $load_start at the start and $load_end at the end; whole run $(($(date +%s) - began)) s. Loads (not timed):"
	grep -o 'loaded [0-9]* items with .* in [0-9.a-zµ]*$' "$raw" | sort -u -k2,2n | sed 's/^/- /'
	grep -o 'waited .* after the load$' "$raw" | sed 's/^/- /' || true
	if grep -q 'memory n=' "$raw"; then
		echo
		echo "Memory (the benchmark process's VmHWM/VmRSS from /proc/self/status; the backend's own figures after the semicolon):"
		grep -o 'memory n=.*' "$raw" | sed 's/^/- /'
	fi
	echo
	echo "| n | query | µs/op per run | median µs/op | median / median at n=${sizes%%,*} | fastest µs (least of runs) | fastest / fastest at n=${sizes%%,*} |"
	echo "|---:|---|---|---:|---:|---:|---:|"
	grep -E "^$bench/n=[0-9]+/[^[:space:]]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+ ns/op" "$raw" |
		sed -E "s#^$bench/n=([0-9]+)/([^[:space:]]+)-[0-9]+[[:space:]]+[0-9]+[[:space:]]+([0-9.]+) ns/op([[:space:]]+([0-9.]+) min-µs/op)?.*#\1 \2 \3 \5#" |
		awk -v first="${sizes%%,*}" '
			{ key = $1 " " $2; if (!(key in seen)) { order[++k] = key; seen[key] = 1 }; v[key] = v[key] " " $3
			  if (NF > 3 && (!(key in fast) || $4 + 0 < fast[key] + 0)) fast[key] = $4 }
			END {
				for (i = 1; i <= k; i++) {
					split(order[i], p, " "); n = split(v[order[i]], a, " ")
					for (x = 1; x <= n; x++) for (y = x + 1; y <= n; y++) if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
					med = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
					runs = ""; split(v[order[i]], r, " ")
					for (x = 1; x <= n; x++) runs = runs (x > 1 ? ", " : "") sprintf("%.0f", r[x] / 1000)
					if (p[1] == first) base[p[2]] = med
					if (p[1] == first && order[i] in fast) fbase[p[2]] = fast[order[i]]
					f = (order[i] in fast) ? sprintf("%.0f", fast[order[i]]) : "–"
					fr = (order[i] in fast && (p[2] in fbase) && fbase[p[2]] > 0) ? sprintf("%.2f", fast[order[i]] / fbase[p[2]]) : "–"
					printf "| %s | %s | %s | %.0f | %s | %s | %s |\n", p[1], p[2], runs, med / 1000, (p[2] in base) ? sprintf("%.2f", med / base[p[2]]) : "–", f, fr
				}
			}'
} >"$out"
if [[ $backend == redis ]]; then
	echo "wrote $out"
else
	echo "wrote $out and plans under $explain/"
fi
