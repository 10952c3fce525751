package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// HarnessStore is the store a server publishes in harness mode (memory-adapter serve
// --harness): the current store of a conformance harness over a disposable scope, replaced
// on every reset, with a count of the calls the server makes to it (the harness protocol's
// backend_calls) and backend faults for harnesses that cannot inject them natively.
//
// The generic faults sit exactly where the server meets its backend: a malformed read
// answers an item whose content is not JSON, an identityless write stores the item and then
// acknowledges it without its id. What they test is the server's own refusal to pass such
// answers on (502 adapter_error), not the backend adapter's.
type HarnessStore struct {
	inner conformance.Harness

	mu  sync.RWMutex
	cur memory.ExternalStore

	calls     atomic.Int64
	malformed atomic.Bool
	identless atomic.Bool
}

// NewHarnessStore resets inner and makes its first store.
func NewHarnessStore(ctx context.Context, inner conformance.Harness) (*HarnessStore, error) {
	if err := inner.Reset(ctx); err != nil {
		return nil, fmt.Errorf("harness reset: %w", err)
	}
	s, err := inner.MakeStore(ctx)
	if err != nil {
		return nil, fmt.Errorf("harness store: %w", err)
	}
	return &HarnessStore{inner: inner, cur: s}, nil
}

func (h *HarnessStore) current() memory.ExternalStore {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.cur
}

// Manifest returns the current store's manifest; every store of one harness publishes the
// same one.
func (h *HarnessStore) Manifest() memory.Manifest { return h.current().Manifest() }

// Store counts the call and stores through the current store.
func (h *HarnessStore) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	h.calls.Add(1)
	id, err := h.current().Store(ctx, item)
	if err == nil && h.identless.CompareAndSwap(true, false) {
		return uuid.Nil, nil
	}
	return id, err
}

// malformedContent is not JSON: the server cannot encode an item holding it.
var malformedContent = json.RawMessage(`{"truncated":`)

// Retrieve counts the call and reads through the current store.
func (h *HarnessStore) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	h.calls.Add(1)
	it, err := h.current().Retrieve(ctx, id)
	if err == nil && h.malformed.Load() {
		return &memory.Item{ID: id, Content: malformedContent}, nil
	}
	return it, err
}

// Search counts the call and searches through the current store.
func (h *HarnessStore) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	h.calls.Add(1)
	items, err := h.current().Search(ctx, q)
	if err == nil && h.malformed.Load() {
		return []memory.Item{{ID: uuid.New(), Content: malformedContent}}, nil
	}
	return items, err
}

// CanProbe reports whether the current store probes its backend.
func (h *HarnessStore) CanProbe() bool {
	_, ok := h.current().(memory.Prober)
	return ok
}

// Probe probes through the current store.
func (h *HarnessStore) Probe(ctx context.Context) (memory.Evidence, error) {
	p, ok := h.current().(memory.Prober)
	if !ok {
		return memory.Evidence{}, errors.New("harness store: the backend store has no probe")
	}
	return p.Probe(ctx)
}

// BackendCalls returns the number of calls the server made to the store.
func (h *HarnessStore) BackendCalls() int64 { return h.calls.Load() }

