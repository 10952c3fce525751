package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Defaults for Config fields left zero. They are documented in docs/server.md.
const (
	// DefaultMaxBodyBytes bounds a request body: the contract's largest item
	// (memory.MaxItemBytes) fits with its envelope, a memory-exhaustion attempt does not.
	DefaultMaxBodyBytes int64 = memory.MaxRequestBytes
	// DefaultOperationTimeout bounds one backend call made on behalf of a request.
	DefaultOperationTimeout = 10 * time.Second
	// DefaultEvidenceTTL is the minimum interval between two backend probes, so that
	// GET /v1/evidence cannot be used to hammer the backend.
	DefaultEvidenceTTL = time.Second
	// DefaultProbeTimeout bounds one evidence probe.
	DefaultProbeTimeout = 5 * time.Second
)

// Config configures a Server. Store is required; everything else has a default.
type Config struct {
	// Store is the one adapter instance the server publishes.
	Store memory.ExternalStore
	// Prober probes the backend; nil means the server has only its own evidence.
	Prober memory.Prober
	// AdapterVersion is reported in the evidence.
	AdapterVersion string
	// Token, when non-empty, is the bearer token every /v1 route requires, for the server's
	// whole life.
	Token []byte
	// Tokens, when set, supplies the bearer tokens every /v1 route accepts, asked on each
	// request so that a rotated set takes effect without a restart (a TokenFile). It
	// excludes Token.
	Tokens TokenSource
	// MaxBodyBytes bounds request bodies; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// OperationTimeout bounds one backend call; zero means DefaultOperationTimeout.
	OperationTimeout time.Duration
	// EvidenceTTL is the minimum interval between probes; zero means DefaultEvidenceTTL.
	EvidenceTTL time.Duration
	// MaxIndexLag is the number of not-yet-searchable writes an immediate-consistency
	// manifest tolerates before the server declares it invalid; zero means any lag
	// invalidates.
	MaxIndexLag int64
	// Logger receives one line per failed request; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Tracing gives each data call and its backend call a span; the zero value traces
	// nothing.
	Tracing Tracing
	// Doorbell, if set, is rung whenever the evidence's verdict inputs change (Serve rings
	// it), so that the operator reads the change at once instead of at its next period.
	Doorbell Doorbell
	// Scope is the scope Store serves: the name sub-scope grants are formed from
	// (memory.SubScope; a grant with a sub-scope needs it and a Store that is a
	// memory.ScopedStore), and Store's scope in the retention and quota metrics and the
	// evidence's usage, where empty means DefaultScope.
	Scope string
	// Retention is Store's retention policy (retention.go); the zero value keeps every item.
	Retention memory.RetentionPolicy
	// SweepPeriod is how often Serve sweeps and recounts usage; zero means
	// DefaultSweepPeriod.
	SweepPeriod time.Duration
	// Quota is Store's quotas (quota.go); the zero value limits nothing.
	Quota QuotaLimits
	// AccessControl publishes the governance/v1 claims read_only and isolation: the
	// operator sets it with spec.access, whose token file grants read-only tokens and
	// sub-scopes (tokenfile.go). The server enforces grants whenever a token file has them;
	// the claim is what a client may rely on for the server's whole life.
	AccessControl bool
	// GovernSubScopesOnly leaves Store's own scope ungoverned while its sub-scopes get
	// Retention and Quota: harness mode, where the matrix writes into Store's disposable
	// scope (and would breach a small quota) and the governance profiles into sub-scopes.
	GovernSubScopesOnly bool
}

