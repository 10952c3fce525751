package postgres

import (
	"context"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

var (
	_ memory.Sweeper       = (*Store)(nil)
	_ memory.UsageReporter = (*Store)(nil)
)

// Sweep removes the scope's items that p expires at now (memory.Sweeper, relstore.Sweep)
// through the retention index (migration 9). The tag and text index triggers remove each
// row's entries in the same statement, so a removed item leaves retrieve and every search
// when it commits.
func (s *Store) Sweep(ctx context.Context, p memory.RetentionPolicy, now time.Time) (int64, error) {
	return relstore.Sweep(ctx, p, now, relstore.SweepBatch, s.deleteOldest, s.Usage)
}

// deleteOldest is Sweep's relstore.DeleteOldest. The outer condition on the chosen rows'
// newest store time is checked again on a row a concurrent store has just restamped (READ
// COMMITTED re-evaluates it on the new version), so an item written again while the sweep
// chose it is kept: it is fresh.
func (s *Store) deleteOldest(ctx context.Context, cutoff, limit int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// The cutoff is a range on the index, never "$2 < 0 OR ...", which a generic plan cannot
	// bound: it would read on past the expired rows to the end of the scope.
	cond, args := "", []any{s.scope, limit}
	if cutoff >= 0 {
		cond, args = ` AND stored_at_us <= $3`, []any{s.scope, limit, cutoff}
	}
	query := `WITH doomed AS (SELECT id, stored_at_us FROM ` + s.table + `
			WHERE scope = $1 AND kind = 'memory_item'` + cond + ` ORDER BY stored_at_us LIMIT $2)
		DELETE FROM ` + s.table + ` WHERE scope = $1 AND id IN (SELECT id FROM doomed)
			AND stored_at_us <= (SELECT max(stored_at_us) FROM doomed)`
	tag, err := s.pool.Exec(ctx, query, args...)
	if err != nil {
		return 0, s.failed("retention sweep", err)
	}
	return tag.RowsAffected(), nil
}

// Usage counts the scope's memory items and sums their sizes (memory.UsageReporter) from
// the retention index, whose entries carry the size (an index-only scan where the table's
// visibility map allows).
func (s *Store) Usage(ctx context.Context) (memory.Usage, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var u memory.Usage
	err := s.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(size_bytes), 0)::bigint FROM `+s.table+`
		WHERE scope = $1 AND kind = 'memory_item'`, s.scope).Scan(&u.Items, &u.Bytes)
	if err != nil {
		return u, s.failed("usage", err)
	}
	return u, nil
}
