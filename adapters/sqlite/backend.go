package sqlite

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	"github.com/agentmem/memory-adapter-operator/adapters/sqlite/sqlitedeploy"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// fileOptions is the --sqlite-path flag.
type fileOptions struct{ path string }

// Validate accepts any path: Open says what is wrong with the file.
func (*fileOptions) Validate() error { return nil }

// ApplyConnection keeps conn: SQLite has no connection string.
func (*fileOptions) ApplyConnection(conn string) (string, error) { return conn, nil }

// path is the database file of c, as --sqlite-path set it.
func path(c backend.Config) string {
	if o, ok := c.Options.(*fileOptions); ok {
		return o.path
	}
	return ""
}

func init() {
	backend.Provide(sqlitedeploy.Name, backend.Runtime{
		Flags: func(fs *pflag.FlagSet) backend.Options {
			o := &fileOptions{}
			fs.StringVar(&o.path, "sqlite-path", "/var/lib/memory-adapter/memory.db", "sqlite: the database file")
			return o
		},
		ProductionFlags: []string{"sqlite-path"},
		Open: func(ctx context.Context, c backend.Config) (memory.ExternalStore, error) {
			return Open(ctx, Options{Path: path(c), Scope: c.ScopeOrDefault(), SupportedFilters: c.Filters, AdapterID: c.AdapterID, RequestTimeout: c.RequestTimeout})
		},
		// The conformance Job runs the matrix on its own disposable database file with the
		// same build (the product's rule for embedded backends); --sqlite-path is not used.
		Harness: func(ctx context.Context, c backend.Config) (conformance.Harness, error) {
			return NewHarness(ctx, HarnessOptions{SupportedFilters: c.Filters, AdapterID: c.AdapterID})
		},
	})
}