// Server serves one memory.ExternalStore over HTTP. Create it with New.
type Server struct {
	cfg      Config
	store    memory.ExternalStore
	manifest memory.Manifest
	hash     string
	log      *slog.Logger
	now      func() time.Time
	// tokens is nil when /v1 is open (no Token, no Tokens).
	tokens TokenSource

	// scopedMu guards scoped, the stores of the sub-scopes grants have named so far, and
	// governors.
	scopedMu sync.Mutex
	scoped   map[string]scopedStore

	registry   *prometheus.Registry
	metrics    *metrics
	govMetrics *governorMetrics
	handler    http.Handler
	// governors enforce retention and quotas, one per scope (Store's and each sub-scope's,
	// added as grants first name them); governor is Store's.
	governors []*Governor
	governor  *Governor

	valid        atomic.Bool
	shuttingDown atomic.Bool

	evMu     sync.Mutex
	evidence memory.EvidenceReport
	probedAt time.Time
	judged   memory.EvidenceState
	// verdict is verdictKey of the evidence in force; a new one signals changed.
	verdict string

	// kick asks the monitor for an early probe; changed tells the doorbell to ring. Each
	// holds one pending signal.
	kick, changed chan struct{}
}

// New validates the store's manifest, captures it for the server's life and builds the
// handler. It does not probe the backend; call Refresh (Serve does) before serving.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: a store is required")
	}
	if len(cfg.Token) > 0 && cfg.Tokens != nil {
		return nil, errors.New("server: Token and Tokens exclude each other")
	}
	if cfg.Store.Manifest().Extensions != nil {
		return nil, errors.New("server: the store's manifest carries extensions; the server's configuration claims them")
	}
	m := cfg.Store.Manifest().WithGovernance(cfg.GovernanceClaim()).Normalize()
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("server: the store's manifest is invalid: %w", err)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.OperationTimeout <= 0 {
		cfg.OperationTimeout = DefaultOperationTimeout
	}
	if cfg.EvidenceTTL <= 0 {
		cfg.EvidenceTTL = DefaultEvidenceTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{
		cfg:      cfg,
		store:    traceStore(cfg.Store, cfg.Tracing),
		manifest: m,
		hash:     m.Hash(),
		log:      cfg.Logger,
		now:      cfg.Now,
		registry: prometheus.NewRegistry(),
		kick:     make(chan struct{}, 1),
		changed:  make(chan struct{}, 1),
	}
	switch {
	case len(cfg.Token) > 0:
		s.tokens = fixedToken(cfg.Token)
	case cfg.Tokens != nil:
		s.tokens = cfg.Tokens
	}
	s.metrics = newMetrics(s.registry)
	if err := s.governStore(); err != nil {
		return nil, err
	}
	s.evidence = s.baseEvidence()
	s.evidence.Reason = "not probed yet"
	s.handler = s.routes()
	return s, nil
}

// Manifest returns the manifest the server publishes for its whole life.
func (s *Server) Manifest() memory.Manifest { return s.manifest }

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Registry returns the Prometheus registry behind /metrics.
func (s *Server) Registry() *prometheus.Registry { return s.registry }

// MetricsHandler serves GET /metrics alone, for a listener of its own: the metrics port,
// which a monitoring namespace may reach while the data port admits only the adapter's
// clients. Every other path answers 404 problem+json, as the data port does.
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		s.problem(w, http.StatusNotFound, memory.ProblemNotFound, "no such route on the metrics port", nil)
	})
	return mux
}

// Valid reports whether the server currently considers its manifest valid.
func (s *Server) Valid() bool { return s.valid.Load() }

// BeginShutdown makes /healthz and /readyz answer 503 so that load balancers stop sending
// new requests while in-flight ones finish.
func (s *Server) BeginShutdown() { s.shuttingDown.Store(true) }

func (s *Server) baseEvidence() memory.EvidenceReport {
	return memory.EvidenceReport{
		Adapter:        s.manifest.Adapter,
		AdapterVersion: s.cfg.AdapterVersion,
		ManifestHash:   s.hash,
		Probes:         []memory.ProbeResult{},
	}
}

