#!/usr/bin/env bash
# Runs the PostgreSQL scale benchmark (BenchmarkPostgresScale, build tag scalebench) and
# writes its markdown table, with the command, date, machine and load average, to OUT
# (default docs/perf/postgres-scale.md), and each query's EXPLAIN ANALYZE beside it under
# docs/perf/explain/. Uses $MAO_TEST_POSTGRES_URL when set, else the package's TestMain
# starts and stops a throwaway server.
#
# usage: hack/perf/scale.sh [SIZES] [COUNT] [BENCHTIME]   e.g. hack/perf/scale.sh 10000,100000,1000000 3 100x
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes=${1:-10000,100000}
count=${2:-3}
benchtime=${3:-100x}
out=${OUT:-docs/perf/postgres-scale.md}
mkdir -p "$(dirname "$out")/explain"
# go test runs in the package's directory: the plans' directory must be absolute.
explain=$(cd "$(dirname "$out")/explain" && pwd)
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
cmd="MAO_BENCH_SCALE_SIZES=$sizes go test -tags scalebench -run '^\$' -bench BenchmarkPostgresScale -benchtime $benchtime -count $count -v ./adapters/postgres/"
start=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
began=$(date +%s)
MAO_BENCH_SCALE_SIZES=$sizes MAO_BENCH_EXPLAIN_DIR=$explain go test -tags scalebench -run '^$' \
	-bench BenchmarkPostgresScale -benchtime "$benchtime" -count "$count" -v -timeout 60m \
	./adapters/postgres/ | tee "$raw"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "Command: \`$cmd\` (via \`hack/perf/scale.sh $sizes $count $benchtime\`)"
	echo
	echo "Recorded $start on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(go version | cut -d' ' -f3), load average $load_start at the start and $load_end at the end; whole run $(( $(date +%s) - began )) s. Loads (COPY + VACUUM ANALYZE, not timed):"
	grep -o 'loaded [0-9]* items with COPY and VACUUM ANALYZE in [0-9.a-z]*' "$raw" | sort -u -k2,2n | sed 's/^/- /'
	echo
	echo "| n | query | µs/op per run | median µs/op | median / median at n=${sizes%%,*} |"
	echo "|---:|---|---|---:|---:|"
	grep -E '^BenchmarkPostgresScale/n=[0-9]+/[^[:space:]]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+ ns/op' "$raw" |
		sed -E 's#^BenchmarkPostgresScale/n=([0-9]+)/([^[:space:]]+)-[0-9]+[[:space:]]+[0-9]+[[:space:]]+([0-9.]+) ns/op.*#\1 \2 \3#' |
		awk -v first="${sizes%%,*}" '
			{ key = $1 " " $2; if (!(key in seen)) { order[++k] = key; seen[key] = 1 }; v[key] = v[key] " " $3 }
			END {
				for (i = 1; i <= k; i++) {
					split(order[i], p, " "); n = split(v[order[i]], a, " ")
					for (x = 1; x <= n; x++) for (y = x + 1; y <= n; y++) if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
					med = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
					runs = ""; split(v[order[i]], r, " ")
					for (x = 1; x <= n; x++) runs = runs (x > 1 ? ", " : "") sprintf("%.0f", r[x] / 1000)
					if (p[1] == first) base[p[2]] = med
					printf "| %s | %s | %s | %.0f | %s |\n", p[1], p[2], runs, med / 1000, (p[2] in base) ? sprintf("%.2f", med / base[p[2]]) : "–"
				}
			}'
} >"$out"
echo "wrote $out and $explain/"
