#!/usr/bin/env bash
# Store, retrieve and search throughput with 1, 8 and 64 clients through the wire, as a
# fraction of the same calls in-process, with the server and its clients in two processes
# pinned to two different cores (taskset, GOMAXPROCS=1 each), so that the figure is the
# wire's and not two programs' competition for the scheduler. The in-process arm runs on
# the server's core with the server's GOMAXPROCS: the fraction is what a core serving over
# the wire keeps of what the same core does in-process. The arms alternate, RUNS times, and
# each row reports the median, min and max over the runs. Opt-in; it measures, it does not
# assert.
#
# usage: hack/perf/wire-concurrency.sh [RUNS] [BACKEND]   (defaults 5 and inmemory)
# env:   SERVER_CPU, CLIENT_CPU (defaults 1 and 0), CALLS_store, CALLS_retrieve, CALLS_search,
#        OPS (default "store retrieve search"; SQLite's concurrent stores can fail with
#        SQLITE_BUSY, which ends the run, so "retrieve search" for it),
#        WIRELOAD (a wireload binary to run instead of building the tree's)
set -euo pipefail
runs=${1:-5} backend=${2:-inmemory}
ops=${OPS:-store retrieve search}
server_cpu=${SERVER_CPU:-1} client_cpu=${CLIENT_CPU:-0}
declare -A calls=([store]=${CALLS_store:-10000} [retrieve]=${CALLS_retrieve:-20000} [search]=${CALLS_search:-5000})
cd "$(dirname "$0")/../.."
if [ "$(nproc)" -lt 2 ] || [ "$server_cpu" = "$client_cpu" ]; then
	echo "needs two distinct cores (nproc=$(nproc), SERVER_CPU=$server_cpu, CLIENT_CPU=$client_cpu)" >&2
	exit 1
fi
tmp=$(mktemp -d)
if [ -n "${WIRELOAD:-}" ]; then
	cp "$WIRELOAD" "$tmp/wireload" # built elsewhere, e.g. against an earlier commit
else
	go build -o "$tmp/wireload" ./hack/perf/wireload/
fi
# Each wire measurement gets a fresh server, as each direct one gets a fresh store: a store
# that kept growing across measurements would make later searches scan more (the in-memory
# store scans in insertion order) and compare unlike with like. A server lives as long as
# its stdin pipe; closing the pipe ends it.
server=""
start_server() {
	rm -f "$tmp/in" "$tmp/url"
	mkfifo "$tmp/in"
	taskset -c "$server_cpu" env GOMAXPROCS=1 "$tmp/wireload" serve -backend "$backend" <"$tmp/in" >"$tmp/url" &
	server=$!
	exec 3>"$tmp/in"
	for _ in $(seq 50); do [ -s "$tmp/url" ] && break; sleep 0.1; done
	url=$(head -1 "$tmp/url")
	[ -n "$url" ] || { echo "the server printed no URL" >&2; exit 1; }
}
stop_server() {
	if [ -n "$server" ]; then
		exec 3>&-
		wait "$server" || true
		server=""
	fi
}
trap 'stop_server; rm -rf "$tmp"' EXIT
echo "backend $backend, server on cpu $server_cpu, clients on cpu $client_cpu, $runs runs; load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for run in $(seq "$runs"); do
	for op in $ops; do
		for clients in 1 8 64; do
			n=${calls[$op]}
			d=$(taskset -c "$server_cpu" env GOMAXPROCS=1 "$tmp/wireload" direct -backend "$backend" -op "$op" -clients "$clients" -calls "$n")
			start_server
			w=$(taskset -c "$client_cpu" env GOMAXPROCS=1 "$tmp/wireload" load -url "$url" -op "$op" -clients "$clients" -calls "$n")
			stop_server
			echo "$run ${d##* } ${w##* } $op $clients" | tee -a "$tmp/raw" >&2
		done
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "| op | clients | direct ops/s (median, min–max) | wire ops/s (median, min–max) | wire/direct (median, min–max) |"
echo "|---|---:|---:|---:|---:|"
# Columns of raw: run direct wire op clients. The ratio is taken per run (the two arms of a
# run ran back to back), then summarized.
for op in $ops; do
	for clients in 1 8 64; do
		awk -v op="$op" -v c="$clients" '
		function summary(v, n,   a, i, j, x, med) {
			for (i = 1; i <= n; i++) a[i] = v[i]
			for (i = 2; i <= n; i++) { x = a[i]; j = i - 1; while (j > 0 && a[j] > x) { a[j + 1] = a[j]; j-- }; a[j + 1] = x }
			med = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			return sprintf("%s (%s–%s)", fmt(med), fmt(a[1]), fmt(a[n]))
		}
		function fmt(x) { return x < 10 ? sprintf("%.2f", x) : sprintf("%.0f", x) }
		$4 == op && $5 == c { n++; d[n] = $2 + 0; w[n] = $3 + 0; r[n] = $3 / $2 }
		END { printf "| %s | %d | %s | %s | %s |\n", op, c, summary(d, n), summary(w, n), summary(r, n) }' "$tmp/raw"
	done
done