// Refresh probes the backend (at most once per EvidenceTTL unless force) and recomputes
// whether the manifest is still valid. It returns the evidence now in force.
func (s *Server) Refresh(ctx context.Context, force bool) memory.EvidenceReport {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	now := s.now()
	if !force && !s.probedAt.IsZero() && now.Sub(s.probedAt) < s.cfg.EvidenceTTL {
		return cloneEvidence(s.evidence)
	}
	ev := s.baseEvidence()
	obs := memory.EvidenceObservation{
		Published: s.manifest, Current: s.store.Manifest().WithGovernance(s.manifest.Governance()), MaxIndexLag: s.cfg.MaxIndexLag,
		Probed: s.cfg.Prober != nil,
	}
	if obs.Probed {
		pctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
		obs.Evidence, obs.ProbeErr = s.cfg.Prober.Probe(pctx)
		cancel()
		if obs.ProbeErr != nil {
			s.metrics.probeFailures.Inc()
			ev.Probes = append(ev.Probes, memory.ProbeResult{Name: "reachable", OK: false, Detail: obs.ProbeErr.Error()})
		} else {
			ev.ServiceVersion = obs.Evidence.ServiceVersion
			ev.Probes = append(ev.Probes, obs.Evidence.Probes...)
			if obs.Evidence.IndexLag != nil {
				lag := *obs.Evidence.IndexLag
				ev.IndexLag = &lag
			}
		}
	}
	verdict := memory.JudgeEvidence(s.judged, obs)
	s.judged = verdict.Next
	ev.InitialServiceVersion = s.judged.InitialServiceVersion
	ev.ManifestValid = verdict.Valid
	ev.Reason = verdict.Reason()
	ev.ObservedAt = now.UTC()
	s.evidence = ev
	s.probedAt = now
	if key := verdictKey(ev); key != s.verdict {
		s.verdict = key
		signal(s.changed)
	}
	s.metrics.evidenceTime.Set(float64(now.UnixNano()) / 1e9)
	s.valid.Store(ev.ManifestValid)
	if ev.ManifestValid {
		s.metrics.manifestValid.Set(1)
	} else {
		s.metrics.manifestValid.Set(0)
		s.log.Warn("Manifest invalidated by evidence", "reason", ev.Reason)
	}
	return cloneEvidence(ev)
}

func cloneEvidence(ev memory.EvidenceReport) memory.EvidenceReport {
	out := ev
	out.Probes = append([]memory.ProbeResult{}, ev.Probes...)
	if ev.IndexLag != nil {
		v := *ev.IndexLag
		out.IndexLag = &v
	}
	return out
}

// Monitor refreshes the evidence every period until ctx ends; every RecoveryProbePeriod
// while the evidence invalidates the manifest; and early when a data call found the backend
// unavailable, but not within EvidenceTTL of the last probe (the probe then waits for the TTL
// to pass), so that a burst of failing calls probes the backend once.
func (s *Server) Monitor(ctx context.Context, period time.Duration) {
	t := time.NewTimer(s.nextProbe(period))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
			if wait := s.ttlLeft(); wait > 0 {
				resetTimer(t, min(wait, s.nextProbe(period)))
				continue
			}
			s.Refresh(ctx, true)
		case <-t.C:
			s.Refresh(ctx, true)
		}
		resetTimer(t, s.nextProbe(period))
	}
}

// nextProbe is the time until the monitor's next probe.
func (s *Server) nextProbe(period time.Duration) time.Duration {
	if !s.valid.Load() {
		return min(period, RecoveryProbePeriod)
	}
	return period
}

// ttlLeft is how long until EvidenceTTL has passed since the last probe.
func (s *Server) ttlLeft() time.Duration {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	if s.probedAt.IsZero() {
		return 0
	}
	return s.cfg.EvidenceTTL - s.now().Sub(s.probedAt)
}

// resetTimer stops t, drains a fire it missed, and sets it to d.
func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

