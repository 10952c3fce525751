package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/internal/tcpproxy"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Harness is the conformance harness for live PostgreSQL runs. Each harness owns a disposable
// schema (mao_conf_<random>) and scope on the given server; Close drops the schema.
//
// The stores it makes connect through a loopback TCP proxy (adapters/internal/tcpproxy), so
// MakeTransportUnavailable is a real cut: live connections are closed under the driver and new
// ones are refused, and pgx's own error path must surface as MemoryAdapterUnavailable. The
// harness's administrative pool connects directly and is not affected.
type Harness struct {
	proxy     *tcpproxy.Proxy
	storeURL  string
	serverURL string
	schema    string
	scope     string
	filters   []string
	now       func() time.Time
	adapterID string
	admin     *pgxpool.Pool
	obs       observer

	mu       sync.Mutex
	stores   []*Store
	triggers []string
	closed   bool
}

// HarnessOptions configure NewHarness.
type HarnessOptions struct {
	// URL is a postgres:// URL of a server the harness may create and drop schemas on.
	URL string
	// SupportedFilters is passed to every store; nil means memory.DefaultSupportedFilters.
	SupportedFilters []string
	// AdapterID is passed to every store (the manifest's adapter id); empty means AdapterID.
	AdapterID string
	// Now is passed to every store (the clock of its store times); nil means time.Now.
	Now func() time.Time
}

// NewHarness connects to the server, starts the proxy and creates the disposable schema.
func NewHarness(ctx context.Context, opts HarnessOptions) (*Harness, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return nil, errors.New("postgres harness: URL must be a postgres:// URL with a host")
	}
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	proxy, err := tcpproxy.New(net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("postgres harness: %w", err)
	}
	proxied := *u
	proxied.Host = proxy.Addr()
	h := &Harness{
		proxy:     proxy,
		storeURL:  proxied.String(),
		serverURL: opts.URL,
		schema:    "mao_conf_" + relstore.RandomHex(8),
		scope:     relstore.DisposableScope(),
		filters:   opts.SupportedFilters,
		adapterID: opts.AdapterID,
		now:       opts.Now,
	}
	h.admin, err = pgxpool.New(ctx, opts.URL)
	if err != nil {
		_ = proxy.Close()
		return nil, errors.New("postgres harness: cannot create the admin pool (check the URL)")
	}
	// Opening a store once creates the schema through the adapter's own migrations.
	s, err := Open(ctx, h.storeOptions())
	if err != nil {
		h.admin.Close()
		_ = proxy.Close()
		return nil, fmt.Errorf("postgres harness: %w", err)
	}
	_ = s.Close()
	return h, nil
}

func (h *Harness) storeOptions() Options {
	return Options{URL: h.storeURL, Scope: h.scope, Schema: h.schema, SupportedFilters: h.filters, AdapterID: h.adapterID, Now: h.now,
		// A short request timeout keeps the outage cases quick; it is still far above a
		// healthy loopback round trip. The connect timeout is the adapter's default: an outage
		// refuses connections at once (tcpproxy.Cut), so it costs the cases nothing, and a
		// server forking a backend on a loaded machine took over 2 s (a conformance Job
		// failed store-identifier and direct-retrieval on that).
		RequestTimeout: 3 * time.Second, ConnectTimeout: DefaultConnectTimeout, trace: h.obs.trace}
}

// Schema returns the disposable schema's name.
func (h *Harness) Schema() string { return h.schema }

// Scope returns the disposable scope.
func (h *Harness) Scope() string { return h.scope }

// StoreOptions returns the options MakeStore uses (the URL points at the proxy).
func (h *Harness) StoreOptions() Options { return h.storeOptions() }

// Proxy returns the proxy between the stores and the server.
func (h *Harness) Proxy() *tcpproxy.Proxy { return h.proxy }

// MakeStore opens a new adapter instance over the disposable schema and scope.
//
// A connection lost while the proxy injects no fault (the server reset it, or did not answer
// the proxy's dial in time, on a loaded machine) is the harness's own path, not the adapter
// under test: the open is tried again, up to makeStoreAttempts times in all. Under a fault the
// failure is the case's, and is returned at once. (A conformance Job failed manifest-accuracy
// on one such reset during a rollout's run.)
func (h *Harness) MakeStore(ctx context.Context) (memory.ExternalStore, error) {
	var (
		s   *Store
		err error
	)
	for range makeStoreAttempts {
		s, err = h.open(ctx, h.storeOptions())
		if err == nil || h.proxy.Faulting() || ctx.Err() != nil {
			break
		}
	}
	return asExternal(s, err)
}

// makeStoreAttempts bounds MakeStore's opens outside an injected fault.
const makeStoreAttempts = 3

