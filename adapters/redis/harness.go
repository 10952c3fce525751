package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/tcpproxy"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// HarnessOptions configure a live conformance harness over a real Redis server.
type HarnessOptions struct {
	// Addr is the Redis server's host:port.
	Addr string
	// Username and Password authenticate, if the server needs it; never logged.
	Username, Password string
	// Scope is the disposable namespace; empty means a fresh random "conformance-…" scope.
	Scope string
	// SupportedFilters is the filter key set of the stores made; nil means the default.
	SupportedFilters []string
	// AdapterID is the manifest's adapter id; empty means AdapterID.
	AdapterID string
	// IndexWait bounds MakeSearchIndexVisible when its context has no deadline.
	IndexWait time.Duration
	// Now is passed to every store (the clock of its store times); nil means time.Now.
	Now func() time.Time
}

// Harness is the live conformance harness (the seed's MemoryAdapterHarness) for this
// adapter: stores talk to the server through a toggleable TCP proxy so that
// MakeTransportUnavailable exercises go-redis's real error path, and every key lives under
// one disposable scope that Reset and Close drop. It satisfies conformance.Harness and its
// optional ServiceVersioner, WrongKindMaker, WriteRejecter, TransportObserver,
// FilterRecorder, MalformedResponder and IdentitylessWriter capabilities.
type Harness struct {
	opts  HarnessOptions
	k     keys
	proxy *tcpproxy.Proxy
	// admin talks to the server directly, so that resets and planted records work while the
	// proxy is cut.
	admin *goredis.Client
	// hook sits in every store's go-redis client: the suite's optional transport
	// capabilities (harness_hook.go).
	hook *transportHook

	mu     sync.Mutex
	stores []*Store
}

// NewHarness starts the proxy and checks that the server answers.
func NewHarness(ctx context.Context, opts HarnessOptions) (*Harness, error) {
	if opts.Scope == "" {
		opts.Scope = "conformance-" + randomSuffix()
	}
	if err := memory.CheckScope(opts.Scope); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if opts.IndexWait <= 0 {
		opts.IndexWait = 30 * time.Second
	}
	p, err := tcpproxy.New(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("harness: start proxy: %w", err)
	}
	admin := goredis.NewClient(&goredis.Options{
		Addr: opts.Addr, Username: opts.Username, Password: opts.Password,
		Protocol: 2, DisableIdentity: true, DialTimeout: DefaultDialTimeout,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
	})
	if err := admin.Ping(ctx).Err(); err != nil {
		_ = admin.Close()
		_ = p.Close()
		return nil, fmt.Errorf("harness: reach redis at %s: %w", opts.Addr, err)
	}
	k := newKeys(opts.Scope)
	return &Harness{opts: opts, k: k, proxy: p, admin: admin, hook: &transportHook{filterPrefix: k.prefix}}, nil
}

// Scope returns the disposable namespace.
func (h *Harness) Scope() string { return h.opts.Scope }