// route names label metrics; they are the OpenAPI operation ids, never raw paths, so that
// hostile paths cannot blow up label cardinality.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern, route string, auth bool, h http.HandlerFunc) {
		var hh http.Handler = h
		if auth {
			hh = s.requireToken(hh)
		}
		mux.Handle(pattern, s.instrument(route, s.traced(route, hh)))
	}
	handle("GET /v1/manifest", "getManifest", true, s.getManifest)
	handle("POST /v1/items", "storeItem", true, s.storeItem)
	handle("GET /v1/items/{id}", "retrieveItem", true, s.retrieveItem)
	handle("POST /v1/search", "search", true, s.search)
	handle("GET /v1/evidence", "getEvidence", true, s.getEvidence)
	handle("GET /healthz", "healthz", false, s.healthz)
	handle("GET /readyz", "readyz", false, s.readyz)
	metricsHandler := promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{})
	handle("GET /metrics", "metrics", false, metricsHandler.ServeHTTP)
	// Less specific patterns catch other methods on known paths (405) and unknown paths (404),
	// so that every error is problem+json.
	for _, p := range []string{"/v1/manifest", "/v1/items", "/v1/items/{id}", "/v1/search", "/v1/evidence", "/healthz", "/readyz", "/metrics"} {
		handle(p, "methodNotAllowed", false, s.methodNotAllowed)
	}
	handle("/", "unknownRoute", false, func(w http.ResponseWriter, _ *http.Request) {
		s.problem(w, http.StatusNotFound, memory.ProblemNotFound, "no such route", nil)
	})
	return mux
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	allow := "GET"
	if r.URL.Path == "/v1/items" || r.URL.Path == "/v1/search" {
		allow = "POST"
	}
	w.Header().Set("Allow", allow)
	s.problem(w, http.StatusMethodNotAllowed, memory.ProblemMethodNotAllowed, "method "+r.Method+" is not allowed here", nil)
}

// grantKey is the request context key of the caller's Grant.
type grantKey struct{}

