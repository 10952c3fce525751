package storetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// ScaleQuery is one search the scale benchmarks time.
type ScaleQuery struct {
	// Name names the sub-benchmark and the plan file.
	Name string
	// Query is the search, always with limit 20.
	Query memory.Query
	// Want is the exact number of hits over BenchItem(0..n-1) for any n of [ScaleSizes]: a
	// search that answers a different count, zero included, fails the benchmark, so an
	// adapter cannot look fast by missing hits.
	Want int
}

// ScaleQueries are the searches the scale benchmarks time, in order, all with limit 20,
// over [BenchItem] data: the tag t42 is on 1 % of items, the filter source s3 on 10 %, the
// filter branch_id 4242 on one item, the tag t42 with the filter source s2 on 1 % (every
// t42 item is s2), the text "w7 " on 2 %, the text "item 4242 lorem" on one item, and the
// empty query matches everything. Then the shapes whose answer is one item or none, which
// an index must find without reading the scope: [RareTag] (one item), a tag, a source and a
// text no item has; "zebra" shares no three-character sequence with any item's text,
// "lorem item" is made only of sequences every item has (the worst case for a trigram
// index, which can then exclude nothing).
func ScaleQueries() []ScaleQuery {
	s := func(v string) json.RawMessage { return json.RawMessage(strconv.Quote(v)) }
	return []ScaleQuery{
		{"tag", memory.Query{Tags: []string{"t42"}, Limit: 20}, 20},
		{"filter", memory.Query{Filters: map[string]json.RawMessage{"source": s("s3")}, Limit: 20}, 20},
		{"filter-rare", memory.Query{Filters: map[string]json.RawMessage{"branch_id": json.RawMessage(`4242`)}, Limit: 20}, 1},
		{"tag+filter", memory.Query{Tags: []string{"t42"}, Filters: map[string]json.RawMessage{"source": s("s2")}, Limit: 20}, 20},
		{"text", memory.Query{Text: Text("W7 "), Limit: 20}, 20},
		{"text-rare", memory.Query{Text: Text("item 4242 lorem"), Limit: 20}, 1},
		{"empty", memory.Query{Limit: 20}, 20},
		{"tag-rare", memory.Query{Tags: []string{RareTag}, Limit: 20}, 1},
		{"tag-absent", memory.Query{Tags: []string{"no-such-tag"}, Limit: 20}, 0},
		{"filter-absent", memory.Query{Filters: map[string]json.RawMessage{"source": s("no-such-source")}, Limit: 20}, 0},
		{"text-absent", memory.Query{Text: Text("zebra"), Limit: 20}, 0},
		{"text-absent-common", memory.Query{Text: Text("lorem item"), Limit: 20}, 0},
	}
}

// ScaleSizes reads MAO_BENCH_SCALE_SIZES (comma-separated item counts, each at least 5,000
// so that every [ScaleQueries] count holds: item RareIndex exists and every common search
// fills its limit); the default leaves out the 1M scope, whose
// load takes minutes on a small machine.
func ScaleSizes(tb testing.TB) []int {
	spec := os.Getenv("MAO_BENCH_SCALE_SIZES")
	if spec == "" {
		spec = "10000,100000"
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 5000 {
			tb.Fatalf("MAO_BENCH_SCALE_SIZES: %q is not a count of at least 5000", f)
		}
		out = append(out, n)
	}
	return out
}

// ScaleScope is one loaded scope of a scale benchmark.
type ScaleScope struct {
	// Store is the adapter under test, over a scope holding BenchItem(0..n-1).
	Store memory.Store
	// Loader says how the scope was loaded, for the log line the perf script collects.
	Loader string
	// Explain, when set, writes the backend's plan for q to path.
	Explain func(ctx context.Context, q memory.Query, path string) error
	// Backend, when set, describes the backend's own resource use (a server's memory, a
	// file's size) in one line.
	Backend func(ctx context.Context) (string, error)
}

// ScaleLoad loads a fresh scope of n items outside the timed part and registers its clean-up
// with b.
type ScaleLoad func(b *testing.B, n int) ScaleScope

