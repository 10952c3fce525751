package wireharness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// Options configure New.
type Options struct {
	// Token, if set, is required by the servers and sent by the clients.
	Token string
	// AdapterVersion is reported by the servers' evidence.
	AdapterVersion string
	// CutBackend makes MakeTransportUnavailable cut the backend (via the inner harness)
	// instead of the HTTP transport.
	CutBackend bool
	// WrapTransport, if set, wraps the clients' transport closest to the wire (tests use it
	// to validate every exchange against the OpenAPI document).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Governance, if set, is the governance the servers enforce and claim in their manifest
	// (the deployed server's serve flags): the matrix's scope stays ungoverned, and the
	// governance profiles get governed sub-scopes (MakeGovernedStores).
	Governance *Governance
}

// Governance is the retention, quotas and access control of the servers a wire harness
// starts, as server.Config holds them.
type Governance struct {
	// Retention is the retention policy.
	Retention memory.RetentionPolicy
	// SweepPeriod is the claimed sweep period (the harness sweeps on demand).
	SweepPeriod time.Duration
	// Quota is the quotas.
	Quota server.QuotaLimits
	// AccessControl claims read-only tokens and isolated sub-scopes.
	AccessControl bool
}

// Harness is the wire harness. Create it with New.
type Harness struct {
	inner conformance.Harness
	opts  Options

	requests  atomic.Int64
	cut       atomic.Bool
	malformed atomic.Bool
	identless atomic.Bool
	mu        sync.Mutex
	servers   []*httptest.Server
	clients   []*remote.Store
	governed  []*server.Server
	closed    bool
}

// New wraps inner. The returned value also implements the optional capabilities
// (ServiceVersioner, WrongKindMaker, WriteRejecter) exactly when inner does.
func New(inner conformance.Harness, opts Options) conformance.Harness {
	h := &Harness{inner: inner, opts: opts}
	_, wk := inner.(conformance.WrongKindMaker)
	_, wr := inner.(conformance.WriteRejecter)
	switch {
	case wk && wr:
		return &withBoth{h}
	case wk:
		return &withWrongKind{h}
	case wr:
		return &withRejecter{h}
	}
	return h
}

type withWrongKind struct{ *Harness }

// MakeWrongKindRecord delegates to the inner harness.
func (w *withWrongKind) MakeWrongKindRecord(ctx context.Context) (uuid.UUID, error) {
	return w.inner.(conformance.WrongKindMaker).MakeWrongKindRecord(ctx)
}

type withRejecter struct{ *Harness }

// MakeWriteRejected delegates to the inner harness.
func (w *withRejecter) MakeWriteRejected(ctx context.Context) (memory.Item, error) {
	return w.inner.(conformance.WriteRejecter).MakeWriteRejected(ctx)
}

type withBoth struct{ *Harness }

// MakeWrongKindRecord delegates to the inner harness.
func (w *withBoth) MakeWrongKindRecord(ctx context.Context) (uuid.UUID, error) {
	return w.inner.(conformance.WrongKindMaker).MakeWrongKindRecord(ctx)
}

// MakeWriteRejected delegates to the inner harness.
func (w *withBoth) MakeWriteRejected(ctx context.Context) (memory.Item, error) {
	return w.inner.(conformance.WriteRejecter).MakeWriteRejected(ctx)
}

// MakeStore makes a backend store with the inner harness, serves it with a new server and
// returns a remote client of that server.
func (h *Harness) MakeStore(ctx context.Context) (memory.ExternalStore, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("wire harness: closed")
	}
	backend, err := h.inner.MakeStore(ctx)
	if err != nil {
		return nil, err
	}
	_, hs, err := h.serve(ctx, backend, server.Config{Token: []byte(h.opts.Token)})
	if err != nil {
		return nil, err
	}
	rs, err := h.client(ctx, hs, h.opts.Token)
	if err != nil {
		// Not rs: a nil *remote.Store would be a non-nil ExternalStore.
		return nil, err
	}
	return rs, nil
}

// serve starts a server of backend with cfg's tokens and the harness's governance, after one
// probe. Callers hold h.mu.
func (h *Harness) serve(ctx context.Context, backend memory.ExternalStore, cfg server.Config) (*server.Server, *httptest.Server, error) {
	cfg.Store, cfg.AdapterVersion = backend, h.opts.AdapterVersion
	if g := h.opts.Governance; g != nil {
		cfg.Retention, cfg.SweepPeriod, cfg.Quota, cfg.AccessControl = g.Retention, g.SweepPeriod, g.Quota, g.AccessControl
		cfg.GovernSubScopesOnly = true
		if sc, ok := backend.(interface{ Scope() string }); ok {
			cfg.Scope = sc.Scope()
		}
	}
	if p, ok := backend.(memory.Prober); ok {
		cfg.Prober = p
	}
	srv, err := server.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("wire harness: %w", err)
	}
	srv.Refresh(ctx, true)
	hs := httptest.NewServer(srv.Handler())
	h.servers = append(h.servers, hs)
	return srv, hs, nil
}

