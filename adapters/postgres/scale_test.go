//go:build scalebench

package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// scaleSizes reads MAO_BENCH_SCALE_SIZES (comma-separated item counts); the default leaves
// out the 1M scope, whose load takes minutes on a small machine.
func scaleSizes(b *testing.B) []int {
	spec := os.Getenv("MAO_BENCH_SCALE_SIZES")
	if spec == "" {
		spec = "10000,100000"
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 5000 {
			b.Fatalf("MAO_BENCH_SCALE_SIZES: %q is not a count of at least 5000", f)
		}
		out = append(out, n)
	}
	return out
}

// scaleQueries are the searches the scale benchmark times, in order, all with limit 20, over
// storetest.BenchItem data: the tag t42 is on 1 % of items, the filter source s3 on 10 %,
// the filter branch_id 4242 on one item, the tag t42 with the filter source s2 on 1 % (every
// t42 item is s2), the text "w7 " on 2 %, the text "item 4242 lorem" on one item, and the
// empty query matches everything.
func scaleQueries() []struct {
	name string
	q    memory.Query
} {
	s := func(v string) json.RawMessage { return json.RawMessage(strconv.Quote(v)) }
	return []struct {
		name string
		q    memory.Query
	}{
		{"tag", memory.Query{Tags: []string{"t42"}, Limit: 20}},
		{"filter", memory.Query{Filters: map[string]json.RawMessage{"source": s("s3")}, Limit: 20}},
		{"filter-rare", memory.Query{Filters: map[string]json.RawMessage{"branch_id": json.RawMessage(`4242`)}, Limit: 20}},
		{"tag+filter", memory.Query{Tags: []string{"t42"}, Filters: map[string]json.RawMessage{"source": s("s2")}, Limit: 20}},
		{"text", memory.Query{Text: storetest.Text("W7 "), Limit: 20}},
		{"text-rare", memory.Query{Text: storetest.Text("item 4242 lorem"), Limit: 20}},
		{"empty", memory.Query{Limit: 20}},
	}
}

// copyLoad streams storetest.BenchItem(0..n-1) into the scope with one COPY, in the row
// format the adapter writes (exact text columns included), then runs VACUUM ANALYZE as
// autovacuum would after a load that size. Rows are generated as COPY consumes them, so a
// 1M load needs no 1M-row slice.
func copyLoad(ctx context.Context, pool *pgxpool.Pool, schema, scope string, n int) error {
	i := 0
	var p relstore.Prepared
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		var err error
		if p, err = relstore.Prepare(storetest.BenchItem(i), relstore.Rules{RejectNUL: true}); err != nil {
			return nil, err
		}
		i++
		return []any{scope, p.ID, time.UnixMicro(p.CreatedAtMicros).UTC(), string(p.Metadata), string(p.Content),
			p.SearchText, p.Tags, string(p.Metadata), string(p.Content)}, nil
	})
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{schema, "memory_items"},
		[]string{"scope", "id", "created_at", "metadata", "content", "search_text", "tags", "metadata_text", "content_text"}, src); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	// VACUUM as well: it merges the GIN indexes' pending lists, which every search would
	// otherwise scan in full (autovacuum does the same after a large insert).
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE `+pgx.Identifier{schema, "memory_items"}.Sanitize()); err != nil {
		return fmt.Errorf("vacuum analyze: %w", err)
	}
	return nil
}

// BenchmarkPostgresScale times each of scaleQueries through the adapter at each scope size
// (sub-benchmarks n=<n>/<query>), loading the scope with copyLoad outside the timed part.
// With MAO_BENCH_EXPLAIN_DIR set it writes each query's EXPLAIN ANALYZE (the plan for the
// benchmark's own parameter values) to <dir>/postgres-n<n>-<query>.txt. Opt-in, behind the
// scalebench build tag (hack/perf/scale.sh runs it and writes docs/performance.md's table):
//
//	go test -tags scalebench -run '^$' -bench BenchmarkPostgresScale -benchtime 200x ./adapters/postgres/
func BenchmarkPostgresScale(b *testing.B) {
	ctx := context.Background()
	for _, n := range scaleSizes(b) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s, raw, schema := benchSchema(b, "mao_scale_")
			start := time.Now()
			if err := copyLoad(ctx, raw, schema, "bench", n); err != nil {
				b.Fatal(err)
			}
			b.Logf("loaded %d items with COPY and VACUUM ANALYZE in %s", n, time.Since(start).Round(time.Millisecond))
			for _, sq := range scaleQueries() {
				if dir := os.Getenv("MAO_BENCH_EXPLAIN_DIR"); dir != "" {
					sqlText, args, _ := s.buildSearch(sq.q)
					if err := explain(ctx, raw, sqlText, args, filepath.Join(dir, fmt.Sprintf("postgres-n%d-%s.txt", n, sq.name))); err != nil {
						b.Fatal(err)
					}
				}
				b.Run(sq.name, func(b *testing.B) {
					for b.Loop() {
						if hits, err := s.Search(ctx, sq.q); err != nil || len(hits) == 0 {
							b.Fatal(len(hits), err)
						}
					}
				})
			}
		})
	}
}

// explain writes the statement and its EXPLAIN ANALYZE plan to path: estimated and actual
// rows side by side (what decides the plan), without timings, which this machine's load
// makes meaningless.
func explain(ctx context.Context, pool *pgxpool.Pool, sqlText string, args []any, path string) error {
	rows, err := pool.Query(ctx, `EXPLAIN (ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF) `+sqlText, args...)
	if err != nil {
		return fmt.Errorf("explain: %w", err)
	}
	defer rows.Close()
	var out strings.Builder
	fmt.Fprintf(&out, "%s\n-- arguments: %v\n\n", sqlText, args)
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		out.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
}