// Reset empties the disposable scope, restores every fault and replaces the store.
func (h *HarnessStore) Reset(ctx context.Context) error {
	h.malformed.Store(false)
	h.identless.Store(false)
	if err := h.inner.Reset(ctx); err != nil {
		return err
	}
	s, err := h.inner.MakeStore(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	old := h.cur
	h.cur = s
	h.mu.Unlock()
	if c, ok := old.(io.Closer); ok && old != s {
		_ = c.Close()
	}
	return nil
}

// Close closes the current store and the harness, dropping the disposable scope.
func (h *HarnessStore) Close(ctx context.Context) error {
	var errs []error
	if c, ok := h.current().(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	errs = append(errs, h.inner.Close(ctx))
	return errors.Join(errs...)
}

// HarnessConfig configures HarnessHandler.
type HarnessConfig struct {
	// Store is the harness store the server publishes.
	Store *HarnessStore
	// Token is the harness listener's bearer token (required; not the data token).
	Token []byte
	// DuplicateIDBehaviour is the backend's declared duplicate-id behaviour, if any.
	DuplicateIDBehaviour string
	// Scope names the disposable scope, for people.
	Scope string
	// Grants, when set, is the data listener's token source of a governed harness: the
	// handler then offers governance_tokens (issuing tokens of fresh sub-scopes) and
	// retention_sweep (the server's sweep as if time had passed).
	Grants *HarnessGrants
}

// The capability names of the protocol (conformance.Capability values).
var alwaysCapabilities = []conformance.Capability{
	conformance.CapReset, conformance.CapSearchIndexVisible, conformance.CapTransportUnavailable,
	conformance.CapResponsesMalformed, conformance.CapIdentitylessWrite, conformance.CapBackendCalls,
}

type capabilitiesBody struct {
	Capabilities         []string `json:"capabilities"`
	DuplicateIDBehaviour string   `json:"duplicate_id_behaviour,omitempty"`
	Scope                string   `json:"scope,omitempty"`
}

// HarnessHandler serves the harness protocol (/harness/v1, api/memory/openapi.yaml) for the
// server's harness store. Serve it on its own listener: the paths are not part of the data
// wire, and the token is the harness's own.
func (s *Server) HarnessHandler(cfg HarnessConfig) (http.Handler, error) {
	if cfg.Store == nil || len(cfg.Token) == 0 {
		return nil, errors.New("server: harness mode needs a harness store and a harness token")
	}
	hs, inner := cfg.Store, cfg.Store.inner
	guard := &Server{log: s.log, metrics: s.metrics, tokens: fixedToken(cfg.Token)}
	caps := capabilitiesBody{DuplicateIDBehaviour: cfg.DuplicateIDBehaviour, Scope: cfg.Scope}
	for _, c := range alwaysCapabilities {
		caps.Capabilities = append(caps.Capabilities, string(c))
	}
	wk, hasWK := inner.(conformance.WrongKindMaker)
	if hasWK {
		caps.Capabilities = append(caps.Capabilities, string(conformance.CapWrongKindRecord))
	}
	wr, hasWR := inner.(conformance.WriteRejecter)
	if hasWR {
		caps.Capabilities = append(caps.Capabilities, string(conformance.CapWriteRejected))
	}
	if cfg.Grants != nil {
		caps.Capabilities = append(caps.Capabilities, string(conformance.CapGovernanceTokens), string(conformance.CapRetentionSweep))
	}
	mux := http.NewServeMux()
	handle := func(pattern string, h func(w http.ResponseWriter, r *http.Request) (any, error)) {
		mux.Handle(pattern, guard.requireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
					s.problem(w, http.StatusUnsupportedMediaType, memory.ProblemUnsupportedMediaType, "the body must be Content-Type: application/json", nil)
					return
				}
				_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 4<<10))
			}
			out, err := h(w, r)
			switch {
			case err != nil:
				s.problem(w, http.StatusBadGateway, memory.ProblemAdapterError, "harness: "+err.Error(), nil)
			case out == nil:
				w.WriteHeader(http.StatusNoContent)
			default:
				s.writeJSON(w, http.StatusOK, out)
			}
		})))
	}
	handle("GET /harness/v1/capabilities", func(http.ResponseWriter, *http.Request) (any, error) { return caps, nil })
	handle("POST /harness/v1/reset", func(_ http.ResponseWriter, r *http.Request) (any, error) {
		if err := hs.Reset(r.Context()); err != nil {
			return nil, err
		}
		// A probe during an outage marks the manifest unusable until the next probe; the
		// reset restored the backend, so the next case must not meet a stale verdict.
		s.Refresh(r.Context(), true)
		return nil, nil
	})
	handle("POST /harness/v1/search-index-visible", func(_ http.ResponseWriter, r *http.Request) (any, error) {
		return nil, inner.MakeSearchIndexVisible(r.Context())
	})
	handle("POST /harness/v1/transport-unavailable", func(_ http.ResponseWriter, r *http.Request) (any, error) {
		return nil, inner.MakeTransportUnavailable(r.Context())
	})
	handle("POST /harness/v1/responses-malformed", func(_ http.ResponseWriter, r *http.Request) (any, error) {
		if m, ok := inner.(conformance.MalformedResponder); ok {
			return nil, m.MakeResponsesMalformed(r.Context())
		}
		hs.malformed.Store(true)
		return nil, nil
	})
	handle("POST /harness/v1/identityless-write", func(_ http.ResponseWriter, r *http.Request) (any, error) {
		if m, ok := inner.(conformance.IdentitylessWriter); ok {
			return nil, m.MakeNextWriteIdentityless(r.Context())
		}
		hs.identless.Store(true)
		return nil, nil
	})
	handle("GET /harness/v1/backend-calls", func(http.ResponseWriter, *http.Request) (any, error) {
		return struct {
			Count int64 `json:"count"`
		}{hs.BackendCalls()}, nil
	})
	if cfg.Grants != nil {
		handle("POST /harness/v1/governance-tokens", func(http.ResponseWriter, *http.Request) (any, error) {
			return cfg.Grants.Issue()
		})
		mux.Handle("POST /harness/v1/retention-sweep", guard.requireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				s.problem(w, http.StatusUnsupportedMediaType, memory.ProblemUnsupportedMediaType, "the body must be Content-Type: application/json", nil)
				return
			}
			var body struct {
				AfterSeconds *int64 `json:"after_seconds"`
			}
			dec := json.NewDecoder(io.LimitReader(r.Body, 4<<10))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil || body.AfterSeconds == nil || *body.AfterSeconds < 0 || *body.AfterSeconds > maxSweepAfterSeconds {
				s.problem(w, http.StatusBadRequest, memory.ProblemInvalidRequest, fmt.Sprintf("the body must be {\"after_seconds\": N} with N from 0 to %d", int64(maxSweepAfterSeconds)), nil)
				return
			}
			if _, err := s.SweepAfter(r.Context(), time.Duration(*body.AfterSeconds)*time.Second); err != nil {
				s.problem(w, http.StatusBadGateway, memory.ProblemAdapterError, "harness: "+err.Error(), nil)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})))
	}
	if hasWK {
		handle("POST /harness/v1/wrong-kind-record", func(_ http.ResponseWriter, r *http.Request) (any, error) {
			id, err := wk.MakeWrongKindRecord(r.Context())
			if err != nil {
				return nil, err
			}
			return struct {
				ID string `json:"id"`
			}{id.String()}, nil
		})
	}
	if hasWR {
		handle("POST /harness/v1/write-rejected", func(_ http.ResponseWriter, r *http.Request) (any, error) {
			it, err := wr.MakeWriteRejected(r.Context())
			if err != nil {
				return nil, err
			}
			return it, nil
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		s.problem(w, http.StatusNotFound, memory.ProblemNotFound, "no such harness route (see GET /harness/v1/capabilities)", nil)
	})
	return mux, nil
}

// maxSweepAfterSeconds bounds retention-sweep's after_seconds: twice the longest claim
// (max age and sweep period each at memory.MaxGovernanceSeconds), and exact in a Duration.
const maxSweepAfterSeconds = 2*memory.MaxGovernanceSeconds + 1

// ServeHarness serves h on l until ctx ends, with the server's timeouts, then shuts down.
func ServeHarness(ctx context.Context, l net.Listener, h http.Handler, t Timeouts) error {
	hs := &http.Server{
		Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read,
		// A reset of a live backend (dropping a Redis index, a PostgreSQL schema's rows) can
		// take longer than one data call.
		WriteTimeout: t.Write + DefaultOperationTimeout, IdleTimeout: t.Idle, MaxHeaderBytes: 16 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve harness: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.Shutdown)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("harness shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve harness: %w", err)
	}
	return nil
}
