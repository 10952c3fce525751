//go:build scalebench

package postgres

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// copyLoad streams storetest.BenchItem(0..n-1) into the scope with one COPY, in the row
// format the adapter writes (exact text columns included; the tag index table is filled by
// its trigger), then runs VACUUM ANALYZE on both tables as autovacuum would after a load
// that size. Rows are generated as COPY consumes them, so a 1M load needs no 1M-row slice.
func copyLoad(ctx context.Context, pool *pgxpool.Pool, schema, scope string, n int) error {
	now := time.Now()
	return copyLoadAt(ctx, pool, schema, scope, n, func(int) time.Time { return now })
}

// copyLoadAt is copyLoad with item i stored at storedAt(i).
func copyLoadAt(ctx context.Context, pool *pgxpool.Pool, schema, scope string, n int, storedAt func(int) time.Time) error {
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
		return []any{scope, p.ID, p.CreatedAt, string(p.Metadata), string(p.Content),
			p.SearchText, p.Tags, string(p.Metadata), string(p.Content), storedAt(i - 1).UnixMicro(), p.Size}, nil
	})
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{schema, "memory_items"},
		[]string{"scope", "id", "created_at", "metadata", "content", "search_text", "tags", "metadata_text", "content_text",
			"stored_at_us", "size_bytes"}, src); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	// VACUUM as well: it merges the GIN indexes' pending lists, which every search would
	// otherwise scan in full, and sets the index tables' visibility maps, without which
	// its probes' index-only scans visit the heap for each entry (autovacuum does the same
	// after a large insert).
	for _, table := range []string{"memory_items", "memory_item_tags", "memory_item_text"} {
		if _, err := pool.Exec(ctx, `VACUUM ANALYZE `+pgx.Identifier{schema, table}.Sanitize()); err != nil {
			return fmt.Errorf("vacuum analyze %s: %w", table, err)
		}
	}
	return nil
}

// BenchmarkPostgresScale times storetest.ScaleQueries through the adapter at each scope
// size (sub-benchmarks n=<n>/<query>), loading the scope with copyLoad outside the timed
// part. With MAO_BENCH_EXPLAIN_DIR set it writes each query's EXPLAIN ANALYZE (the plan for
// the benchmark's own parameter values) to <dir>/postgres-n<n>-<query>.txt. Opt-in, behind
// the scalebench build tag (hack/perf/scale.sh runs it and writes docs/perf/postgres-scale.md):
//
//	go test -tags scalebench -run '^$' -bench BenchmarkPostgresScale -benchtime 200x ./adapters/postgres/
func BenchmarkPostgresScale(b *testing.B) {
	storetest.Scale(b, "postgres", func(b *testing.B, n int) storetest.ScaleScope {
		ctx := context.Background()
		s, raw, schema := benchSchema(b, "mao_scale_")
		if err := copyLoad(ctx, raw, schema, "bench", n); err != nil {
			b.Fatal(err)
		}
		return storetest.ScaleScope{
			Store:  s,
			Loader: "COPY and VACUUM ANALYZE",
			Backend: func(ctx context.Context) (string, error) {
				return relationSizes(ctx, raw, schema)
			},
			Explain: func(ctx context.Context, q memory.Query, path string) error {
				c, err := s.candidates(ctx, raw, q)
				if err != nil {
					return fmt.Errorf("index probes: %w", err)
				}
				seqs := c.seqs
				// The index probes run first; their plans are part of the shape's.
				var probe string
				if tags := storableTags(q.Tags); len(tags) > 0 {
					if probe, err = explainText(ctx, raw, s.tagProbeSQL(), []any{"bench", tags, relstore.TagProbeLimit + 1}); err != nil {
						return err
					}
				}
				if tagSeqs, err := s.tagCandidates(ctx, raw, q.Tags); err == nil && (tagSeqs.seqs == nil || len(tagSeqs.seqs) > 0) && q.Text != nil {
					if lo, hi := relstore.TextRanges(memory.Needle(*q.Text)); lo != nil {
						text, err := explainText(ctx, raw, s.textProbeSQL(), []any{"bench", lo, hi, relstore.TagProbeLimit + 1})
						if err != nil {
							return err
						}
						probe += text
					}
				}
				if seqs != nil && len(seqs) == 0 {
					return os.WriteFile(path, []byte(probe+"\n-- no further statement: the indexes hold none of the query's tags or text\n"), 0o644)
				}
				if seqs != nil {
					// The plan of the first chunk, the statement Search sends first.
					seqs = seqs[:firstChunk(q.Limit, len(seqs))]
				}
				sqlText, args, _ := s.buildSearch(q, seqs, 0)
				text, err := explainText(ctx, raw, sqlText, args)
				if err != nil {
					return err
				}
				if probe != "" {
					text = probe + "\n" + text
				}
				return os.WriteFile(path, []byte(text), 0o644)
			},
		}
	})
}

// relationSizes describes the on-disk size of the scope's table and of each index table
// (heap and indexes), which is what the text index costs per item.
func relationSizes(ctx context.Context, pool *pgxpool.Pool, schema string) (string, error) {
	var out []string
	for _, table := range []string{"memory_items", "memory_item_tags", "memory_item_text"} {
		var heap, indexes int64
		q := pgx.Identifier{schema, table}.Sanitize()
		if err := pool.QueryRow(ctx, `SELECT pg_table_size($1::regclass), pg_indexes_size($1::regclass)`, q).Scan(&heap, &indexes); err != nil {
			return "", fmt.Errorf("size of %s: %w", table, err)
		}
		out = append(out, fmt.Sprintf("%s %d MB + indexes %d MB", table, heap>>20, indexes>>20))
	}
	return strings.Join(out, ", "), nil
}

// explainText returns the statement and its EXPLAIN ANALYZE plan: estimated and actual rows
// side by side (what decides the plan), without timings, which this machine's load makes
// meaningless.
func explainText(ctx context.Context, pool *pgxpool.Pool, sqlText string, args []any) (string, error) {
	rows, err := pool.Query(ctx, `EXPLAIN (ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF) `+sqlText, args...)
	if err != nil {
		return "", fmt.Errorf("explain: %w", err)
	}
	defer rows.Close()
	var out strings.Builder
	fmt.Fprintf(&out, "%s\n-- arguments: %v\n\n", sqlText, args)
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", fmt.Errorf("explain: %w", err)
		}
		out.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("explain: %w", err)
	}
	return out.String(), nil
}
