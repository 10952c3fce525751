//go:build scalebench

package redis

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// BenchmarkRedisGovernedStore is BenchmarkSQLiteGovernedStore on Redis: stores through a
// Governor (quotas checked, a max-age sweep each storetest.GovernedSweepEvery) against the
// store alone, interleaved in one run by storetest.GovernedStores, over a
// storetest.GovernedScope that pipelineLoad writes with each item's store time, on the
// package's server (MAO_TEST_REDIS_ADDR, else TestMain's) without the harness's proxy. The
// indexer drops the swept items' index entries in the background while both arms run.
// A Redis store takes about half the time of a SQLite one here, so a run needs about
// twice the stores to span as many sweeps (the scalebench tag opts in):
//
//	go test -tags scalebench -run '^$' -bench BenchmarkRedisGovernedStore -benchtime 30000x -timeout 40m ./adapters/redis/
//
// The scope's size and churn come from MAO_BENCH_GOVERNED_N and MAO_BENCH_GOVERNED_EXPIRY.
func BenchmarkRedisGovernedStore(b *testing.B) {
	ctx := context.Background()
	scope := storetest.NewGovernedScope(b)
	s := directStore(b)
	start := time.Now()
	if err := pipelineLoad(ctx, s, scope.N, scope.StoredAt); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d items in %v", scope.N, time.Since(start).Round(time.Second))
	start = time.Now()
	if err := awaitRewrite(ctx, s); err != nil {
		b.Fatal(err)
	}
	b.Logf("waited %v for the server's background AOF rewrite after the load", time.Since(start).Round(time.Millisecond))
	srv, err := server.New(server.Config{Store: s})
	if err != nil {
		b.Fatal(err)
	}
	g, err := srv.NewGovernor("bench", s, scope.Policy(), server.QuotaLimits{MaxItems: 4 * int64(scope.N), MaxBytes: 1 << 40, WriteRate: 1e6})
	if err != nil {
		b.Fatal(err)
	}
	storetest.GovernedStores(b, s, g)
}
