package sqlite

import (
	"context"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// sweepBatch is SQLite's retention batch: every statement holds the one write lock that
// stores wait for, so short statements keep a store's wait short (BenchmarkSQLiteGovernedStore).
const sweepBatch = 32

var (
	_ memory.Sweeper       = (*Store)(nil)
	_ memory.UsageReporter = (*Store)(nil)
)

// Sweep removes the scope's items that p expires at now (memory.Sweeper, relstore.Sweep)
// through the retention index (migration 5). The index triggers remove each row's tag and
// text entries in the same statement, so a removed item leaves retrieve and every search at
// once.
func (s *Store) Sweep(ctx context.Context, p memory.RetentionPolicy, now time.Time) (int64, error) {
	return relstore.Sweep(ctx, p, now, sweepBatch, s.deleteOldest, s.Usage)
}

// deleteOldest is Sweep's relstore.DeleteOldest, one statement under the write lock: a
// store cannot restamp a row between its choice and its deletion.
func (s *Store) deleteOldest(ctx context.Context, cutoff, limit int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
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
