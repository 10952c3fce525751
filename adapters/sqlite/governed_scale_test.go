//go:build scalebench

package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// BenchmarkSQLiteGovernedStore times a store with retention and quotas on (a Governor: every quota checked, a max-age sweep every
// storetest.GovernedSweepEvery) against off, in one run (storetest.GovernedStores; issue
// 46's goal is on/off <= 1.10) over a storetest.GovernedScope: the first sweep removes the
// load's oldest second and every later one what expired since, as a scope under steady
// churn. Opt-in, behind the scalebench build tag:
//
//	go test -tags scalebench -run '^$' -bench BenchmarkSQLiteGovernedStore -benchtime 4000x ./adapters/sqlite/
//
// MAO_BENCH_GOVERNED_N (default 1000000) and MAO_BENCH_GOVERNED_EXPIRY (default 100) change
// the scope's size and its churn.
func BenchmarkSQLiteGovernedStore(b *testing.B) {
	ctx := context.Background()
	scope := storetest.NewGovernedScope(b)
	path := filepath.Join(b.TempDir(), "governed.db")
	s, err := Open(ctx, Options{Path: path, Scope: "bench", RequestTimeout: scaleRequestTimeout})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	raw, err := sql.Open("sqlite", dsn(path, "rw", scaleRequestTimeout))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = raw.Close() })
	t0 := time.Now()
	if err := bulkInsertAt(ctx, raw, "bench", scope.N, nil, scope.StoredAt); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d items in %v", scope.N, time.Since(t0).Round(time.Second))
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