func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.tokens == nil {
			next.ServeHTTP(w, r)
			return
		}
		g, ok := s.grantOf(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="memory-adapter"`)
			s.problem(w, http.StatusUnauthorized, memory.ProblemUnauthorized, "missing or wrong bearer token", nil)
			return
		}
		if g != (Grant{}) {
			g.Digest = [sha256.Size]byte{} // what the handlers need is the rights, not the token
			r = r.WithContext(context.WithValue(r.Context(), grantKey{}, g))
		}
		next.ServeHTTP(w, r)
	})
}

// grantOf returns the grant of the bearer token in an Authorization header. A source
// without grants gives every token it accepts full access.
func (s *Server) grantOf(header string) (Grant, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Grant{}, false
	}
	presented := []byte(strings.TrimSpace(tok))
	if gs, ok := s.tokens.(GrantSource); ok {
		return matchGrant(presented, gs.Grants())
	}
	return Grant{}, tokenMatches(presented, s.tokens.TokenDigests())
}

// requestGrant is the grant the request's token carries; the zero Grant (full access to the
// scope) when it carries none or /v1 is open.
func requestGrant(r *http.Request) Grant {
	g, _ := r.Context().Value(grantKey{}).(Grant)
	return g
}

// maxSubScopes bounds the sub-scope stores a server keeps open: a token file names at most
// maxTokens of them at a time, and this leaves room for the file to change a few times.
const maxSubScopes = 4 * maxTokens

// scopedStore is a sub-scope's store and its governor (nil when ungoverned).
type scopedStore struct {
	store memory.ExternalStore
	gov   *Governor
}

// storeFor returns the store a request works in and its governor: the server's own, or the
// sub-scope its grant names, opened on first use and kept (with a governor of its own, under
// the same retention and quotas) for the server's life. It answers the problem itself and
// returns a nil store when there is none.
func (s *Server) storeFor(w http.ResponseWriter, r *http.Request) (memory.ExternalStore, *Governor) {
	g := requestGrant(r)
	if g.SubScope == "" {
		return s.store, s.governor
	}
	s.scopedMu.Lock()
	defer s.scopedMu.Unlock()
	if st, ok := s.scoped[g.SubScope]; ok {
		return st.store, st.gov
	}
	fail := func(detail string) (memory.ExternalStore, *Governor) {
		s.problem(w, http.StatusBadGateway, memory.ProblemAdapterError, detail, nil)
		return nil, nil
	}
	scoper, ok := s.cfg.Store.(memory.ScopedStore)
	if !ok {
		return fail("the token's binding has a sub-scope, and this backend does not serve sub-scopes")
	}
	if len(s.scoped) >= maxSubScopes {
		return fail(fmt.Sprintf("more than %d sub-scopes were named since the server started", maxSubScopes))
	}
	name, err := memory.SubScope(s.cfg.Scope, g.SubScope)
	if err != nil {
		return fail("the token's sub-scope: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.OperationTimeout)
	defer cancel()
	view, err := scoper.InScope(ctx, name)
	if err != nil {
		s.backendError(w, err)
		return nil, nil
	}
	gov, err := s.NewGovernor(name, view, s.cfg.Retention, s.cfg.Quota)
	if err != nil {
		return fail("the sub-scope's governor: " + err.Error())
	}
	entry := scopedStore{store: traceStore(view, s.cfg.Tracing)}
	if s.governor != nil || s.cfg.GovernSubScopesOnly {
		// Governed like the scope: the same policy and limits, per sub-scope.
		entry.gov = gov
		s.governors = append(s.governors, gov)
	}
	if s.scoped == nil {
		s.scoped = map[string]scopedStore{}
	}
	s.scoped[g.SubScope] = entry
	return entry.store, entry.gov
}

// governorList is a copy of the governors, safe to range over while grants add more.
func (s *Server) governorList() []*Governor {
	s.scopedMu.Lock()
	defer s.scopedMu.Unlock()
	return slices.Clone(s.governors)
}

func (s *Server) getManifest(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, http.StatusOK, s.manifest)
}

func (s *Server) getEvidence(w http.ResponseWriter, r *http.Request) {
	ev := s.Refresh(r.Context(), false)
	ev.Usage = s.usage()
	s.writeJSON(w, http.StatusOK, ev)
}

type healthBody struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if s.shuttingDown.Load() {
		s.writeJSON(w, http.StatusServiceUnavailable, healthBody{Status: "shutting_down"})
		return
	}
	s.writeJSON(w, http.StatusOK, healthBody{Status: "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.shuttingDown.Load() {
		s.writeJSON(w, http.StatusServiceUnavailable, healthBody{Status: "shutting_down"})
		return
	}
	ev := s.Refresh(r.Context(), false)
	if !ev.ManifestValid {
		s.writeJSON(w, http.StatusServiceUnavailable, healthBody{Status: "unavailable", Reason: ev.Reason})
		return
	}
	s.writeJSON(w, http.StatusOK, healthBody{Status: "ok"})
}

// checkValid answers 503 when evidence invalidated the manifest: the seed forbids serving a
// different contract mid-life.
func (s *Server) checkValid(w http.ResponseWriter) bool {
	if s.valid.Load() {
		return true
	}
	s.evMu.Lock()
	reason := s.evidence.Reason
	s.evMu.Unlock()
	s.problem(w, http.StatusServiceUnavailable, memory.ProblemUnavailable, "the adapter's evidence invalidates its manifest: "+reason, nil)
	return false
}

func (s *Server) storeItem(w http.ResponseWriter, r *http.Request) {
	if requestGrant(r).ReadOnly {
		// Refused before the body is read: a read-only binding learns nothing from a store,
		// and the backend sees nothing.
		s.problem(w, http.StatusForbidden, memory.ProblemForbidden, "this token's binding is read-only: it may retrieve and search, not store", nil)
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	body, ok := s.readBody(w, r, buf)
	if !ok {
		return
	}
	item, err := DecodeItem(body)
	if err != nil {
		s.problem(w, http.StatusBadRequest, memory.ProblemInvalidRequest, err.Error(), nil)
		return
	}
	if !s.checkValid(w) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.OperationTimeout)
	defer cancel()
	st, gov := s.storeFor(w, r)
	if st == nil {
		return
	}
	adm, ok := s.admit(ctx, w, gov, item)
	if !ok {
		return
	}
	s.metrics.backendCalls.WithLabelValues("store").Inc()
	id, err := st.Store(ctx, item)
	adm.done(err == nil)
	if err != nil {
		s.backendError(w, err)
		return
	}
	if id != item.ID {
		s.problem(w, http.StatusBadGateway, memory.ProblemAdapterError, "the backend acknowledged a different id than the item's own", nil)
		return
	}
	// What json.Marshal writes for {"id": id}: a canonical UUID needs no escaping.
	buf.Reset()
	buf.WriteString(`{"id":"`)
	buf.Write(memory.AppendID(buf.AvailableBuffer(), id))
	buf.WriteString(`"}`)
	s.writeBytes(w, http.StatusCreated, buf.Bytes())
}

func (s *Server) retrieveItem(w http.ResponseWriter, r *http.Request) {
	id, err := memory.ParseID(r.PathValue("id"))
	if err != nil {
		s.problem(w, http.StatusBadRequest, memory.ProblemInvalidRequest, err.Error(), nil)
		return
	}
	if !s.checkValid(w) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.OperationTimeout)
	defer cancel()
	st, _ := s.storeFor(w, r)
	if st == nil {
		return
	}
	s.metrics.backendCalls.WithLabelValues("retrieve").Inc()
	it, err := st.Retrieve(ctx, id)
	if err != nil {
		s.backendError(w, err)
		return
	}
	if it == nil {
		s.problem(w, http.StatusNotFound, memory.ProblemNotFound, "no item has id "+id.String(), nil)
		return
	}
	if it.ID != id {
		s.problem(w, http.StatusBadGateway, memory.ProblemAdapterError, "the backend returned an item with a different id", nil)
		return
	}
	s.writeItems(w, nil, it)
}