// MakeDirectStore opens a store on the same scope connected straight to the server, not
// through the fault-injection proxy, for benchmarks: the proxy's extra hop would be counted
// as the adapter's cost. The harness's outage cases do not reach it.
func (h *Harness) MakeDirectStore(ctx context.Context) (memory.ExternalStore, error) {
	o := h.storeOptions()
	o.URL = h.serverURL
	return asExternal(h.open(ctx, o))
}

// asExternal keeps a failed open's nil store an untyped nil: a nil *Store inside the
// interface would not compare equal to nil, and callers would close it.
func asExternal(s *Store, err error) (memory.ExternalStore, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (h *Harness) open(ctx context.Context, o Options) (*Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("postgres harness: closed")
	}
	s, err := Open(ctx, o)
	if err != nil {
		return nil, err
	}
	h.stores = append(h.stores, s)
	return s, nil
}

// Reset restores the transport, drops the rejection triggers and deletes the scope's rows.
func (h *Harness) Reset(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.proxy.Restore()
	for _, t := range h.triggers {
		if _, err := h.admin.Exec(ctx, `DROP TRIGGER IF EXISTS `+pgx.Identifier{t}.Sanitize()+` ON `+h.table()); err != nil {
			return fmt.Errorf("postgres harness: drop trigger: %w", err)
		}
		if _, err := h.admin.Exec(ctx, `DROP FUNCTION IF EXISTS `+pgx.Identifier{h.schema, t}.Sanitize()+`()`); err != nil {
			return fmt.Errorf("postgres harness: drop trigger function: %w", err)
		}
	}
	h.triggers = nil
	h.obs.reset()
	if _, err := h.admin.Exec(ctx, `DELETE FROM `+h.table()+` WHERE scope = $1`, h.scope); err != nil {
		return fmt.Errorf("postgres harness: reset scope: %w", err)
	}
	return nil
}

func (h *Harness) table() string { return pgx.Identifier{h.schema, "memory_items"}.Sanitize() }

// MakeSearchIndexVisible returns at once: search reads the table the write committed to.
func (h *Harness) MakeSearchIndexVisible(context.Context) error { return nil }

// MakeTransportUnavailable cuts the proxy until Reset.
func (h *Harness) MakeTransportUnavailable(context.Context) error {
	h.proxy.Cut()
	return nil
}

// Close closes every store, drops the disposable schema and stops the proxy. Idempotent.
func (h *Harness) Close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	for _, s := range h.stores {
		_ = s.Close()
	}
	var errs []error
	if _, err := h.admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{h.schema}.Sanitize()+` CASCADE`); err != nil {
		errs = append(errs, fmt.Errorf("postgres harness: drop schema: %w", err))
	}
	h.admin.Close()
	errs = append(errs, h.proxy.Close())
	return errors.Join(errs...)
}

// ServiceVersion returns "PostgreSQL <server_version>".
func (h *Harness) ServiceVersion(ctx context.Context) (string, error) {
	var v string
	if err := h.admin.QueryRow(ctx, `SELECT current_setting('server_version')`).Scan(&v); err != nil {
		return "", fmt.Errorf("postgres harness: version: %w", err)
	}
	return "PostgreSQL " + v, nil
}

// MakeWrongKindRecord plants a row of another kind in the scope, behind the adapter's back.
func (h *Harness) MakeWrongKindRecord(ctx context.Context) (uuid.UUID, error) {
	id := uuid.New()
	_, err := h.admin.Exec(ctx, `INSERT INTO `+h.table()+`
		(scope, id, kind, created_at, metadata, content, search_text, tags)
		VALUES ($1, $2, $3, extract(epoch FROM now()), '{}', $4, $5, '{}')`,
		h.scope, id, relstore.WrongKind, relstore.WrongKindContent, relstore.WrongKindSearchText)
	if err != nil {
		return uuid.Nil, fmt.Errorf("postgres harness: plant wrong-kind record: %w", err)
	}
	return id, nil
}

// MakeWriteRejected installs a trigger that makes PostgreSQL itself raise on the insert of
// the returned item; Reset drops it.
func (h *Harness) MakeWriteRejected(ctx context.Context) (memory.Item, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	item, name := relstore.RejectedWrite()
	fn := pgx.Identifier{h.schema, name}.Sanitize()
	if _, err := h.admin.Exec(ctx, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'write rejected by conformance trigger'; END $$`); err != nil {
		return memory.Item{}, fmt.Errorf("postgres harness: create trigger function: %w", err)
	}
	h.triggers = append(h.triggers, name)
	// The id is a UUID we generated, so inlining it cannot inject SQL.
	if _, err := h.admin.Exec(ctx, `CREATE TRIGGER `+pgx.Identifier{name}.Sanitize()+` BEFORE INSERT ON `+h.table()+
		` FOR EACH ROW WHEN (NEW.id = '`+item.ID.String()+`') EXECUTE FUNCTION `+fn+`()`); err != nil {
		return memory.Item{}, fmt.Errorf("postgres harness: create trigger: %w", err)
	}
	return item, nil
}
