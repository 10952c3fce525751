package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// BenchSizes are the data-set sizes the adapter benchmarks load.
var BenchSizes = []int{1_000, 100_000}

// BenchItem is item i of the benchmark data set: the text word w<i%50> hits 2% of items, the
// tag t<i%100> 1%, the filter source s<i%10> 10%, and item RareIndex alone has the tag
// RareTag.
func BenchItem(i int) memory.Item {
	tags := []string{fmt.Sprintf("t%d", i%100), "common"}
	if i == RareIndex {
		tags = append(tags, RareTag)
	}
	it := memory.NewItem(json.RawMessage(fmt.Sprintf(`{"text":"item %d lorem ipsum w%d dolor"}`, i, i%50)), tags...)
	it.Metadata["source"] = json.RawMessage(fmt.Sprintf(`"s%d"`, i%10))
	it.Metadata["branch_id"] = json.RawMessage(fmt.Sprint(i))
	return it
}

// RareIndex is the one [BenchItem] with the tag RareTag, and the one whose branch_id and
// text the scale benchmark's rare filter and rare text find.
const RareIndex = 4242

// RareTag is the tag only [BenchItem] RareIndex has.
const RareTag = "rare"

// BenchQueries are the searches the benchmarks time, by name; each matches at least one
// [BenchItem] in any loaded data set.
func BenchQueries() map[string]memory.Query {
	return map[string]memory.Query{
		"text":   {Text: Text("W7 "), Limit: 20},
		"tags":   {Tags: []string{"t42"}, Limit: 20},
		"filter": {Filters: map[string]json.RawMessage{"source": json.RawMessage(`"s3"`)}, Limit: 20},
	}
}

// BenchDriver is the plain-driver baseline an adapter is measured against: the same native
// statements, with the columns decoded into the same items by [DecodePlain], so
// adapter/driver reads as the adapter's own overhead (validation, checks of what it reads,
// typed errors) rather than as the cost of producing an item at all. [Interleave] runs it
// twice beside the adapter: under the kind of per-call deadline the adapter sets, and under
// a plain context.
type BenchDriver struct {
	// Store writes it the way the adapter's row format does.
	Store func(ctx context.Context, it memory.Item) error
	// Retrieve reads the row of id and decodes it.
	Retrieve func(ctx context.Context, id uuid.UUID) error
	// Search prepares q's equivalent native query once and returns a function that runs it,
	// decodes every row and counts them; a query it cannot build is an error.
	Search func(q memory.Query) (func(ctx context.Context) (int, error), error)
}

// DecodePlain builds an item from raw columns with plain encoding/json and no checks: the
// decoding a caller of the bare driver would write to get the same item the adapter returns.
func DecodePlain(id uuid.UUID, created float64, meta, content string, tags []string) (memory.Item, error) {
	it := memory.Item{ID: id, CreatedAt: created, Content: json.RawMessage(content), Tags: tags}
	if err := json.Unmarshal([]byte(meta), &it.Metadata); err != nil {
		return memory.Item{}, err
	}
	return it, nil
}

// BenchSetup loads a fresh data set holding BenchItem(0..n-1) and returns its ids in
// order and a [BenchOpen] over it; clean-up is registered with b.
type BenchSetup func(b *testing.B, n int) (BenchOpen, []uuid.UUID)

// BenchOpen opens an adapter store and its driver baseline on connections of their own to
// the loaded data set, registering their clean-up with b (the step's benchmark). A step
// calls it twice, for a driver of its own for each of the two driver arms (the store that
// call returns is left idle): arms that shared a connection would share its page cache,
// and the two driver arms would warm it for each other.
type BenchOpen func(b *testing.B) (memory.Store, BenchDriver)

// Bench runs, for each of [BenchSizes], store, retrieve and each of [BenchQueries] through the
// adapter and through its driver baseline, interleaved ([Interleave]), as sub-benchmarks named
// n=<n>/<op>. The data set is loaded once per size, but every step opens the adapter and the
// driver afresh (open): a step that inherited the connections of the one before would inherit
// their page caches, prepared statements and pool sizes too, and the arms do not inherit them
// alike (SQLite's driver arm ran its 100k searches 25–40 % slower after the retrieve step than
// on its own, issue 26; docs/perf/adapter-vs-driver.md).
func Bench(b *testing.B, setup BenchSetup) {
	for _, n := range BenchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			setupOpen, ids := setup(b, n)
			open := func(b *testing.B) (memory.Store, [2]BenchDriver) {
				s, drv := setupOpen(b)
				_, plain := setupOpen(b)
				return s, [2]BenchDriver{drv, plain}
			}
			b.Run("store", func(b *testing.B) {
				s, drv := open(b)
				Interleave(b, func(j int) error {
					_, err := s.Store(ctx, BenchItem(n+j))
					return err
				}, func(ctx context.Context, j int) error {
					return drv[arm(ctx)].Store(ctx, BenchItem(n+j))
				})
			})
			b.Run("retrieve", func(b *testing.B) {
				s, drv := open(b)
				Interleave(b, func(j int) error {
					it, err := s.Retrieve(ctx, ids[j%n])
					if err == nil && it == nil {
						err = fmt.Errorf("item %d missing", j%n)
					}
					return err
				}, func(ctx context.Context, j int) error {
					return drv[arm(ctx)].Retrieve(ctx, ids[j%n])
				})
			})
			queries := BenchQueries()
			for _, name := range []string{"text", "tags", "filter"} {
				q := queries[name]
				b.Run("search-"+name, func(b *testing.B) {
					s, drv := open(b)
					var run [2]func(context.Context) (int, error)
					for k := range drv {
						var err error
						if run[k], err = drv[k].Search(q); err != nil {
							b.Fatal(err)
						}
					}
					Interleave(b, func(int) error {
						hits, err := s.Search(ctx, q)
						if err == nil && len(hits) == 0 {
							err = fmt.Errorf("no hits")
						}
						return err
					}, func(ctx context.Context, _ int) error {
						count, err := run[arm(ctx)](ctx)
						if err == nil && count == 0 {
							err = fmt.Errorf("no rows")
						}
						return err
					})
				})
			}
		})
	}
}