// Scale times each of [ScaleQueries] through the adapter at each of [ScaleSizes], as
// sub-benchmarks n=<n>/<query>, after load filled the scope, reporting beside the mean the
// fastest search (min-µs/op): on a machine shared with other work the mean moves by 2× from
// run to run with the load, while the fastest call, one that ran undisturbed, is the work
// the search itself does. It logs the load time, and the
// benchmark process's memory (VmHWM and VmRSS from /proc/self/status, the adapter's own
// RSS for an embedded backend) after the load, after a forced garbage collection that
// returns the loader's garbage to the OS, and after the searches, with the backend's own
// description beside each. With MAO_BENCH_EXPLAIN_DIR set it writes each query's plan to
// <dir>/<backend>-n<n>-<query>.txt.
func Scale(b *testing.B, backend string, load ScaleLoad) {
	ctx := context.Background()
	for _, n := range ScaleSizes(b) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			start := time.Now()
			sc := load(b, n)
			b.Logf("loaded %d items with %s in %s", n, sc.Loader, time.Since(start).Round(time.Millisecond))
			logMemory(ctx, b, n, "after load", sc)
			runtime.GC()
			debug.FreeOSMemory()
			logMemory(ctx, b, n, "after load and GC", sc)
			for _, sq := range ScaleQueries() {
				if dir := os.Getenv("MAO_BENCH_EXPLAIN_DIR"); dir != "" && sc.Explain != nil {
					path := filepath.Join(dir, fmt.Sprintf("%s-n%d-%s.txt", backend, n, sq.Name))
					if err := sc.Explain(ctx, sq.Query, path); err != nil {
						b.Fatal(err)
					}
				}
				checkScaleHits(ctx, b, sc.Store, sq)
				b.Run(sq.Name, func(b *testing.B) {
					fastest := time.Duration(math.MaxInt64)
					for b.Loop() {
						start := time.Now()
						if hits, err := sc.Store.Search(ctx, sq.Query); err != nil || len(hits) != sq.Want {
							b.Fatalf("%s: %d hits, want %d (error %v)", sq.Name, len(hits), sq.Want, err)
						}
						fastest = min(fastest, time.Since(start))
					}
					b.ReportMetric(float64(fastest.Nanoseconds())/1e3, "min-µs/op")
				})
			}
			logMemory(ctx, b, n, "after searches", sc)
		})
	}
}

// checkScaleHits runs sq once, untimed, and fails b unless it answers exactly sq.Want items,
// each of which memory.Matches accepts, in insertion order (BenchItem's text names its
// index).
func checkScaleHits(ctx context.Context, b *testing.B, s memory.Store, sq ScaleQuery) {
	b.Helper()
	hits, err := s.Search(ctx, sq.Query)
	if err != nil {
		b.Fatalf("%s: %v", sq.Name, err)
	}
	if len(hits) != sq.Want {
		b.Fatalf("%s: %d hits, want %d", sq.Name, len(hits), sq.Want)
	}
	var lower string
	if sq.Query.Text != nil {
		lower = memory.Needle(*sq.Query.Text)
	}
	last := -1
	for _, it := range hits {
		if !memory.Matches(it, sq.Query, lower) {
			b.Fatalf("%s: hit %s does not match the query", sq.Name, it.ID)
		}
		var c struct{ Text string }
		var i int
		if err := json.Unmarshal(it.Content, &c); err != nil {
			b.Fatalf("%s: hit content: %v", sq.Name, err)
		}
		if _, err := fmt.Sscanf(c.Text, "item %d ", &i); err != nil || i <= last {
			b.Fatalf("%s: hit %q out of insertion order", sq.Name, c.Text)
		}
		last = i
	}
}

// logMemory logs one "memory n=<n> <when>: ..." line.
func logMemory(ctx context.Context, b *testing.B, n int, when string, sc ScaleScope) {
	b.Helper()
	line := fmt.Sprintf("memory n=%d %s: process %s", n, when, procStatus("VmHWM", "VmRSS"))
	if sc.Backend != nil {
		desc, err := sc.Backend(ctx)
		if err != nil {
			b.Fatal(err)
		}
		line += "; " + desc
	}
	b.Log(line)
}

// procStatus returns the named fields of /proc/self/status, or a note where it is missing
// (not Linux).
func procStatus(fields ...string) string {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "(no /proc/self/status)"
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			got[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		parts = append(parts, f+" "+got[f])
	}
	return strings.Join(parts, ", ")
}
