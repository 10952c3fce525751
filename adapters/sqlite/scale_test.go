//go:build scalebench

package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// scaleRequestTimeout replaces DefaultRequestTimeout in the scale benchmark.
const scaleRequestTimeout = 10 * time.Minute

// BenchmarkSQLiteScale times storetest.ScaleQueries through the adapter at each scope size
// (sub-benchmarks n=<n>/<query>), loading a fresh database file with bulkInsert (one
// transaction, the adapter's row format) outside the timed part. The loader runs no ANALYZE,
// as the adapter never does. With MAO_BENCH_EXPLAIN_DIR set it writes each query's EXPLAIN
// QUERY PLAN to <dir>/sqlite-n<n>-<query>.txt. The process's RSS that storetest.Scale logs
// is the adapter's own, SQLite being embedded. Opt-in, behind the scalebench build tag
// (hack/perf/scale.sh sqlite runs it and writes docs/perf/sqlite-scale.md):
//
//	go test -tags scalebench -run '^$' -bench BenchmarkSQLiteScale -benchtime 1s ./adapters/sqlite/
func BenchmarkSQLiteScale(b *testing.B) {
	storetest.Scale(b, "sqlite", func(b *testing.B, n int) storetest.ScaleScope {
		ctx := context.Background()
		path := filepath.Join(b.TempDir(), "scale.db")
		// The default 5 s request timeout cuts off the searches that walk the whole scope
		// (a rare number filter at 1M items takes longer on a loaded 2-core machine, and then
		// fails with MemoryAdapterUnavailable); the benchmark measures them instead.
		s, err := Open(ctx, Options{Path: path, Scope: "bench", RequestTimeout: scaleRequestTimeout})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		raw, err := sql.Open("sqlite", dsn(path, "rw", DefaultRequestTimeout))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = raw.Close() })
		if err := bulkInsert(ctx, raw, "bench", n, nil); err != nil {
			b.Fatal(err)
		}
		return storetest.ScaleScope{
			Store:  s,
			Loader: "one transaction of prepared inserts",
			Explain: func(ctx context.Context, q memory.Query, path string) error {
				plan, err := s.planSearch(ctx, q)
				if err != nil {
					return err
				}
				if plan.none {
					return os.WriteFile(path, []byte("-- no statement: the tag or text index holds no row for the query (a probe answered [])\n"), 0o644)
				}
				sqlText, args, _ := buildSearchWith("bench", q, plan)
				return explainQueryPlan(ctx, raw, sqlText, args, path)
			},
			Backend: func(ctx context.Context) (string, error) {
				files, err := fileSizes(path, path+"-wal")
				if err != nil {
					return "", err
				}
				tables, err := tableSizes(ctx, raw)
				return files + "; " + tables, err
			},
		}
	})
}

// explainQueryPlan writes the statement, its arguments and its EXPLAIN QUERY PLAN, one
// indented line per plan node, to path.
func explainQueryPlan(ctx context.Context, db *sql.DB, sqlText string, args []any, path string) error {
	rows, err := db.QueryContext(ctx, `EXPLAIN QUERY PLAN `+sqlText, args...)
	if err != nil {
		return fmt.Errorf("explain query plan: %w", err)
	}
	defer rows.Close()
	var out strings.Builder
	fmt.Fprintf(&out, "%s\n-- arguments: %v\n\n", sqlText, args)
	depth := map[int]int{}
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return fmt.Errorf("explain query plan: %w", err)
		}
		d := 0
		if pd, ok := depth[parent]; ok {
			d = pd + 1
		}
		depth[id] = d
		fmt.Fprintf(&out, "%s%s\n", strings.Repeat("  ", d), detail)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("explain query plan: %w", err)
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
}

// fileSizes describes the sizes of the database file and its write-ahead log.
func fileSizes(paths ...string) (string, error) {
	parts := make([]string, 0, len(paths))
	for _, p := range paths {
		fi, err := os.Stat(p)
		size := int64(0)
		switch {
		case err == nil:
			size = fi.Size()
		case !os.IsNotExist(err):
			return "", fmt.Errorf("stat %s: %w", filepath.Base(p), err)
		}
		parts = append(parts, fmt.Sprintf("%s %.1f MB", filepath.Base(p), float64(size)/1e6))
	}
	return strings.Join(parts, ", "), nil
}

// tableSizes describes how the database's pages divide between the rows and each index
// (dbstat): memory_items with its own indexes, the tag index, the trigram index (FTS5's
// shadow tables) and the suffix index, so that an index's size per item can be read off a
// scale run.
func tableSizes(ctx context.Context, db *sql.DB) (string, error) {
	rows, err := db.QueryContext(ctx, `SELECT CASE
			WHEN name = 'memory_item_tags' THEN 'tag index'
			WHEN name LIKE 'memory_items_text%' THEN 'trigram index'
			WHEN name = 'memory_item_grams' THEN 'suffix index'
			WHEN tbl_name = 'memory_items' THEN 'memory_items and its indexes'
			ELSE 'other' END AS part, sum(pgsize)
		FROM dbstat JOIN sqlite_schema USING (name) GROUP BY part ORDER BY part`)
	if err != nil {
		return "", fmt.Errorf("dbstat: %w", err)
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var part string
		var size int64
		if err := rows.Scan(&part, &size); err != nil {
			return "", fmt.Errorf("dbstat: %w", err)
		}
		parts = append(parts, fmt.Sprintf("%s %.1f MB", part, float64(size)/1e6))
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("dbstat: %w", err)
	}
	return strings.Join(parts, ", "), nil
}
