package storetest

import (
	"context"
	"encoding/json"
	"fmt"
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
// statements under the same kind of per-call deadline, with the columns decoded into the same
// items by [DecodePlain], so adapter/driver reads as the adapter's own overhead (validation,
// checks of what it reads, typed errors) rather than as the cost of producing an item at
// all or of being cancellable.
type BenchDriver struct {
	// Store writes it the way the adapter's row format does.
	Store func(ctx context.Context, it memory.Item) error
	// Retrieve reads the row of id and decodes it.
	Retrieve func(ctx context.Context, id uuid.UUID) error
	// Search prepares q's equivalent native query once and returns a function that runs it,
	// decodes every row and counts them.
	Search func(q memory.Query) func(ctx context.Context) (int, error)
}

// DecodePlain builds an item from raw columns with plain encoding/json and no checks: the
// decoding a caller of the bare driver would write to get the same item the adapter returns.
func DecodePlain(id uuid.UUID, created time.Time, meta, content string, tags []string) (memory.Item, error) {
	it := memory.Item{ID: id, CreatedAt: created, Content: json.RawMessage(content), Tags: tags}
	if err := json.Unmarshal([]byte(meta), &it.Metadata); err != nil {
		return memory.Item{}, err
	}
	return it, nil
}

// BenchSetup opens an adapter store and its driver baseline over a fresh data set holding
// BenchItem(0..n-1), registers their clean-up with b, and returns the loaded ids in order.
type BenchSetup func(b *testing.B, n int) (memory.Store, BenchDriver, []uuid.UUID)

// Bench runs, for each of [BenchSizes], store, retrieve and each of [BenchQueries] through the
// adapter and through its driver baseline, interleaved ([Interleave]), as sub-benchmarks named
// n=<n>/<op>.
func Bench(b *testing.B, setup BenchSetup) {
	for _, n := range BenchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s, drv, ids := setup(b, n)
			b.Run("store", func(b *testing.B) {
				Interleave(b, func(i int) error {
					_, err := s.Store(ctx, BenchItem(n+2*i))
					return err
				}, func(i int) error {
					return bounded(ctx, func(ctx context.Context) error { return drv.Store(ctx, BenchItem(n+2*i+1)) })
				})
			})
			b.Run("retrieve", func(b *testing.B) {
				Interleave(b, func(i int) error {
					it, err := s.Retrieve(ctx, ids[i%n])
					if err == nil && it == nil {
						err = fmt.Errorf("item %d missing", i%n)
					}
					return err
				}, func(i int) error {
					return bounded(ctx, func(ctx context.Context) error { return drv.Retrieve(ctx, ids[i%n]) })
				})
			})
			queries := BenchQueries()
			for _, name := range []string{"text", "tags", "filter"} {
				q := queries[name]
				run := drv.Search(q)
				b.Run("search-"+name, func(b *testing.B) {
					Interleave(b, func(int) error {
						hits, err := s.Search(ctx, q)
						if err == nil && len(hits) == 0 {
							err = fmt.Errorf("no hits")
						}
						return err
					}, func(int) error {
						var count int
						err := bounded(ctx, func(ctx context.Context) (err error) { count, err = run(ctx); return err })
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

// Interleave times adapter and driver calls alternately in one loop and reports
// adapter-ns/op, driver-ns/op and their ratio adapter/driver. Alternating, rather than running
// one arm's loop and then the other's, makes load from other processes on a shared machine,
// and the data set's growth under stores, weigh on both arms alike; the arm that goes first
// alternates too, so neither always finds the caches warmed by the other.
func Interleave(b *testing.B, adapter, driver func(i int) error) {
	var a, d time.Duration
	for i := 0; b.Loop(); i++ {
		first, second := adapter, driver
		if i%2 == 1 {
			first, second = driver, adapter
		}
		t0 := time.Now()
		if err := first(i); err != nil {
			b.Fatal(i, err)
		}
		t1 := time.Now()
		if err := second(i); err != nil {
			b.Fatal(i, err)
		}
		t2 := time.Now()
		if i%2 == 0 {
			a, d = a+t1.Sub(t0), d+t2.Sub(t1)
		} else {
			d, a = d+t1.Sub(t0), a+t2.Sub(t1)
		}
	}
	an, dn := float64(a.Nanoseconds())/float64(b.N), float64(d.Nanoseconds())/float64(b.N)
	b.ReportMetric(an, "adapter-ns/op")
	b.ReportMetric(dn, "driver-ns/op")
	b.ReportMetric(an/dn, "adapter/driver")
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
