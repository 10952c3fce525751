//go:build scalebench

package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// governedExpiry is how many loaded items expire each second of the run: 100, or
// MAO_BENCH_GOVERNED_EXPIRY (items per second).
func governedExpiry(b *testing.B) int {
	rate := 100
	if v := os.Getenv("MAO_BENCH_GOVERNED_EXPIRY"); v != "" {
		var err error
		if rate, err = strconv.Atoi(v); err != nil || rate < 1 || rate > 1_000_000 {
			b.Fatalf("MAO_BENCH_GOVERNED_EXPIRY=%q: want items per second, 1 to 1000000", v)
		}
	}
	return rate
}

// governedSize is the scope's size for BenchmarkSQLiteGovernedStore: 1M items, or
// MAO_BENCH_GOVERNED_N.
func governedSize(b *testing.B) int {
	n := 1_000_000
	if v := os.Getenv("MAO_BENCH_GOVERNED_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 20_000 {
			b.Fatalf("MAO_BENCH_GOVERNED_N=%q: want an integer of at least 20000", v)
		}
	}
	return n
}

// BenchmarkSQLiteGovernedStore times a store into a scope of governedSize items with
// retention and quotas on (a Governor: every quota checked, a max-age sweep every
// storetest.GovernedSweepEvery) against off, in one run (storetest.GovernedStores; issue
// 46's goal is on/off <= 1.10). The loaded items' store times are spread 1/rate apart
// (governedExpiry), the oldest n/rate ago, and the max age is n/rate - 1 s: the first sweep
// removes 1 s worth and every later one what expired since, rate items a second, as a
// scope under steady churn. The max-items limit (2n) is never reached but makes each sweep
// count the scope, as it would in production. Opt-in, behind the scalebench build tag:
//
//	go test -tags scalebench -run '^$' -bench BenchmarkSQLiteGovernedStore -benchtime 4000x ./adapters/sqlite/
//
// MAO_BENCH_GOVERNED_N (default 1000000) and MAO_BENCH_GOVERNED_EXPIRY (default 100) change
// the scope's size and its churn.
func BenchmarkSQLiteGovernedStore(b *testing.B) {
	ctx := context.Background()
	n := governedSize(b)
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
	if err := bulkInsert(ctx, raw, "bench", n, nil); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	rate := governedExpiry(b)
	spacing := time.Second / time.Duration(rate)
	res, err := raw.ExecContext(ctx, `UPDATE memory_items SET stored_at_us = ? - ((SELECT max(seq) FROM memory_items) - seq) * ?
		WHERE scope = 'bench'`, now.UnixMicro(), spacing.Microseconds())
	if err != nil {
		b.Fatalf("spread the store times: %v", err)
	}
	if k, err := res.RowsAffected(); err != nil || k != int64(n) {
		b.Fatalf("spread the store times of %d rows (%v), want %d", k, err, n)
	}
	b.Logf("loaded %d items in %v", n, time.Since(t0).Round(time.Second))
	srv, err := server.New(server.Config{Store: s})
	if err != nil {
		b.Fatal(err)
	}
	policy := memory.RetentionPolicy{MaxAge: time.Duration(n)*spacing - time.Second, MaxItems: 2 * int64(n)}
	g, err := srv.NewGovernor("bench", s, policy, server.QuotaLimits{MaxItems: 4 * int64(n), MaxBytes: 1 << 40, WriteRate: 1e6})
	if err != nil {
		b.Fatal(err)
	}
	storetest.GovernedStores(b, storetest.GovernedArms{
		Plain: func(ctx context.Context, it memory.Item) error {
			_, err := s.Store(ctx, it)
			return err
		},
		Governed: func(ctx context.Context, it memory.Item) error {
			_, err := g.Store(ctx, it)
			return err
		},
		Sweep: g.Sweep,
	})
}
