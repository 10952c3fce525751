package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Harness is the conformance harness for live SQLite runs. It owns a disposable directory
// holding one database file and a random scope; Close deletes both.
//
// SQLite has no network transport, so MakeTransportUnavailable makes the database file
// unreachable instead: it renames the directory holding the file away and drops every idle
// pooled connection of the stores it made. The next explicit call must open the file again,
// the real driver fails with SQLITE_CANTOPEN, and the adapter must report
// MemoryAdapterUnavailable. A regular file takes the directory's place, so even a new store
// (whose Open would otherwise create the directory and an empty database) cannot reach it.
// (A connection busy at the moment of the cut would keep working on
// the open file; the suite makes no concurrent calls during the cut.) Reset renames the
// directory back.
type Harness struct {
	base           string // disposable root, removed by Close
	dataDir        string // holds the database file; renamed away while cut
	cutDir         string
	path           string
	scope          string
	filters        []string
	adapterID      string
	requestTimeout time.Duration
	now            func() time.Time
	admin          *sql.DB // the harness's own connection, for planting and rejecting records
	obs            observer

	mu       sync.Mutex
	cut      bool
	stores   []*Store
	triggers []string
	closed   bool
}

// HarnessOptions configure NewHarness.
type HarnessOptions struct {
	// Dir is where the disposable directory is created; empty means os.TempDir().
	Dir string
	// SupportedFilters is passed to every store; nil means memory.DefaultSupportedFilters.
	SupportedFilters []string
	// AdapterID is passed to every store (the manifest's adapter id); empty means AdapterID.
	AdapterID string
	// RequestTimeout is passed to every store; 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Now is passed to every store (the clock of its store times); nil means time.Now.
	Now func() time.Time
}

// NewHarness creates the disposable directory and database file.
func NewHarness(ctx context.Context, opts HarnessOptions) (*Harness, error) {
	base, err := os.MkdirTemp(opts.Dir, "mao-sqlite-conformance-")
	if err != nil {
		return nil, fmt.Errorf("sqlite harness: %w", err)
	}
	h := &Harness{
		base:           base,
		dataDir:        filepath.Join(base, "data"),
		cutDir:         filepath.Join(base, "data.cut"),
		scope:          relstore.DisposableScope(),
		filters:        opts.SupportedFilters,
		adapterID:      opts.AdapterID,
		requestTimeout: opts.RequestTimeout,
		now:            opts.Now,
	}
	h.path = filepath.Join(h.dataDir, "memory.db")
	// Opening a store once creates the file and its schema.
	s, err := Open(ctx, Options{Path: h.path, Scope: h.scope, SupportedFilters: h.filters, AdapterID: h.adapterID, RequestTimeout: h.requestTimeout})
	if err != nil {
		_ = os.RemoveAll(base)
		return nil, fmt.Errorf("sqlite harness: %w", err)
	}
	_ = s.Close()
	h.admin, err = sql.Open("sqlite", dsn(h.path, "rw", DefaultRequestTimeout))
	if err != nil {
		_ = os.RemoveAll(base)
		return nil, fmt.Errorf("sqlite harness: %w", err)
	}
	return h, nil
}

// Path returns the disposable database file's path.
func (h *Harness) Path() string { return h.path }

// Scope returns the disposable scope every store of this harness uses.
func (h *Harness) Scope() string { return h.scope }

// MakeStore opens a new adapter instance over the disposable file and scope.
func (h *Harness) MakeStore(ctx context.Context) (memory.ExternalStore, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("sqlite harness: closed")
	}
	// During a cut this really tries to open the unreachable file, so the caller sees the
	// adapter's own MemoryAdapterUnavailable.
	s, err := Open(ctx, Options{Path: h.path, Scope: h.scope, SupportedFilters: h.filters, AdapterID: h.adapterID, RequestTimeout: h.requestTimeout, Now: h.now, trace: h.obs.trace})
	if err != nil {
		return nil, err
	}
	h.stores = append(h.stores, s)
	return s, nil
}

