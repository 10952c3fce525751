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
// tag t<i%100> 1%, the filter source s<i%10> 10%.
func BenchItem(i int) memory.Item {
	it := memory.NewItem(json.RawMessage(fmt.Sprintf(`{"text":"item %d lorem ipsum w%d dolor"}`, i, i%50)),
		fmt.Sprintf("t%d", i%100), "common")
	it.Metadata["source"] = json.RawMessage(fmt.Sprintf(`"s%d"`, i%10))
	it.Metadata["branch_id"] = json.RawMessage(fmt.Sprint(i))
	return it
}

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
// adapter/driver reads as the adapter's own overhead (validation, typed errors, timeouts)
// rather than as the cost of producing an item at all.
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
// adapter and through its driver baseline, as sub-benchmarks named n=<n>/<op>/{adapter,driver}.
func Bench(b *testing.B, setup BenchSetup) {
	for _, n := range BenchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s, drv, ids := setup(b, n)
			b.Run("store/adapter", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, err := s.Store(ctx, BenchItem(n+i)); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("store/driver", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if err := drv.Store(ctx, BenchItem(n+i)); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("retrieve/adapter", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if it, err := s.Retrieve(ctx, ids[i%n]); err != nil || it == nil {
						b.Fatal(it, err)
					}
				}
			})
			b.Run("retrieve/driver", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if err := drv.Retrieve(ctx, ids[i%n]); err != nil {
						b.Fatal(err)
					}
				}
			})
			queries := BenchQueries()
			for _, name := range []string{"text", "tags", "filter"} {
				q := queries[name]
				b.Run("search-"+name+"/adapter", func(b *testing.B) {
					for b.Loop() {
						if hits, err := s.Search(ctx, q); err != nil || len(hits) == 0 {
							b.Fatal(len(hits), err)
						}
					}
				})
				run := drv.Search(q)
				b.Run("search-"+name+"/driver", func(b *testing.B) {
					for b.Loop() {
						if count, err := run(ctx); err != nil || count == 0 {
							b.Fatal(count, err)
						}
					}
				})
			}
		})
	}
}
