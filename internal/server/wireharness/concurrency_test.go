package wireharness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// BenchmarkConcurrent measures store, retrieve and search throughput and latency with 1, 8
// and 64 concurrent clients, in-process (direct) and through remote → server (wire), for
// SQLite, PostgreSQL and Redis. b.N calls are shared among the clients; each records its own
// call latencies, and the benchmark reports ops/s over the whole run and the p50 and p99 of
// all calls. The two arms of one backend, operation and client count run back to back, so
// their ratio is the comparable figure on a shared machine (docs/performance.md).
func BenchmarkConcurrent(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres", "redis"} {
		b.Run(name, func(b *testing.B) {
			inner, direct, wire := benchPair(b, name)
			ctx := context.Background()
			seed := seedBench(b, direct)
			// Redis indexes asynchronously; the searches must find the seed, not race it.
			if err := inner.MakeSearchIndexVisible(liveCtx(b)); err != nil {
				b.Fatal(err)
			}
			q := memory.Query{Tags: []string{"t3"}, Filters: map[string]json.RawMessage{"source": []byte(`"bench"`)}, Limit: 10}
			// Stored items are numbered past the seed and never repeat across sub-benchmarks.
			var next atomic.Int64
			next.Store(int64(len(seed)))
			ops := map[string]func(s memory.Store, c, i int) error{
				"store": func(s memory.Store, _, _ int) error {
					_, err := s.Store(ctx, benchItem(int(next.Add(1))))
					return err
				},
				"retrieve": func(s memory.Store, c, i int) error {
					it, err := s.Retrieve(ctx, seed[(c*31+i)%len(seed)].ID)
					if err == nil && it == nil {
						err = fmt.Errorf("seed item missing")
					}
					return err
				},
				"search": func(s memory.Store, _, _ int) error {
					hits, err := s.Search(ctx, q)
					if err == nil && len(hits) == 0 {
						err = fmt.Errorf("search found nothing")
					}
					return err
				},
			}
			for _, op := range []string{"store", "retrieve", "search"} {
				for _, clients := range []int{1, 8, 64} {
					for _, arm := range []string{"direct", "wire"} {
						var s memory.Store = direct
						if arm == "wire" {
							s = wire
						}
						b.Run(fmt.Sprintf("%s/clients=%d/%s", op, clients, arm), func(b *testing.B) {
							concurrentCalls(b, clients, func(c, i int) error { return ops[op](s, c, i) })
						})
					}
				}
			}
		})
	}
}

// concurrentCalls shares b.N calls of call among clients goroutines and reports ops/s and the
// p50 and p99 latency of all calls.
func concurrentCalls(b *testing.B, clients int, call func(client, i int) error) {
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		n := b.N / clients
		if c < b.N%clients {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat[c] = make([]time.Duration, 0, n)
			for i := range n {
				t := time.Now()
				if err := call(c, i); err != nil {
					errs <- err
					return
				}
				lat[c] = append(lat[c], time.Since(t))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}

// seedBench stores benchItem(0..199) directly and returns them, for retrieves and searches.
func seedBench(b *testing.B, s memory.Store) []memory.Item {
	b.Helper()
	seed := make([]memory.Item, 200)
	for i := range seed {
		seed[i] = benchItem(i)
		if _, err := s.Store(context.Background(), seed[i]); err != nil {
			b.Fatal(err)
		}
	}
	return seed
}