// Reset restores the file, drops the rejection triggers and deletes every row of the scope.
func (h *Harness) Reset(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.restoreLocked(); err != nil {
		return err
	}
	for _, t := range h.triggers {
		if _, err := h.admin.ExecContext(ctx, `DROP TRIGGER IF EXISTS `+t); err != nil {
			return fmt.Errorf("sqlite harness: drop trigger: %w", err)
		}
	}
	h.triggers = nil
	h.obs.reset()
	if _, err := h.admin.ExecContext(ctx, `DELETE FROM memory_items WHERE scope = ?`, h.scope); err != nil {
		return fmt.Errorf("sqlite harness: reset scope: %w", err)
	}
	return nil
}

// MakeSearchIndexVisible returns at once: SQLite search reads the same table the write
// committed to, so there is no index to wait for.
func (h *Harness) MakeSearchIndexVisible(context.Context) error { return nil }

// MakeTransportUnavailable makes the database file unreachable until Reset (see Harness).
func (h *Harness) MakeTransportUnavailable(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cut {
		return nil
	}
	if err := os.Rename(h.dataDir, h.cutDir); err != nil {
		return fmt.Errorf("sqlite harness: cut: %w", err)
	}
	// A regular file where the directory was makes the path unreachable even for root and
	// stops Open from recreating the directory and an empty database in its place.
	if err := os.WriteFile(h.dataDir, []byte("unreachable: cut by the conformance harness\n"), 0o600); err != nil {
		return fmt.Errorf("sqlite harness: cut: %w", err)
	}
	h.cut = true
	// Idle connections hold the file open; dropping them forces the next call to reopen the
	// now missing file. database/sql closes idle connections above the new limit at once.
	for _, s := range h.stores {
		s.db.SetMaxIdleConns(0)
	}
	h.admin.SetMaxIdleConns(0)
	return nil
}

func (h *Harness) restoreLocked() error {
	if !h.cut {
		return nil
	}
	if err := os.Remove(h.dataDir); err != nil {
		return fmt.Errorf("sqlite harness: restore: %w", err)
	}
	if err := os.Rename(h.cutDir, h.dataDir); err != nil {
		return fmt.Errorf("sqlite harness: restore: %w", err)
	}
	h.cut = false
	for _, s := range h.stores {
		s.db.SetMaxIdleConns(s.maxIdle)
	}
	h.admin.SetMaxIdleConns(2)
	return nil
}

// Close closes every store it made and deletes the disposable directory. It is idempotent.
func (h *Harness) Close(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	for _, s := range h.stores {
		errs = append(errs, s.Close())
	}
	errs = append(errs, h.admin.Close(), os.RemoveAll(h.base))
	return errors.Join(errs...)
}

// ServiceVersion returns "SQLite <library version>".
func (h *Harness) ServiceVersion(ctx context.Context) (string, error) {
	var v string
	if err := h.admin.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&v); err != nil {
		return "", fmt.Errorf("sqlite harness: version: %w", err)
	}
	return "SQLite " + v, nil
}

// MakeWrongKindRecord plants a row of another kind in the scope, behind the adapter's back.
func (h *Harness) MakeWrongKindRecord(ctx context.Context) (uuid.UUID, error) {
	id := uuid.New()
	_, err := h.admin.ExecContext(ctx, `INSERT INTO memory_items
		(scope, id, kind, created_at, metadata, content, search_text, tags)
		VALUES (?, ?, ?, ?, '{}', ?, ?, '[]')`,
		h.scope, id.String(), relstore.WrongKind, memory.FormatTimestamp(memory.Now()), relstore.WrongKindContent, relstore.WrongKindSearchText)
	if err != nil {
		return uuid.Nil, fmt.Errorf("sqlite harness: plant wrong-kind record: %w", err)
	}
	return id, nil
}

// MakeWriteRejected installs a trigger that makes SQLite itself abort the insert of the
// returned item; Reset drops it.
func (h *Harness) MakeWriteRejected(ctx context.Context) (memory.Item, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	item, name := relstore.RejectedWrite()
	_, err := h.admin.ExecContext(ctx, `CREATE TRIGGER `+name+` BEFORE INSERT ON memory_items
		WHEN NEW.id = '`+item.ID.String()+`'
		BEGIN SELECT RAISE(ABORT, 'write rejected by conformance trigger'); END`)
	if err != nil {
		return memory.Item{}, fmt.Errorf("sqlite harness: install rejection trigger: %w", err)
	}
	h.triggers = append(h.triggers, name)
	return item, nil
}
