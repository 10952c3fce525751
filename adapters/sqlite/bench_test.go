package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// bulkLoad inserts n items in one transaction with the adapter's row format, which is what
// keeps the 100k setup fast.
func bulkLoad(b *testing.B, db *sql.DB, scope string, n int) []uuid.UUID {
	b.Helper()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	stmt, err := tx.Prepare(`INSERT INTO memory_items (scope, id, kind, created_at_us, metadata, content, search_text, tags)
		VALUES (?, ?, 'memory_item', ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]uuid.UUID, n)
	for i := range n {
		p, err := relstore.Prepare(storetest.BenchItem(i), relstore.Rules{})
		if err != nil {
			b.Fatal(err)
		}
		tags, _ := json.Marshal(p.Tags)
		if _, err := stmt.Exec(scope, p.ID.String(), p.CreatedAtMicros, string(p.Metadata), string(p.Content), p.SearchText, string(tags)); err != nil {
			b.Fatal(err)
		}
		ids[i] = p.ID
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return ids
}

// BenchmarkSQLite measures each adapter operation beside a "driver" baseline that runs the
// equivalent SQL on a plain database/sql handle and scans raw columns, so adapter/driver is
// the adapter's overhead (validation, JSON compaction and decoding, error mapping).
//
//	go test -run '^$' -bench BenchmarkSQLite -benchtime 1000x -count 3 ./adapters/sqlite/
func BenchmarkSQLite(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, n int) (memory.Store, storetest.BenchDriver, []uuid.UUID) {
		ctx := context.Background()
		path := filepath.Join(b.TempDir(), "bench.db")
		s, err := Open(ctx, Options{Path: path, Scope: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		raw, err := sql.Open("sqlite", dsn(path, "rw", DefaultRequestTimeout))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = raw.Close() })
		ids := bulkLoad(b, raw, "bench", n)
		return s, storetest.BenchDriver{
			Store: func(ctx context.Context, it memory.Item) error {
				_, err := raw.ExecContext(ctx, `INSERT INTO memory_items
					(scope, id, kind, created_at_us, metadata, content, search_text, tags)
					VALUES (?, ?, 'memory_item', ?, ?, ?, ?, ?)
					ON CONFLICT (scope, id) DO UPDATE SET content = excluded.content`,
					"bench", it.ID.String(), it.CreatedAt.UnixMicro(), `{"source":"s1","branch_id":1}`,
					string(it.Content), "item lorem", `["t1","common"]`)
				return err
			},
			Retrieve: func(ctx context.Context, id uuid.UUID) error {
				var kind, meta, content, tags string
				var us int64
				return raw.QueryRowContext(ctx, `SELECT kind, created_at_us, metadata, content, tags
					FROM memory_items WHERE scope = ? AND id = ?`, "bench", id.String()).
					Scan(&kind, &us, &meta, &content, &tags)
			},
			Search: func(q memory.Query) func(context.Context) (int, error) {
				sqlText, args, _ := buildSearch("bench", q)
				return func(ctx context.Context) (int, error) {
					rows, err := raw.QueryContext(ctx, sqlText, args...)
					if err != nil {
						return 0, err
					}
					defer rows.Close()
					count := 0
					for rows.Next() {
						var id, meta, content, tags string
						var us int64
						if err := rows.Scan(&id, &us, &meta, &content, &tags); err != nil {
							return count, err
						}
						count++
					}
					return count, rows.Err()
				}
			},
		}, ids
	})
}
