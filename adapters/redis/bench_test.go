package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// The benchmarks pair every adapter operation with a "driver" baseline that issues the
// equivalent commands through go-redis directly in the same run and decodes the payloads into
// items, so the adapter's overhead reads as the ratio of the ns/op figures; storetest.Interleave
// runs that baseline twice, with a deadline and with a plain context (go-redis bounds a call
// by its socket timeouts, so the two should agree). docs/adapters/redis.md records the numbers.
//
//	hack/perf/ratios.sh ./adapters/redis/ 'BenchmarkStore|BenchmarkRetrieve|BenchmarkSearch' 2000x 5

var benchSizes = []int{1_000, 100_000}

func benchItem(i int) memory.Item {
	it := memory.NewItem(json.RawMessage(fmt.Sprintf(`{"text":"item %d kind-%d lorem ipsum dolor","n":%d}`, i, i%10, i)),
		"all", "t"+strconv.Itoa(i%10))
	it.Metadata["branch_id"] = json.RawMessage(strconv.Quote("b" + strconv.Itoa(i%100)))
	it.Metadata["source"] = json.RawMessage(strconv.Quote("s" + strconv.Itoa(i%7)))
	return it
}

// benchHarness makes a harness on a fresh scope of the package's server, closed (its scope
// purged) when the benchmark ends.
func benchHarness(b *testing.B) *Harness {
	b.Helper()
	h, err := NewHarness(context.Background(), HarnessOptions{Addr: redisAddr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return h
}

// loadScope bulk-loads n items with pipelined writeItem+XADD (the same writes Store makes)
// and waits for the indexer to apply them all.
func loadScope(b *testing.B, n int) (*Harness, *Store, []memory.Item) {
	b.Helper()
	ctx := context.Background()
	h := benchHarness(b)
	// Straight to the server, as the driver baseline is: the harness's proxy is for its
	// outage cases, and its extra hop is not the adapter's cost.
	ds, err := h.MakeDirectStore(ctx)
	if err != nil {
		b.Fatal(err)
	}
	s := ds.(*Store)
	items := make([]memory.Item, n)
	const batch = 1000
	for start := 0; start < n; start += batch {
		pipe := h.admin.Pipeline()
		for i := start; i < min(start+batch, n); i++ {
			items[i] = benchItem(i)
			data, err := json.Marshal(items[i])
			if err != nil {
				b.Fatal(err)
			}
			writeItem(ctx, pipe, h.k, items[i], data, time.Now())
			pipe.XAdd(ctx, &goredis.XAddArgs{Stream: h.k.stream(), Values: []string{"id", items[i].ID.String()}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := h.MakeSearchIndexVisible(wctx); err != nil {
		b.Fatal(err)
	}
	return h, s, items
}

// settle waits until the indexer is idle, so that indexing work queued by one
// sub-benchmark does not run during the next one's timed loop.
func settle(b *testing.B, h *Harness) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := h.MakeSearchIndexVisible(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStore's driver arm writes the record and the stream entry alone (HSET+XADD in
// MULTI), without retention's bookkeeping (writeItem's script: the size, the store time in
// ix:stored, the byte count), so adapter/driver includes that bookkeeping's cost.
func BenchmarkStore(b *testing.B) {
	for _, n := range benchSizes {
		h, s, _ := loadScope(b, n)
		ctx := context.Background()
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			settle(b, h)
			storetest.Interleave(b, func(j int) error {
				_, err := s.Store(ctx, benchItem(n+j))
				return err
			}, func(ctx context.Context, j int) error {
				it := benchItem(n + j)
				data, err := json.Marshal(it)
				if err != nil {
					return err
				}
				pipe := h.admin.TxPipeline()
				pipe.HSet(ctx, h.k.item(it.ID), "kind", itemKind, "json", data)
				pipe.XAdd(ctx, &goredis.XAddArgs{Stream: h.k.stream(), Values: []string{"id", it.ID.String()}})
				_, err = pipe.Exec(ctx)
				return err
			})
		})
	}
}

func BenchmarkRetrieve(b *testing.B) {
	for _, n := range benchSizes {
		h, s, items := loadScope(b, n)
		ctx := context.Background()
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			storetest.Interleave(b, func(j int) error {
				it, err := s.Retrieve(ctx, items[j%n].ID)
				if err == nil && it == nil {
					err = fmt.Errorf("item %d missing", j%n)
				}
				return err
			}, func(ctx context.Context, j int) error {
				vals, err := h.admin.HMGet(ctx, h.k.item(items[j%n].ID), "kind", "json").Result()
				if err != nil {
					return err
				}
				raw, ok := vals[1].(string)
				if !ok {
					return fmt.Errorf("item %d has no payload", j%n)
				}
				var it memory.Item
				return json.Unmarshal([]byte(raw), &it)
			})
		})
	}
}

// BenchmarkSearch: the driver baseline pages the same index set by score, fetches the
// candidates with pipelined HMGET and applies the same predicate to the decoded items.
func BenchmarkSearch(b *testing.B) {
	queries := []struct {
		name string
		q    memory.Query
		set  func(h *Harness) string
	}{
		{"text", memory.Query{Text: text("KIND-7"), Limit: 20}, func(h *Harness) string { return h.k.all() }},
		{"tags", memory.Query{Tags: []string{"t3"}, Limit: 20}, func(h *Harness) string { return h.k.abs(tagRel("t3")) }},
		{"filter", memory.Query{Filters: map[string]json.RawMessage{"source": json.RawMessage(`"s3"`)}, Limit: 20},
			func(h *Harness) string {
				c, err := canonicalJSON(json.RawMessage(`"s3"`))
				if err != nil {
					panic(err) // a constant that must canonicalise
				}
				return h.k.abs(filterRel("source", c))
			}},
	}
	for _, n := range benchSizes {
		h, s, _ := loadScope(b, n)
		ctx := context.Background()
		for _, qc := range queries {
			key := qc.set(h)
			b.Run(fmt.Sprintf("%s/n=%d", qc.name, n), func(b *testing.B) {
				storetest.Interleave(b, func(int) error {
					hits, err := s.Search(ctx, qc.q)
					if err == nil && len(hits) != 20 {
						err = fmt.Errorf("%d hits, want 20", len(hits))
					}
					return err
				}, func(ctx context.Context, _ int) error {
					got, err := driverSearch(ctx, h.admin, h.k, key, qc.q)
					if err == nil && got != 20 {
						err = fmt.Errorf("%d rows, want 20", got)
					}
					return err
				})
			})
		}
	}
}

func driverSearch(ctx context.Context, c *goredis.Client, k keys, key string, q memory.Query) (int, error) {
	var lower string
	if q.Text != nil {
		lower = strings.ToLower(*q.Text)
	}
	found, from := 0, "-inf"
	for {
		zs, err := c.ZRangeArgsWithScores(ctx, goredis.ZRangeArgs{Key: key, Start: from, Stop: "+inf", ByScore: true, Count: fetchChunk}).Result()
		if err != nil {
			return found, err
		}
		pipe := c.Pipeline()
		cmds := make([]*goredis.SliceCmd, len(zs))
		for i, z := range zs {
			m, _ := z.Member.(string)
			id, err := uuid.Parse(m)
			if err != nil {
				return found, fmt.Errorf("index member %q: %w", m, err)
			}
			cmds[i] = pipe.HMGet(ctx, k.item(id), "kind", "json")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return found, err
		}
		for _, cmd := range cmds {
			raw, ok := cmd.Val()[1].(string)
			if !ok {
				return found, fmt.Errorf("indexed item without a payload")
			}
			var it memory.Item
			if err := json.Unmarshal([]byte(raw), &it); err != nil {
				return found, err
			}
			if memory.Matches(it, q, lower) {
				found++
				if found == q.Limit {
					return found, nil
				}
			}
		}
		if len(zs) < fetchChunk {
			return found, nil
		}
		from = "(" + strconv.FormatFloat(zs[len(zs)-1].Score, 'f', -1, 64)
	}
}