// MakeStore opens a store on the scope through the proxy.
func (h *Harness) MakeStore(ctx context.Context) (memory.ExternalStore, error) {
	s, err := h.OpenStore(ctx)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// OpenStore is MakeStore with the concrete type, for adapter-specific tests.
func (h *Harness) OpenStore(ctx context.Context) (*Store, error) {
	return h.open(ctx, h.proxy.Addr(), true)
}

// MakeDirectStore opens a store on the same scope connected straight to the server, without
// the fault-injection proxy and hook, for benchmarks: the proxy's extra hop would be counted
// as the adapter's cost. The harness's outage cases do not reach it.
func (h *Harness) MakeDirectStore(ctx context.Context) (memory.ExternalStore, error) {
	s, err := h.open(ctx, h.opts.Addr, false)
	if err != nil {
		return nil, err // an untyped nil, not a nil *Store inside the interface
	}
	return s, nil
}

func (h *Harness) open(ctx context.Context, addr string, hooked bool) (*Store, error) {
	s, err := Open(ctx, Options{
		Addr: addr, Username: h.opts.Username, Password: h.opts.Password,
		Scope: h.opts.Scope, SupportedFilters: h.opts.SupportedFilters, AdapterID: h.opts.AdapterID,
		Now: h.opts.Now,
	})
	if err != nil {
		return nil, err
	}
	if hooked {
		s.client.AddHook(h.hook)
	}
	h.mu.Lock()
	h.stores = append(h.stores, s)
	h.mu.Unlock()
	return s, nil
}

// Reset restores the transport and drops every key of the scope. Stores made earlier stay
// usable: their indexers recreate the consumer group when they notice it is gone.
func (h *Harness) Reset(ctx context.Context) error {
	h.proxy.Restore()
	h.hook.reset()
	return h.drop(ctx)
}

func (h *Harness) drop(ctx context.Context) error {
	for _, pattern := range []string{h.k.pattern(), h.k.subScopesPattern()} {
		if err := h.dropMatching(ctx, pattern); err != nil {
			return err
		}
	}
	return nil
}

func (h *Harness) dropMatching(ctx context.Context, pattern string) error {
	var cursor uint64
	for {
		ks, next, err := h.admin.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return fmt.Errorf("harness: drop scope: %w", err)
		}
		if len(ks) > 0 {
			if err := h.admin.Unlink(ctx, ks...).Err(); err != nil {
				return fmt.Errorf("harness: drop scope: %w", err)
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// MakeSearchIndexVisible waits until the consumer group has been delivered every stream
// entry and has acknowledged all of them (the indexer acknowledges an entry in the same
// transaction that applies it), so every store made so far is searchable.
func (h *Harness) MakeSearchIndexVisible(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.opts.IndexWait)
		defer cancel()
	}
	h.mu.Lock()
	open := 0
	for _, s := range h.stores {
		if !s.closed.Load() {
			open++
		}
	}
	h.mu.Unlock()
	st, err := indexStatus(ctx, h.admin, h.k)
	if err != nil {
		return err
	}
	if !st.CaughtUp && open == 0 {
		return fmt.Errorf("harness: %d stream entries await indexing but no store (and so no indexer) is open", st.Lag)
	}
	return waitIndexed(ctx, h.admin, h.k)
}

// MakeTransportUnavailable cuts the proxy: live connections are closed and new ones are
// refused until Reset.
func (h *Harness) MakeTransportUnavailable(context.Context) error {
	h.proxy.Cut()
	return nil
}

// Close closes every store made, drops the scope and stops the proxy.
func (h *Harness) Close(ctx context.Context) error {
	h.mu.Lock()
	stores := h.stores
	h.stores = nil
	h.mu.Unlock()
	var errs []error
	for _, s := range stores {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	h.proxy.Restore()
	errs = append(errs, h.drop(ctx), h.proxy.Close(), h.admin.Close())
	return errors.Join(errs...)
}

// ServiceVersion reports the server's version, e.g. "Redis 7.0.15".
func (h *Harness) ServiceVersion(ctx context.Context) (string, error) {
	info, err := h.admin.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	v, ok := infoField(info, "redis_version")
	if !ok {
		return "", errors.New("harness: INFO server has no redis_version")
	}
	return "Redis " + v, nil
}

// MakeWrongKindRecord plants, at a fresh item identity, a hash that carries a perfectly
// valid item payload but not the adapter's kind marker: a foreign record that retrieve
// must not coerce.
func (h *Harness) MakeWrongKindRecord(ctx context.Context) (uuid.UUID, error) {
	it := memory.NewItem([]byte(`"planted"`), "planted")
	b, err := it.MarshalJSON()
	if err != nil {
		return uuid.Nil, err
	}
	if err := h.admin.HSet(ctx, h.k.item(it.ID), "json", string(b), "owner", "someone-else").Err(); err != nil {
		return uuid.Nil, fmt.Errorf("harness: plant foreign record: %w", err)
	}
	return it.ID, nil
}

// MakeWriteRejected occupies a fresh item identity with a string key, so that the server
// answers the store's HSET with WRONGTYPE.
func (h *Harness) MakeWriteRejected(ctx context.Context) (memory.Item, error) {
	it := memory.NewItem([]byte(`"rejected"`), "rejected")
	if err := h.admin.Set(ctx, h.k.item(it.ID), "not a memory record", 0).Err(); err != nil {
		return memory.Item{}, fmt.Errorf("harness: occupy identity: %w", err)
	}
	return it, nil
}