type searchResult struct {
	Items []memory.Item `json:"items"`
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	buf := getBuffer()
	defer putBuffer(buf)
	body, ok := s.readBody(w, r, buf)
	if !ok {
		return
	}
	q, err := DecodeQuery(body)
	if err != nil {
		s.problem(w, http.StatusBadRequest, memory.ProblemInvalidRequest, err.Error(), nil)
		return
	}
	// The whole key set is checked against the published manifest before the backend sees
	// anything, so partial filtering cannot occur.
	if err := memory.CheckQuery(s.manifest, q); err != nil {
		s.backendError(w, err)
		return
	}
	if !s.checkValid(w) {
		return
	}
	if q.Limit == 0 {
		s.writeJSON(w, http.StatusOK, searchResult{Items: []memory.Item{}})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.OperationTimeout)
	defer cancel()
	st, _ := s.storeFor(w, r)
	if st == nil {
		return
	}
	s.metrics.backendCalls.WithLabelValues("search").Inc()
	items, err := st.Search(ctx, q)
	if err != nil {
		s.backendError(w, err)
		return
	}
	if len(items) > q.Limit {
		s.problem(w, http.StatusBadGateway, memory.ProblemAdapterError, fmt.Sprintf("the backend returned %d items for limit %d", len(items), q.Limit), nil)
		return
	}
	if items == nil {
		items = []memory.Item{}
	}
	s.writeItems(w, items, nil)
}

