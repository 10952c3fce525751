#!/usr/bin/env bash
# Counts instructions per call of Go benchmarks under valgrind's callgrind, which is
# deterministic where wall time on a shared machine is not. Each benchmark runs at two
# iteration counts; (Ir(N2) - Ir(N1)) / (N2 - N1) is the per-call count with the set-up
# and the b.N=1 warm-up cancelled out. GOMAXPROCS=1 keeps the scheduler from spinning idle
# threads (whose counts vary run to run); asyncpreemptoff avoids a callgrind signal
# assertion. Repeated runs agree within about 0.2 %.
#
# usage: hack/perf/callgrind.sh LABEL TEST_BINARY BENCHMARK_NAME...
# prints one markdown row per benchmark: | label | benchmark | instructions/call |
set -euo pipefail
label=$1 bin=$2
shift 2
n1=${CALLGRIND_N1:-200}
n2=${CALLGRIND_N2:-1200}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # bench n -> total instructions
	# Anchor every level: -test.bench matches each /-separated part on its own, and an
	# unanchored "marshal" would also run "unmarshal".
	local re
	re="^${1//\//\$/^}\$"
	GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
		--callgrind-out-file="$tmp/cg.out" "$bin" -test.run '^$' -test.bench "$re" \
		-test.benchtime "$2x" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
	grep -o 'Collected : [0-9]*' "$tmp/log" | awk '{print $3}'
}
for bench in "$@"; do
	a=$(count "$bench" "$n1")
	b=$(count "$bench" "$n2")
	echo "| $label | $bench | $(( (b - a) / (n2 - n1) )) |"
done
