package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/relstore"
)

// benchItem is item i of the benchmark data set: the text word w<i%50> hits 2% of items, the
// tag t<i%100> 1%, the filter source s<i%10> 10%.
func benchItem(i int) memory.Item {
	it := memory.NewItem(json.RawMessage(fmt.Sprintf(`{"text":"item %d lorem ipsum w%d dolor"}`, i, i%50)),
		fmt.Sprintf("t%d", i%100), "common")
	it.Metadata["source"] = json.RawMessage(fmt.Sprintf(`"s%d"`, i%10))
	it.Metadata["branch_id"] = json.RawMessage(fmt.Sprint(i))
	return it
}

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
		p, err := relstore.Prepare(benchItem(i), relstore.Rules{})
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
//	go test -run '^$' -bench BenchmarkSQLite -benchtime 2000x ./adapters/sqlite/
func BenchmarkSQLite(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "bench.db")
			s, err := Open(ctx, Options{Path: path, Scope: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			raw, err := sql.Open("sqlite", dsn(path, "rw"))
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			ids := bulkLoad(b, raw, "bench", n)

			b.Run("store/adapter", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, err := s.Store(ctx, benchItem(n+i)); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("store/driver", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					it := benchItem(n + i)
					if _, err := raw.ExecContext(ctx, `INSERT INTO memory_items
						(scope, id, kind, created_at_us, metadata, content, search_text, tags)
						VALUES (?, ?, 'memory_item', ?, ?, ?, ?, ?)
						ON CONFLICT (scope, id) DO UPDATE SET content = excluded.content`,
						"bench", it.ID.String(), it.CreatedAt.UnixMicro(), `{"source":"s1","branch_id":1}`,
						string(it.Content), "item lorem", `["t1","common"]`); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("retrieve/adapter", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if it, err := s.Retrieve(ctx, ids[i%n]); err != nil || it == nil {
						b.Fatal(it, err)
					}
				}
			})
			b.Run("retrieve/driver", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					var kind, meta, content, tags string
					var us int64
					if err := raw.QueryRowContext(ctx, `SELECT kind, created_at_us, metadata, content, tags
						FROM memory_items WHERE scope = ? AND id = ?`, "bench", ids[i%n].String()).
						Scan(&kind, &us, &meta, &content, &tags); err != nil {
						b.Fatal(err)
					}
				}
			})
			queries := map[string]memory.Query{
				"text":   {Text: ptr("W7 "), Limit: 20},
				"tags":   {Tags: []string{"t42"}, Limit: 20},
				"filter": {Filters: map[string]json.RawMessage{"source": json.RawMessage(`"s3"`)}, Limit: 20},
			}
			for _, name := range []string{"text", "tags", "filter"} {
				q := queries[name]
				b.Run("search-"+name+"/adapter", func(b *testing.B) {
					for b.Loop() {
						if hits, err := s.Search(ctx, q); err != nil || len(hits) == 0 {
							b.Fatal(len(hits), err)
						}
					}
				})
				sqlText, args, _ := buildSearch("bench", q)
				b.Run("search-"+name+"/driver", func(b *testing.B) {
					for b.Loop() {
						rows, err := raw.QueryContext(ctx, sqlText, args...)
						if err != nil {
							b.Fatal(err)
						}
						count := 0
						for rows.Next() {
							var id, meta, content, tags string
							var us int64
							if err := rows.Scan(&id, &us, &meta, &content, &tags); err != nil {
								b.Fatal(err)
							}
							count++
						}
						rows.Close()
						if count == 0 {
							b.Fatal(count)
						}
					}
				})
			}
		})
	}
}
