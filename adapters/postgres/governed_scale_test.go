//go:build scalebench

package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	maserver "github.com/agentmem/memory-adapter-operator/internal/server"
)

// BenchmarkPostgresGovernedStore times a store with retention and quotas on (a Governor:
// every quota checked, a max-age sweep every storetest.GovernedSweepEvery) against off, in
// one run (storetest.GovernedStores; issue 46's goal is on/off <= 1.10) over a
// storetest.GovernedScope loaded with COPY: the first sweep removes the load's oldest
// second and every later one what expired since, as a scope under steady churn. Opt-in,
// behind the scalebench build tag:
//
//	go test -tags scalebench -run '^$' -bench BenchmarkPostgresGovernedStore -benchtime 4000x ./adapters/postgres/
//
// MAO_BENCH_GOVERNED_N (default 1000000) and MAO_BENCH_GOVERNED_EXPIRY (default 100) change
// the scope's size and its churn.
func BenchmarkPostgresGovernedStore(b *testing.B) {
	ctx := context.Background()
	scope := storetest.NewGovernedScope(b)
	s, raw, schema := benchSchema(b, "mao_governed_")
	t0 := time.Now()
	if err := copyLoadAt(ctx, raw, schema, "bench", scope.N, scope.StoredAt); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d items in %v", scope.N, time.Since(t0).Round(time.Second))
	srv, err := maserver.New(maserver.Config{Store: s})
	if err != nil {
		b.Fatal(err)
	}
	g, err := srv.NewGovernor("bench", s, scope.Policy(), maserver.QuotaLimits{MaxItems: 4 * int64(scope.N), MaxBytes: 1 << 40, WriteRate: 1e6})
	if err != nil {
		b.Fatal(err)
	}
	storetest.GovernedStores(b, s, g)
}
