package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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

// bulkLoad copies n items in the adapter's row format with COPY, which keeps the 100k setup
// fast.
func bulkLoad(b *testing.B, pool *pgxpool.Pool, schema, scope string, n int) []uuid.UUID {
	b.Helper()
	ids := make([]uuid.UUID, n)
	rows := make([][]any, n)
	for i := range n {
		p, err := relstore.Prepare(benchItem(i), relstore.Rules{RejectNUL: true})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = p.ID
		rows[i] = []any{scope, p.ID, time.UnixMicro(p.CreatedAtMicros), string(p.Metadata), string(p.Content), p.SearchText, p.Tags}
	}
	_, err := pool.CopyFrom(context.Background(), pgx.Identifier{schema, "memory_items"},
		[]string{"scope", "id", "created_at", "metadata", "content", "search_text", "tags"}, pgx.CopyFromRows(rows))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), `ANALYZE `+pgx.Identifier{schema, "memory_items"}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	return ids
}

// BenchmarkPostgres measures each adapter operation beside a "driver" baseline that runs the
// equivalent SQL on a plain pgx pool and scans raw columns, so adapter/driver is the
// adapter's overhead (validation, JSON compaction and decoding, error mapping).
//
//	go test -run '^$' -bench BenchmarkPostgres -benchtime 1000x ./adapters/postgres/
func BenchmarkPostgres(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			schema := "mao_bench_" + randomHex(6)
			s, err := Open(ctx, Options{URL: testURL, Scope: "bench", Schema: schema})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			raw, err := pgxpool.New(ctx, testURL)
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			defer func() {
				_, _ = raw.Exec(ctx, `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			}()
			ids := bulkLoad(b, raw, schema, "bench", n)
			table := pgx.Identifier{schema, "memory_items"}.Sanitize()

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
					if _, err := raw.Exec(ctx, `INSERT INTO `+table+`
						(scope, id, kind, created_at, metadata, content, search_text, tags)
						VALUES ($1, $2, 'memory_item', $3, $4::jsonb, $5::jsonb, $6, $7)
						ON CONFLICT (scope, id) DO UPDATE SET content = excluded.content`,
						"bench", it.ID, it.CreatedAt, `{"source":"s1","branch_id":1}`, string(it.Content), "item lorem",
						[]string{"t1", "common"}); err != nil {
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
					var kind, meta, content string
					var ts time.Time
					var tags []string
					if err := raw.QueryRow(ctx, `SELECT kind, created_at, metadata::text, content::text, tags
						FROM `+table+` WHERE scope = $1 AND id = $2`, "bench", ids[i%n]).
						Scan(&kind, &ts, &meta, &content, &tags); err != nil {
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
				sqlText, args, _ := s.buildSearch(q)
				b.Run("search-"+name+"/driver", func(b *testing.B) {
					for b.Loop() {
						rows, err := raw.Query(ctx, sqlText, args...)
						if err != nil {
							b.Fatal(err)
						}
						count := 0
						for rows.Next() {
							var id uuid.UUID
							var ts time.Time
							var meta, content string
							var tags []string
							if err := rows.Scan(&id, &ts, &meta, &content, &tags); err != nil {
								b.Fatal(err)
							}
							count++
						}
						rows.Close()
						if rows.Err() != nil || count == 0 {
							b.Fatal(count, rows.Err())
						}
					}
				})
			}
		})
	}
}