// BenchWarmup is how many untimed rounds of every arm [Interleave] runs before it times any:
// enough for each arm's connection to have prepared its statements and read the index
// pages a step needs, so that the timed loop compares steady states rather than whichever
// arm happened to pay a cold cache.
const BenchWarmup = 50

// Interleave times three arms alternately in one loop: the adapter, the driver under a
// deadline of its own ([bounded], as the adapter bounds every call), and the driver under
// a plain context. It reports adapter-ns/op, driver-ns/op (with the deadline),
// driver-plain-ns/op and the ratios adapter/driver and adapter/driver-plain. Alternating,
// rather than running one arm's loop and then the next, makes load from other processes on
// a shared machine, and the data set's growth under stores, weigh on every arm alike; the
// order of the three cycles through all six permutations, so that no arm always follows
// another and finds the caches it warmed. Every call gets its own sequence number j (three
// per round), so a store never overwrites a row another arm wrote in the same round, and
// a retrieve never reads the row another arm has just read.
func Interleave(b *testing.B, adapter func(j int) error, driver func(ctx context.Context, j int) error) {
	arms := [3]func(j int) error{
		adapter,
		func(j int) error {
			return bounded(context.Background(), func(ctx context.Context) error { return driver(ctx, j) })
		},
		func(j int) error { return driver(context.Background(), j) },
	}
	orders := [6][3]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {1, 0, 2}}
	j := 0
	for range BenchWarmup {
		for k, arm := range arms {
			if err := arm(j); err != nil {
				b.Fatalf("warm-up, arm %d: %v", k, err)
			}
			j++
		}
	}
	var spent [3]time.Duration
	var calls [3][]time.Duration
	for i := 0; b.Loop(); i++ {
		for _, k := range orders[i%len(orders)] {
			t0 := time.Now()
			if err := arms[k](j + k); err != nil {
				b.Fatal(i, k, err)
			}
			d := time.Since(t0)
			spent[k] += d
			calls[k] = append(calls[k], d)
		}
		j += len(arms)
	}
	ns := func(k int) float64 { return float64(spent[k].Nanoseconds()) / float64(b.N) }
	b.ReportMetric(ns(0), "adapter-ns/op")
	b.ReportMetric(ns(1), "driver-ns/op")
	b.ReportMetric(ns(2), "driver-plain-ns/op")
	b.ReportMetric(ns(0)/ns(1), "adapter/driver")
	b.ReportMetric(ns(0)/ns(2), "adapter/driver-plain")
	// The calls' medians beside the means: on a machine shared with other work a few
	// calls that waited for a core weigh on a mean by tens of percent and land on either
	// arm, while the median call is one that ran (docs/performance.md, section 3).
	p50 := func(k int) float64 { return float64(median(calls[k]).Nanoseconds()) }
	b.ReportMetric(p50(0)/p50(1), "adapter/driver-p50")
	b.ReportMetric(p50(0)/p50(2), "adapter/driver-plain-p50")
}

// median is the middle of ds (the mean of the two middle ones for an even count), sorting
// ds in place; zero for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}

// arm is 0 for the driver arm that runs under a deadline and 1 for the one that does not.
func arm(ctx context.Context) int {
	if _, ok := ctx.Deadline(); ok {
		return 0
	}
	return 1
}

// bounded runs one driver call under a deadline of its own, as every adapter call runs under
// its per-call timeout: with database/sql and pgx a cancellable context costs goroutines or
// timers of its own (a few microseconds, measured in docs/performance.md), a cost every call
// arriving through the adapter's HTTP server pays anyway, since its request context is
// cancellable. Without it the baseline would be a call that nothing can bound.
func bounded(ctx context.Context, call func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return call(ctx)
}
