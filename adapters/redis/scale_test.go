//go:build scalebench

package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
)

// scaleLoadBatch is how many items one loader pipeline carries.
const scaleLoadBatch = 250

// BenchmarkRedisScale times storetest.ScaleQueries through the adapter at each scope size
// (sub-benchmarks n=<n>/<query>), on the package's server (MAO_TEST_REDIS_ADDR or the one
// TestMain starts), with the store connected to it directly rather than through the
// harness's proxy. The loader, outside the timed part, pipelines what Store and the indexer
// would write: the record (Store's own encode) and its index entries (the indexer's own
// membersOf, queueIndexWrites and textWrites) at positions 1..n, then the position counter; so the
// scope is indexed when it returns, without a stream to drain; then it waits for the
// server's background rewrite (awaitRewrite). storetest.Scale logs the
// server's INFO memory beside the benchmark process's RSS. Opt-in, behind the scalebench
// build tag (hack/perf/scale.sh redis runs it and writes docs/perf/redis-scale.md):
//
//	go test -tags scalebench -run '^$' -bench BenchmarkRedisScale -benchtime 1s ./adapters/redis/
func BenchmarkRedisScale(b *testing.B) {
	storetest.Scale(b, "redis", func(b *testing.B, n int) storetest.ScaleScope {
		ctx := context.Background()
		s := directStore(b)
		if err := pipelineLoad(ctx, s, n, nil); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := awaitRewrite(ctx, s); err != nil {
			b.Fatal(err)
		}
		b.Logf("waited %s for the server's background AOF rewrite and RDB save after the load", time.Since(start).Round(time.Millisecond))
		return storetest.ScaleScope{
			Store:   s,
			Loader:  "pipelined record and index writes",
			Backend: func(ctx context.Context) (string, error) { return serverMemory(ctx, s) },
		}
	})
}

// directStore opens a store on a fresh harness scope (benchHarness), connected to the
// server directly rather than through the harness's proxy, closed when the benchmark ends.
func directStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(context.Background(), Options{Addr: redisAddr, Scope: benchHarness(b).Scope()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// pipelineLoad writes storetest.BenchItem(0..n-1) into s's scope as indexed items, in
// pipelines of scaleLoadBatch items, on a client of its own whose timeouts allow for the
// server pausing to fork its AOF rewrite of a multi-GB data set on a loaded machine (the
// store's 2 s timed out there). With storedAt set, each record is written as Store writes
// it (writeItem: its size, its store time storedAt(i) in ix:stored and its bytes in
// ix:usage), so that retention and quotas see the load; without, as the record alone.
func pipelineLoad(ctx context.Context, s *Store, n int, storedAt func(int) time.Time) error {
	o := *s.cfg.client
	o.ReadTimeout, o.WriteTimeout = time.Minute, time.Minute
	c := goredis.NewClient(&o)
	defer c.Close()
	for start := 0; start < n; start += scaleLoadBatch {
		pipe := c.Pipeline()
		tw := newTextWrites()
		for i := start; i < min(start+scaleLoadBatch, n); i++ {
			it := storetest.BenchItem(i)
			data, err := s.encode(it)
			if err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
			if storedAt != nil {
				writeItem(ctx, pipe, s.k, it, data, storedAt(i))
			} else {
				pipe.HSet(ctx, s.k.item(it.ID), "kind", itemKind, "json", data)
			}
			te := textEntryOf(it)
			s.queueIndexWrites(ctx, pipe, it.ID, float64(i+1), s.membersOf(it), te)
			tw.add(int64(i+1), te.grams, nil)
		}
		tw.queue(ctx, pipe, s.k)
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("load items %d..: %w", start, err)
		}
	}
	if err := c.Set(ctx, s.k.seq(), n, 0).Err(); err != nil {
		return fmt.Errorf("load: position counter: %w", err)
	}
	return nil
}

// awaitRewrite waits, up to ten minutes, until the server runs no background AOF rewrite or
// RDB save and has none scheduled: a large load sets one off (the AOF outgrows its last
// rewrite), and its forked child, writing the whole data set on the same cores, would
// otherwise be timed with the first searches.
func awaitRewrite(ctx context.Context, s *Store) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for {
		info, err := s.client.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("info persistence: %w", err)
		}
		busy := false
		for _, line := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if ok && v != "0" && (k == "aof_rewrite_in_progress" || k == "aof_rewrite_scheduled" || k == "rdb_bgsave_in_progress") {
				busy = true
			}
		}
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("background rewrite still running: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// serverMemory reports the server's used_memory and used_memory_rss (INFO memory), whether
// a background AOF rewrite or RDB save is running (INFO persistence), and its key count; the server holds only the benchmark's scope unless MAO_TEST_REDIS_ADDR points
// at a shared one.
func serverMemory(ctx context.Context, s *Store) (string, error) {
	info, err := s.client.Info(ctx, "memory", "persistence").Result()
	if err != nil {
		return "", fmt.Errorf("info memory: %w", err)
	}
	keys, err := s.client.DBSize(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("dbsize: %w", err)
	}
	out := []string{}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "aof_rewrite_in_progress" || k == "rdb_bgsave_in_progress") {
			// A background rewrite forks and writes the whole data set on the same cores.
			out = append(out, k+" "+v)
			continue
		}
		if ok && (k == "used_memory" || k == "used_memory_rss") {
			bytes, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return "", fmt.Errorf("info memory: %s: %w", k, err)
			}
			out = append(out, fmt.Sprintf("server %s %.1f MB", k, bytes/1e6))
		}
	}
	return strings.Join(append(out, fmt.Sprintf("%d keys", keys)), ", "), nil
}
