package sqlite

import (
	"context"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// sweepGateSize is the sweep gate's weight: a store holds one unit, a sweep batch all of
// them, so a batch runs alone and stores run beside each other.
const sweepGateSize = 1 << 30

// newSweepGate returns the gate through which this process's stores and retention sweep
// take SQLite's one write lock. Without it a store that meets a sweep batch sleeps in
// SQLite's busy handler, whose steps (1, 2, 5, 10, 15, 20 ms ...) overshoot a batch of a
// few milliseconds several-fold, and the sweep sleeps there behind the stores, each
// batch's wait costing the stores again (BenchmarkSQLiteGovernedStore: 1.12 on/off at 1M
// items without it). The gate is first come, first served: a waiting batch holds back the
// stores that come after it, and the stores waiting when a batch ends go before the next.
// Stores still meet each other, and other processes, in SQLite's busy handler, as before.
func newSweepGate() *semaphore.Weighted { return semaphore.NewWeighted(sweepGateSize) }

// awaitSweep waits until no sweep batch runs or waits before this store, and takes a
// store's unit of the gate (the caller releases it). The wait is bounded like SQLite's
// busy timeout, four fifths of the request timeout, so a store held up by a sweep fails as
// unavailable, saying so, before its deadline.
func (s *Store) awaitSweep(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout*4/5)
	defer cancel()
	if err := s.sweepGate.Acquire(ctx, 1); err != nil {
		return memory.NewUnavailable("sqlite: store: waiting for a retention sweep's batch", err)
	}
	return nil
}

var (
	_ memory.Sweeper       = (*Store)(nil)
	_ memory.UsageReporter = (*Store)(nil)
)

// Sweep removes the scope's items that p expires at now (memory.Sweeper, relstore.Sweep)
// through the retention index (migration 5). The index triggers remove each row's tag and
// text entries in the same statement, so a removed item leaves retrieve and every search at
// once.
func (s *Store) Sweep(ctx context.Context, p memory.RetentionPolicy, now time.Time) (int64, error) {
	return relstore.Sweep(ctx, p, now, relstore.SweepBatch, s.deleteOldest, s.Usage)
}

// deleteOldest is Sweep's relstore.DeleteOldest, one statement under the write lock: a
// store cannot restamp a row between its choice and its deletion. It holds the whole sweep
// gate (newSweepGate), so this process's stores wait for it there, woken as it commits.
// The batch is relstore.SweepBatch: with the gate a store waits for one batch at most, and
// each statement is a commit (a WAL sync) and a cold page cache more, so fewer, larger
// batches cost the stores less in all (batches of 32 were 1.08-1.13 on/off at 1M items
// behind the gate, of 250 1.02-1.07).
func (s *Store) deleteOldest(ctx context.Context, cutoff, limit int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.sweepGate.Acquire(ctx, sweepGateSize); err != nil {
		return 0, memory.NewUnavailable("sqlite: retention sweep: waiting for the stores in flight", err)
	}
	defer s.sweepGate.Release(sweepGateSize)
	args := []any{s.scope, limit}
	if cutoff >= 0 {
		args = []any{s.scope, cutoff, limit}
	}
	res, err := s.exec(ctx, `DELETE FROM memory_items WHERE seq IN (`+oldestSQL(cutoff >= 0)+`)`, args...)
	if err != nil {
		return 0, classify("retention sweep", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, classify("retention sweep", err)
	}
	return n, nil
}

// oldestSQL selects the seqs of the scope's oldest memory rows up to a limit, those stored at
// or before a cutoff when byAge (arguments: scope, [cutoff,] limit). The cutoff is a range on
// the retention index, never "? < 0 OR ...", which the planner cannot bound: it would read
// on past the expired rows to the end of the scope. The order is the index's own, so the
// statement stops at the limit without sorting.
func oldestSQL(byAge bool) string {
	cond := ""
	if byAge {
		cond = ` AND stored_at_us <= ?`
	}
	return `SELECT seq FROM memory_items INDEXED BY memory_items_retention
		WHERE scope = ? AND kind = 'memory_item'` + cond + ` ORDER BY stored_at_us LIMIT ?`
}

// Usage counts the scope's memory items and sums their sizes (memory.UsageReporter) from
// the retention index alone, without reading a row.
func (s *Store) Usage(ctx context.Context) (memory.Usage, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	const query = `SELECT count(*), coalesce(sum(size_bytes), 0) FROM memory_items INDEXED BY memory_items_retention
		WHERE scope = ? AND kind = 'memory_item'`
	s.traceSQL(query, []any{s.scope})
	var u memory.Usage
	if err := s.db.QueryRowContext(ctx, query, s.scope).Scan(&u.Items, &u.Bytes); err != nil {
		return u, classify("usage", err)
	}
	return u, nil
}
