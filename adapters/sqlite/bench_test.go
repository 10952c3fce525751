package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// bulkLoad inserts BenchItem(0..n-1) with bulkInsert and returns their ids in order.
func bulkLoad(b *testing.B, db *sql.DB, scope string, n int) []uuid.UUID {
	b.Helper()
	ids := make([]uuid.UUID, 0, n)
	if err := bulkInsert(context.Background(), db, scope, n, func(id uuid.UUID) { ids = append(ids, id) }); err != nil {
		b.Fatal(err)
	}
	return ids
}

// bulkInsert inserts storetest.BenchItem(0..n-1) in one transaction of one prepared
// statement, in the adapter's own row format (relstore.Prepare, insertRow, rowArgs), which is
// what keeps a 1M-item setup fast; each inserted id is passed to loaded when it is set.
func bulkInsert(ctx context.Context, db *sql.DB, scope string, n int, loaded func(uuid.UUID)) error {
	now := time.Now()
	return bulkInsertAt(ctx, db, scope, n, loaded, func(int) time.Time { return now })
}

// bulkInsertAt is bulkInsert with item i stored at storedAt(i).
func bulkInsertAt(ctx context.Context, db *sql.DB, scope string, n int, loaded func(uuid.UUID), storedAt func(int) time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.PrepareContext(ctx, insertRow)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	defer stmt.Close()
	for i := range n {
		p, err := relstore.Prepare(storetest.BenchItem(i), relstore.Rules{})
		if err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		if _, err := stmt.ExecContext(ctx, rowArgs(scope, p, storedAt(i))...); err != nil {
			return fmt.Errorf("insert item %d: %w", i, err)
		}
		if loaded != nil {
			loaded(p.ID)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// decodePlain is storetest.DecodePlain for SQLite's columns: created_at's text and a JSON
// tag array.
func decodePlain(id uuid.UUID, createdAt, meta, content, tagsJ string) (memory.Item, error) {
	var tags []string
	if err := json.Unmarshal([]byte(tagsJ), &tags); err != nil {
		return memory.Item{}, err
	}
	ts, err := strconv.ParseFloat(createdAt, 64)
	if err != nil {
		return memory.Item{}, err
	}
	return storetest.DecodePlain(id, ts, meta, content, tags)
}

// BenchmarkSQLite measures each adapter operation beside a "driver" baseline that runs the
// equivalent SQL on a plain database/sql handle and decodes the same columns with plain
// encoding/json, so adapter/driver is the adapter's overhead (validation, JSON compaction,
// checks of what it reads, timeouts, error mapping). Each step opens both afresh over the
// loaded file (storetest.Bench says why).
//
//	hack/perf/ratios.sh ./adapters/sqlite/ BenchmarkSQLite 1000x 5
func BenchmarkSQLite(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, n int) (storetest.BenchOpen, []uuid.UUID) {
		path := filepath.Join(b.TempDir(), "bench.db")
		// Open creates the schema; the load goes through a handle of its own, closed
		// before any step opens the file, as the adapter opens it, again.
		s := openBenchStore(b, path)
		raw := openBenchDriver(b, path)
		ids := bulkLoad(b, raw, "bench", n)
		if err := raw.Close(); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		return func(b *testing.B) (memory.Store, storetest.BenchDriver) {
			return openBenchStore(b, path), benchDriver(b, openBenchDriver(b, path))
		}, ids
	})
}

// openBenchStore opens the adapter on path's scope "bench", closed when b ends.
func openBenchStore(b *testing.B, path string) *Store {
	b.Helper()
	s, err := Open(context.Background(), Options{Path: path, Scope: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// openBenchDriver opens a plain database/sql handle with the adapter's connection settings,
// closed when b ends.
func openBenchDriver(b *testing.B, path string) *sql.DB {
	b.Helper()
	raw, err := sql.Open("sqlite", dsn(path, "rw", DefaultRequestTimeout))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = raw.Close() })
	return raw
}

// benchDriver is the driver baseline over raw.
func benchDriver(b *testing.B, raw *sql.DB) storetest.BenchDriver {
	b.Helper()
	// The same statement, prepared once, as the adapter does.
	retrieve, err := raw.Prepare(retrieveSQL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = retrieve.Close() })
	return storetest.BenchDriver{
		Store: func(ctx context.Context, it memory.Item) error {
			// The same row the adapter writes, encoded plainly.
			meta, err := json.Marshal(it.Metadata)
			if err != nil {
				return err
			}
			tags, err := json.Marshal(it.Tags)
			if err != nil {
				return err
			}
			_, err = raw.ExecContext(ctx, `INSERT INTO memory_items
				(scope, id, kind, created_at, metadata, content, search_text, tags)
				VALUES (?, ?, 'memory_item', ?, ?, ?, ?, ?)
				ON CONFLICT (scope, id) DO UPDATE SET content = excluded.content`,
				"bench", it.ID.String(), strconv.FormatFloat(it.CreatedAt, 'g', -1, 64), string(meta),
				string(it.Content), memory.SearchText(it.Content), string(tags))
			return err
		},
		Retrieve: func(ctx context.Context, id uuid.UUID) error {
			var kind, createdAt, meta, content, tags string
			if err := retrieve.QueryRowContext(ctx, "bench", id.String()).
				Scan(&kind, &createdAt, &meta, &content, &tags); err != nil {
				return err
			}
			_, err := decodePlain(id, createdAt, meta, content, tags)
			return err
		},
		Search: func(q memory.Query) (func(context.Context) (int, error), error) {
			for k, v := range q.Filters {
				if len(v) == 0 || v[0] != '"' {
					// A number filter takes singleNumbers' probe too, which the baseline lacks.
					return nil, fmt.Errorf("filter %s: only string filter values are benchmarked", k)
				}
			}
			return func(ctx context.Context) (int, error) {
				// The adapter's own index probes (planSearch), so that the baseline's
				// statement reads the rows the adapter's does.
				plan, err := planIndexes(ctx, raw, nil, "bench", q)
				if err != nil {
					return 0, err
				}
				if plan.none {
					return 0, nil
				}
				sqlText, args, exact := buildSearchWith("bench", q, plan)
				if !exact {
					// Its rows would then be candidates for a check in Go the baseline lacks.
					return 0, fmt.Errorf("query %+v is not decided by SQL alone", q)
				}
				rows, err := raw.QueryContext(ctx, sqlText, args...)
				if err != nil {
					return 0, err
				}
				defer rows.Close()
				count := 0
				for rows.Next() {
					var idS, createdAt, meta, content, tags string
					if err := rows.Scan(&idS, &createdAt, &meta, &content, &tags); err != nil {
						return count, err
					}
					id, err := uuid.Parse(idS)
					if err != nil {
						return count, err
					}
					if _, err := decodePlain(id, createdAt, meta, content, tags); err != nil {
						return count, err
					}
					count++
				}
				return count, rows.Err()
			}, nil
		},
	}
}