// backendError maps the contract's stable errors to problem types. An untyped error is a
// backend contract violation and is reported as adapter_error, never as a 500.
func (s *Server) backendError(w http.ResponseWriter, err error) {
	var uq *memory.UnsupportedMemoryQuery
	switch problemTypeOf(err) {
	case memory.ProblemUnsupportedQuery:
		errors.As(err, &uq)
		s.problem(w, http.StatusUnprocessableEntity, memory.ProblemUnsupportedQuery, uq.Error(), memory.NewUnsupportedQuery(uq.RejectedKeys...).RejectedKeys)
	case memory.ProblemUnavailable:
		s.kickRefresh()
		s.problem(w, http.StatusServiceUnavailable, memory.ProblemUnavailable, err.Error(), nil)
	default:
		s.problem(w, http.StatusBadGateway, memory.ProblemAdapterError, err.Error(), nil)
	}
}

// readBody reads at most MaxBodyBytes; a longer body is 413 and is not decoded at all. A body
// that is not application/json is 415 and is not read: form posts and text/plain are "simple"
// requests a browser sends cross-site without a CORS preflight, so accepting them would let
// any web page write items. The body is read into buf, which the caller may reuse once it
// has decoded the body: the decoders copy what they keep.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) ([]byte, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && !isJSONMediaType(ct) {
		s.problem(w, http.StatusUnsupportedMediaType, memory.ProblemUnsupportedMediaType, "the body must be Content-Type: application/json", nil)
		return nil, false
	}
	if r.ContentLength > s.cfg.MaxBodyBytes {
		s.problem(w, http.StatusRequestEntityTooLarge, memory.ProblemPayloadTooLarge, fmt.Sprintf("body is over %d bytes", s.cfg.MaxBodyBytes), nil)
		return nil, false
	}
	if r.ContentLength > 0 {
		// Room for the announced body, bounded: an announcement is not yet bytes received.
		// ReadFrom wants bytes.MinRead free before each read, the final one included.
		buf.Grow(int(min(r.ContentLength, preGrowMax)) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.problem(w, http.StatusRequestEntityTooLarge, memory.ProblemPayloadTooLarge, fmt.Sprintf("body is over %d bytes", s.cfg.MaxBodyBytes), nil)
			return nil, false
		}
		s.problem(w, http.StatusBadRequest, memory.ProblemInvalidRequest, "reading the body: "+err.Error(), nil)
		return nil, false
	}
	return buf.Bytes(), true
}

// DecodeItem decodes a store request body exactly as the server does: one JSON object,
// strict fields, content and metadata within memory.MaxJSONDepth. It is exported for the
// fuzz targets and for clients that want the same rules.
func DecodeItem(body []byte) (memory.Item, error) {
	if err := checkObject(body); err != nil {
		return memory.Item{}, err
	}
	// json.Unmarshal's value and errors, validating the body once.
	it, err := memory.UnmarshalItem(body)
	if err != nil {
		return it, err
	}
	return it, depthError(memory.CheckItemDepth(it))
}

// DecodeQuery decodes a search request body exactly as the server does, filter values within
// memory.CheckQueryDepth's bound.
func DecodeQuery(body []byte) (memory.Query, error) {
	if err := checkObject(body); err != nil {
		return memory.Query{}, err
	}
	// json.Unmarshal's value and errors, validating the body once.
	q, err := memory.UnmarshalQuery(body)
	if err != nil {
		return q, err
	}
	return q, depthError(memory.CheckQueryDepth(q))
}

// depthError strips the MemoryAdapterError prefix, so that the 400's detail is exactly
// memory.TooDeepMessage, the words every backend uses for the same refusal.
func depthError(err error) error {
	if err == nil {
		return nil
	}
	var ae *memory.MemoryAdapterError
	if errors.As(err, &ae) {
		return errors.New(ae.Message)
	}
	return err
}

// checkObject refuses a body that does not start as a JSON object or is not UTF-8.
func checkObject(body []byte) error {
	if !bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{")) {
		return errors.New("the body must be one JSON object")
	}
	// JSON text is UTF-8 (RFC 8259 §8.1); encoding/json would copy invalid bytes into raw
	// values, and the backend's refusal would then be a 502 for what is the client's error.
	if !utf8.Valid(body) {
		return errors.New("the body is not valid UTF-8")
	}
	return nil
}

