package relstore

import (
	"context"
	"fmt"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Options are the settings both relational adapters validate the same way before connecting.
type Options struct {
	// Backend names the adapter in error messages ("sqlite", "postgres").
	Backend string
	// Scope is the scope every row carries; it must pass memory.CheckScope.
	Scope string
	// AdapterID is the manifest's adapter id; empty means DefaultAdapterID.
	AdapterID string
	// DefaultAdapterID is the backend's own id.
	DefaultAdapterID string
	// SupportedFilters is the exact filter key set; nil means memory.DefaultSupportedFilters.
	SupportedFilters []string
}

// Manifest checks o and returns the full-fidelity, immediate manifest the adapter publishes.
// Every failure is a MemoryAdapterError raised before any I/O.
func (o Options) Manifest() (memory.Manifest, error) {
	if err := memory.CheckScope(o.Scope); err != nil {
		return memory.Manifest{}, memory.NewAdapterError(o.Backend+": options: "+err.Error(), nil)
	}
	filters := o.SupportedFilters
	if filters == nil {
		filters = memory.DefaultSupportedFilters()
	}
	id := o.AdapterID
	if id == "" {
		id = o.DefaultAdapterID
	}
	m := memory.FullManifest(id, filters)
	if err := m.Validate(); err != nil {
		return memory.Manifest{}, memory.NewAdapterError(o.Backend+": options: manifest", err)
	}
	return m, nil
}

// Conn is the little a migration needs from either driver's transaction.
type Conn interface {
	// Exec runs a statement that returns no rows.
	Exec(ctx context.Context, query string, args ...any) error
	// QueryInt runs a query that returns one integer.
	QueryInt(ctx context.Context, query string, args ...any) (int, error)
}

// Schema is a backend's versioned schema: the ledger table recording applied versions and
// the migrations, applied in order, each once. Both dialects keep the same ledger (one row
// per version) and the same rules; only the SQL text differs.
type Schema struct {
	// Backend names the adapter in error messages.
	Backend string
	// Ledger is the (qualified) name of the migrations ledger table.
	Ledger string
	// LedgerColumns are the ledger's column definitions in the backend's dialect; the first
	// column is "version", the applied version.
	LedgerColumns string
	// Record returns the statement (and its arguments) that records version v as applied.
	Record func(v int) (string, []any)
	// Migrations are the statements for versions 1..n; index 0 is unused. Never edit a
	// released migration; append a new one.
	Migrations []string
}

// Version is the schema version this build writes and expects.
func (s Schema) Version() int { return len(s.Migrations) - 1 }

// Migrate creates the ledger if needed and applies every pending migration through c, which
// should be one transaction holding the backend's migration lock so that two processes
// opening a new database serialize. A database newer than this build is a MemoryAdapterError;
// driver errors are returned for the caller to classify.
func (s Schema) Migrate(ctx context.Context, c Conn) error {
	if err := c.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.Ledger+` (`+s.LedgerColumns+`)`); err != nil {
		return fmt.Errorf("create the migrations ledger: %w", err)
	}
	current, err := c.QueryInt(ctx, s.currentQuery())
	if err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	if current > s.Version() {
		return memory.NewAdapterError(fmt.Sprintf("%s: database schema version %d is newer than this adapter's %d", s.Backend, current, s.Version()), nil)
	}
	for v := current + 1; v <= s.Version(); v++ {
		if err := c.Exec(ctx, s.Migrations[v]); err != nil {
			return fmt.Errorf("migrate to version %d: %w", v, err)
		}
		q, args := s.Record(v)
		if err := c.Exec(ctx, q, args...); err != nil {
			return fmt.Errorf("record version %d: %w", v, err)
		}
	}
	return nil
}

// Probe is the "schema_version" capability probe: the ledger must be at this build's
// version, or the adapter would read rows it does not understand.
func (s Schema) Probe(ctx context.Context, c Conn) memory.ProbeResult {
	v, err := c.QueryInt(ctx, s.currentQuery())
	return memory.ProbeResult{Name: "schema_version", OK: err == nil && v == s.Version(),
		Detail: fmt.Sprintf("have %d, want %d", v, s.Version())}
}

func (s Schema) currentQuery() string {
	return `SELECT COALESCE(MAX(version), 0) FROM ` + s.Ledger
}
