package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// deleteOldest is Sweep's relstore.DeleteOldest, one transaction under the write lock: a
// store cannot restamp a row between its choice and its deletion. It holds the whole sweep
// gate (newSweepGate), so this process's stores wait for it there, woken as it commits.
// The batch is relstore.SweepBatch: with the gate a store waits for one batch at most, and
// each statement is a commit (a WAL sync) and a cold page cache more, so fewer, larger
// batches cost the stores less in all (batches of 32 were 1.08-1.13 on/off at 1M items
// behind the gate, of 250 1.02-1.07). The same transaction compacts the suffix index in
// proportion to what it deleted (compactGrams, migration 7), so the sweep pays for its
// deletions' entries inside its batch, where the stores wait for it anyway.
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
	// _txlock=immediate: the write lock from the start, as the single statement took it.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, classify("retention sweep", err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := s.execOn(ctx, tx, `DELETE FROM memory_items WHERE seq IN (`+oldestSQL(cutoff >= 0)+`)`, args...)
	if err != nil {
		return 0, classify("retention sweep", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, classify("retention sweep", err)
	}
	if err := s.compactGrams(ctx, tx); err != nil {
		return 0, classify("retention sweep: compact the suffix index", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, classify("retention sweep", err)
	}
	return n, nil
}

// Compaction of the suffix index (migration 7): walked entries per dead entry owed, and the
// most one batch walks. A walk of gramWalkPerDead entries per dead one keeps the index's
// dead entries under 1/gramWalkPerDead of it (a quarter; about half that on average, the
// dead seqs of the current pass being spread over the whole key range). The cap bounds a
// batch after a mass delete outside the sweep (the debt is then paid over later batches).
const (
	gramWalkPerDead = 4
	gramWalkMax     = 1 << 16
)

// compactGrams pays the suffix index's debt (memory_item_gram_walk.owed, the entries of rows
// deleted since, as the delete trigger counts them) inside tx: it walks up to owed ×
// gramWalkPerDead entries from the cursor in key order, deleting those of dead seqs, and
// moves the cursor past them. The entries walked are neighbours, a few hundred to a page,
// so a page is read and written once for all its dead entries. At the end of the index the
// walk starts a new pass from the beginning and forgets the seqs whose entries it has all
// walked since their deletion (those recorded for the pass that ended). The debt is then
// cut to what the remaining dead seqs hold, so a mass delete's debt does not outlive its
// entries. When deletions stop, the debt runs out before the pass ends, and the last dead
// seqs' entries wait for the next sweep that deletes: at most a quarter of the index
// (gramWalkPerDead), which costs probes speed only.
func (s *Store) compactGrams(ctx context.Context, tx *sql.Tx) error {
	var (
		cur              gramKey
		pass, owed       int64
		minDead, maxDead sql.NullInt64
	)
	if err := tx.QueryRowContext(ctx, `SELECT scope, gram, seq, pass, owed FROM memory_item_gram_walk`).
		Scan(&cur.scope, &cur.gram, &cur.seq, &pass, &owed); err != nil {
		return fmt.Errorf("read the cursor: %w", err)
	}
	if owed <= 0 {
		return nil
	}
	walk := min(owed*gramWalkPerDead, gramWalkMax)
	// The dead seqs' range is checked before the lookup: a sweep removes the oldest rows,
	// whose seqs are mostly below the live ones', so most entries walked are passed over by
	// a comparison instead of a lookup in the dead seqs' table.
	if err := tx.QueryRowContext(ctx, `SELECT min(seq), max(seq) FROM memory_item_gram_dead`).Scan(&minDead, &maxDead); err != nil {
		return fmt.Errorf("read the dead seqs' range: %w", err)
	}
	var end gramKey
	err := tx.QueryRowContext(ctx, `SELECT scope, gram, seq FROM memory_item_grams
		WHERE (scope, gram, seq) > (?, ?, ?) ORDER BY scope, gram, seq LIMIT 1 OFFSET ?`,
		cur.scope, cur.gram, cur.seq, walk-1).Scan(&end.scope, &end.gram, &end.seq)
	wrapped := errors.Is(err, sql.ErrNoRows)
	if err != nil && !wrapped {
		return fmt.Errorf("walk: %w", err)
	}
	if minDead.Valid {
		query := `DELETE FROM memory_item_grams WHERE (scope, gram, seq) > (?, ?, ?)`
		args := []any{cur.scope, cur.gram, cur.seq}
		if !wrapped {
			query += ` AND (scope, gram, seq) <= (?, ?, ?)`
			args = append(args, end.scope, end.gram, end.seq)
		}
		query += ` AND seq BETWEEN ? AND ? AND seq IN (SELECT seq FROM memory_item_gram_dead)`
		args = append(args, minDead.Int64, maxDead.Int64)
		if _, err := tx.ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("delete dead entries: %w", err)
		}
	}
	if !wrapped {
		_, err := tx.ExecContext(ctx, `UPDATE memory_item_gram_walk SET scope = ?, gram = ?, seq = ?, owed = max(0, owed - ?)`,
			end.scope, end.gram, end.seq, walk/gramWalkPerDead)
		if err != nil {
			return fmt.Errorf("move the cursor: %w", err)
		}
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM memory_item_gram_dead WHERE pass <= ?`, pass); err != nil {
		return fmt.Errorf("forget the dead seqs the pass has walked: %w", err)
	}
	_, err = tx.ExecContext(ctx, `UPDATE memory_item_gram_walk SET scope = '', gram = x'', seq = 0, pass = pass + 1,
		owed = min(max(0, owed - ?), (SELECT coalesce(sum(entries), 0) FROM memory_item_gram_dead))`, walk/gramWalkPerDead)
	if err != nil {
		return fmt.Errorf("start a new pass: %w", err)
	}
	return nil
}

// gramKey is a suffix index entry's key, the compaction's cursor.
type gramKey struct {
	scope string
	gram  []byte
	seq   int64
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