// problem writes an application/problem+json error and counts it by type.
func (s *Server) problem(w http.ResponseWriter, status int, typ memory.ProblemType, detail string, rejected []string) {
	if status >= 500 {
		s.log.Warn("Request failed", "problemType", string(typ), "status", status, "detail", detail)
	}
	if rw, ok := w.(*recorder); ok {
		rw.problemType = string(typ)
	}
	p := memory.Problem{Type: typ, Title: titles[typ], Status: status, Detail: truncateDetail(detail), RejectedKeys: rejected}
	b, err := json.Marshal(p)
	if err != nil {
		b = []byte(`{"type":"adapter_error","title":"Adapter error","status":502}`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Details echo parts of hostile input (a bad UUID, a decode error); bound them.
func truncateDetail(s string) string {
	const max = 512
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

var titles = map[memory.ProblemType]string{
	memory.ProblemInvalidRequest:       "Invalid request",
	memory.ProblemUnauthorized:         "Unauthorized",
	memory.ProblemForbidden:            "Forbidden",
	memory.ProblemNotFound:             "Not found",
	memory.ProblemMethodNotAllowed:     "Method not allowed",
	memory.ProblemPayloadTooLarge:      "Payload too large",
	memory.ProblemUnsupportedMediaType: "Unsupported media type",
	memory.ProblemUnsupportedQuery:     "Unsupported memory query",
	memory.ProblemAdapterError:         "Memory adapter error",
	memory.ProblemUnavailable:          "Memory adapter unavailable",
	memory.ProblemQuotaExceeded:        "Quota exceeded",
	memory.ProblemRateLimited:          "Rate limited",
}

// writeItems answers 200 with one item (it non-nil) or a search page, with the bytes
// json.Marshal writes for them (memory.AppendItemJSON) but without its second pass over each
// item. Any encoding error takes json.Marshal's path, for the same message.
func (s *Server) writeItems(w http.ResponseWriter, items []memory.Item, it *memory.Item) {
	buf := getBuffer()
	defer putBuffer(buf)
	var err error
	if it != nil {
		err = memory.AppendItemJSON(buf, it)
	} else {
		buf.WriteString(`{"items":[`)
		for i := range items {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err = memory.AppendItemJSON(buf, &items[i]); err != nil {
				break
			}
		}
		buf.WriteString(`]}`)
	}
	if err != nil {
		if it != nil {
			s.writeJSON(w, http.StatusOK, it)
		} else {
			s.writeJSON(w, http.StatusOK, searchResult{Items: items})
		}
		return
	}
	s.writeBytes(w, http.StatusOK, buf.Bytes())
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a backend item with invalid raw JSON can get here.
		s.problem(w, http.StatusBadGateway, memory.ProblemAdapterError, "encoding the response: "+err.Error(), nil)
		return
	}
	s.writeBytes(w, status, b)
}

// writeBytes answers status with the JSON body b. Write copies b out (into the
// connection's buffer or onto the wire) before it returns, so b may be a pooled buffer's.
func (s *Server) writeBytes(w http.ResponseWriter, status int, b []byte) {
	// Canonical keys set directly, with shared values that net/http only reads: Header.Set
	// would allocate a slice per header per response.
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

var (
	jsonContentType = []string{"application/json"}
	noSniff         = []string{"nosniff"}
)

// buffers recycles request and response bodies; one over maxPooled is left to the
// collector, so a rare large body does not stay pinned in the pool.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooled = 1 << 20

// preGrowMax bounds what an announced Content-Length reserves before the body arrives.
const preGrowMax = 64 << 10

func getBuffer() *bytes.Buffer {
	buf := buffers.Get().(*bytes.Buffer)
	buf.Reset()
	return buf
}

func putBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooled {
		buffers.Put(buf)
	}
}
