package wireharness_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// BenchmarkConcurrentRetrieve measures retrieve throughput and latency with 1, 8 and 64
// concurrent clients, in-process (direct) and through remote → server (wire), for SQLite
// and PostgreSQL. b.N retrieves are shared among the clients; each records its own call
// latencies, and the benchmark reports ops/s over the whole run and the p50 and p99 of all
// calls. The two arms of one backend and client count run back to back, so their ratio is
// the comparable figure on a shared machine (docs/performance.md).
func BenchmarkConcurrentRetrieve(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			direct, wire := benchPair(b, name)
			ctx := context.Background()
			seed := seedBench(b, direct)
			for _, clients := range []int{1, 8, 64} {
				for _, arm := range []string{"direct", "wire"} {
					var s memory.Store = direct
					if arm == "wire" {
						s = wire
					}
					b.Run(fmt.Sprintf("clients=%d/%s", clients, arm), func(b *testing.B) {
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
									it, err := s.Retrieve(ctx, seed[(c*31+i)%len(seed)].ID)
									if err == nil && it == nil {
										err = fmt.Errorf("seed item missing")
									}
									if err != nil {
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
					})
				}
			}
		})
	}
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