// client is a remote client of hs with token, through the harness's faults. Callers hold
// h.mu.
func (h *Harness) client(ctx context.Context, hs *httptest.Server, token string) (*remote.Store, error) {
	rt := hs.Client().Transport
	if h.opts.WrapTransport != nil {
		rt = h.opts.WrapTransport(rt)
	}
	client := &http.Client{Transport: &faults{h: h, base: rt}}
	rs, err := remote.New(ctx, remote.Options{BaseURL: hs.URL, Token: token, HTTPClient: client})
	if err != nil {
		return nil, err
	}
	h.clients = append(h.clients, rs)
	return rs, nil
}

// MakeGovernedStores implements conformance.GovernanceHarness: a server of a fresh backend
// store whose token file grants a read-write and a read-only token in a governed sub-scope
// and read-write tokens in two more, each sub-scope named afresh so that it starts empty.
// Without Options.Governance the harness has nothing to govern.
func (h *Harness) MakeGovernedStores(ctx context.Context) (rw, ro, a, b memory.ExternalStore, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, nil, nil, errors.New("wire harness: closed")
	}
	if h.opts.Governance == nil {
		return nil, nil, nil, nil, errors.New("wire harness: no governance configured")
	}
	backend, err := h.inner.MakeStore(ctx)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	grants := server.NewHarnessGrants(nil)
	issued, err := grants.Issue()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	tokens := []string{issued.ReadWrite, issued.ReadOnly, issued.SubScopeA, issued.SubScopeB}
	srv, hs, err := h.serve(ctx, backend, server.Config{Tokens: grants})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	h.governed = append(h.governed, srv)
	stores := make([]memory.ExternalStore, len(tokens))
	for i, tok := range tokens {
		if stores[i], err = h.client(ctx, hs, tok); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	return stores[0], stores[1], stores[2], stores[3], nil
}

// SweepRetentionAfter implements conformance.RetentionSweeper: every governed server sweeps
// as if after had passed.
func (h *Harness) SweepRetentionAfter(ctx context.Context, after time.Duration) error {
	h.mu.Lock()
	governed := slices.Clone(h.governed)
	h.mu.Unlock()
	if len(governed) == 0 {
		return errors.New("wire harness: no governed scope to sweep (MakeGovernedStores first)")
	}
	var errs []error
	for _, srv := range governed {
		_, err := srv.SweepAfter(ctx, after)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Reset restores the transport and resets the inner harness's scope.
func (h *Harness) Reset(ctx context.Context) error {
	h.cut.Store(false)
	h.malformed.Store(false)
	h.identless.Store(false)
	return h.inner.Reset(ctx)
}

// MakeSearchIndexVisible delegates to the inner harness.
func (h *Harness) MakeSearchIndexVisible(ctx context.Context) error {
	return h.inner.MakeSearchIndexVisible(ctx)
}

// MakeTransportUnavailable cuts the HTTP transport, or the backend's with CutBackend.
func (h *Harness) MakeTransportUnavailable(ctx context.Context) error {
	if h.opts.CutBackend {
		return h.inner.MakeTransportUnavailable(ctx)
	}
	h.cut.Store(true)
	return nil
}

// Close stops every server, closes every client and closes the inner harness. It is
// idempotent.
func (h *Harness) Close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	for _, c := range h.clients {
		errs = append(errs, c.Close())
	}
	for _, s := range h.servers {
		s.Close()
	}
	errs = append(errs, h.inner.Close(ctx))
	return errors.Join(errs...)
}

// ServiceVersion reports the inner harness's service version, or "" when it has none.
func (h *Harness) ServiceVersion(ctx context.Context) (string, error) {
	if v, ok := h.inner.(conformance.ServiceVersioner); ok {
		return v.ServiceVersion(ctx)
	}
	return "", nil
}

// RequestCount implements conformance.TransportObserver: HTTP requests sent by the clients,
// including those the harness answered itself.
func (h *Harness) RequestCount() int64 { return h.requests.Load() }

// MakeResponsesMalformed implements conformance.MalformedResponder.
func (h *Harness) MakeResponsesMalformed(context.Context) error {
	h.malformed.Store(true)
	return nil
}

// MakeNextWriteIdentityless implements conformance.IdentitylessWriter.
func (h *Harness) MakeNextWriteIdentityless(context.Context) error {
	h.identless.Store(true)
	return nil
}

// faults sits in front of the real transport and injects the harness's faults.
type faults struct {
	h    *Harness
	base http.RoundTripper
}

func (f *faults) RoundTrip(req *http.Request) (*http.Response, error) {
	f.h.requests.Add(1)
	if f.h.cut.Load() {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, errors.New("wire harness: transport cut")
	}
	isRead := req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/v1/items/") ||
		req.Method == http.MethodPost && req.URL.Path == "/v1/search"
	if isRead && f.h.malformed.Load() {
		body := `{"items":[{"id":"not-a-uuid","created_at":"yesterday"}]}`
		if req.Method == http.MethodGet {
			body = `{"id":42,"content":`
		}
		return fabricate(req, http.StatusOK, body), nil
	}
	if req.Method == http.MethodPost && req.URL.Path == "/v1/items" && f.h.identless.CompareAndSwap(true, false) {
		// The write really happens; only the acknowledgement lacks the identity.
		resp, err := f.base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return fabricate(req, http.StatusCreated, `{}`), nil
	}
	return f.base.RoundTrip(req)
}

func fabricate(req *http.Request, status int, body string) *http.Response {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader([]byte(body))),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
