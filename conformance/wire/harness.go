package wire

import (
	"context"
	"encoding/json"

	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// The harness protocol's paths (api/memory/openapi.yaml, tag harness).
const (
	PathCapabilities         = "/harness/v1/capabilities"
	PathReset                = "/harness/v1/reset"
	PathSearchIndexVisible   = "/harness/v1/search-index-visible"
	PathTransportUnavailable = "/harness/v1/transport-unavailable"
	PathWrongKindRecord      = "/harness/v1/wrong-kind-record"
	PathWriteRejected        = "/harness/v1/write-rejected"
	PathResponsesMalformed   = "/harness/v1/responses-malformed"
	PathIdentitylessWrite    = "/harness/v1/identityless-write"
	PathBackendCalls         = "/harness/v1/backend-calls"
	PathGovernanceTokens     = "/harness/v1/governance-tokens" //nolint:gosec // a route, not a credential
	PathRetentionSweep       = "/harness/v1/retention-sweep"
)

// GovernanceTokens is the body of POST /harness/v1/governance-tokens' answer: data-listener
// tokens of a fresh governed scope G (read-write and read-only) and of two sub-scopes.
type GovernanceTokens struct {
	// ReadWrite reads and writes G.
	ReadWrite string `json:"read_write"`
	// ReadOnly reads G and may not write.
	ReadOnly string `json:"read_only"`
	// SubScopeA reads and writes sub-scope A.
	SubScopeA string `json:"sub_scope_a"`
	// SubScopeB reads and writes sub-scope B.
	SubScopeB string `json:"sub_scope_b"`
}

// RetentionSweep is the body of POST /harness/v1/retention-sweep.
type RetentionSweep struct {
	// AfterSeconds is how far past now the sweep's clock is.
	AfterSeconds int64 `json:"after_seconds"`
}

// Capabilities is the body of GET /harness/v1/capabilities.
type Capabilities struct {
	// Capabilities names every harness endpoint the server offers.
	Capabilities []string `json:"capabilities"`
	// DuplicateIDBehaviour is the backend's declared duplicate-id behaviour, if declared.
	DuplicateIDBehaviour string `json:"duplicate_id_behaviour,omitempty"`
	// Scope names the disposable scope the harness resets, for people.
	Scope string `json:"scope,omitempty"`
}

// BackendCallCount is the body of GET /harness/v1/backend-calls.
type BackendCallCount struct {
	// Count is the number of backend calls the server made so far.
	Count int64 `json:"count"`
}

// WrongKindRecord is the body of POST /harness/v1/wrong-kind-record's answer.
type WrongKindRecord struct {
	// ID is the identity the planted record resolves to.
	ID string `json:"id"`
}

// Options configure New.
type Options struct {
	// TargetURL is the data listener's base URL (required).
	TargetURL string
	// Token is the data listener's bearer token; empty sends none.
	Token string
	// HarnessURL is the harness listener's base URL; empty means the target has no harness
	// mode, and every case that needs a capability is NotApplicable.
	HarnessURL string
	// HarnessToken is the harness listener's bearer token.
	HarnessToken string
	// DuplicateIDBehaviour is the declared behaviour when the harness declares none; when
	// both are given they must agree.
	DuplicateIDBehaviour string
	// HTTPClient is used for both listeners; nil means a new default client.
	HTTPClient *http.Client
	// Timeout bounds one request; 0 means DefaultTimeout.
	Timeout time.Duration
}

// MissingCapabilityError says that the target offers no such harness capability; the
// conformance suite turns it into NotApplicable naming the capability.
type MissingCapabilityError struct {
	// Name is the capability.
	Name string
}

// Error implements error.
func (e *MissingCapabilityError) Error() string {
	return "the target's harness does not offer capability " + e.Name
}

// MissingCapability names the absent capability (the suite's contract).
func (e *MissingCapabilityError) MissingCapability() string { return e.Name }

// Harness judges one target over the wire: conformance.Harness with every optional
// capability the protocol can carry, and conformance.WireTarget. Create it with New.
type Harness struct {
	opts    Options
	data    *endpoint
	harness *endpoint
	caps    Capabilities
	has     map[string]bool
	dup     string

	mu    sync.Mutex
	reads [][]byte
}

// maxManifestReads bounds the recorded reads; later reads are kept only when they differ
// from the first, which is all the manifest-stable case needs.
const maxManifestReads = 1024

// New checks the URLs and, with a harness URL, reads the target's capabilities.
func New(ctx context.Context, opts Options) (*Harness, error) {
	data, err := newEndpoint(opts.TargetURL, opts.Token, opts.HTTPClient, opts.Timeout)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	h := &Harness{opts: opts, data: data, has: map[string]bool{}, dup: opts.DuplicateIDBehaviour}
	if opts.HarnessURL == "" {
		return h, nil
	}
	h.harness, err = newEndpoint(opts.HarnessURL, opts.HarnessToken, opts.HTTPClient, opts.Timeout)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	status, _, body, err := h.harness.do(ctx, http.MethodGet, PathCapabilities, nil, "token")
	if err != nil {
		return nil, fmt.Errorf("harness: GET %s: %w", PathCapabilities, err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("harness: GET %s answered HTTP %d", PathCapabilities, status)
	}
	if err := json.Unmarshal(body, &h.caps); err != nil {
		return nil, fmt.Errorf("harness: GET %s: %w", PathCapabilities, err)
	}
	for _, c := range h.caps.Capabilities {
		h.has[c] = true
	}
	switch d := h.caps.DuplicateIDBehaviour; {
	case d != "" && opts.DuplicateIDBehaviour != "" && d != opts.DuplicateIDBehaviour:
		return nil, fmt.Errorf("the harness declares duplicate-id behaviour %q but %q was given", truncate(d, 32), opts.DuplicateIDBehaviour)
	case d != "":
		h.dup = d
	}
	return h, nil
}

// Capabilities returns what the harness listener declared (empty without one).
func (h *Harness) Capabilities() Capabilities {
	out := h.caps
	out.Capabilities = slices.Clone(h.caps.Capabilities)
	return out
}

// HasCapability implements conformance.CapabilityReporter. The token and the duplicate-id
// declaration come from the options as well as from the harness.
func (h *Harness) HasCapability(name string) bool {
	switch name {
	case "token":
		return h.opts.Token != ""
	case "duplicate_id_behaviour":
		return h.dup != ""
	}
	return h.has[name]
}

// call invokes one harness endpoint, or reports the capability missing.
func (h *Harness) call(ctx context.Context, capability, method, path string, out any) error {
	var body []byte
	if method == http.MethodPost {
		body = []byte(`{}`)
	}
	return h.callWith(ctx, capability, method, path, body, out)
}

// callWith is call with a request body.
func (h *Harness) callWith(ctx context.Context, capability, method, path string, body []byte, out any) error {
	if h.harness == nil || !h.has[capability] {
		return &MissingCapabilityError{Name: capability}
	}
	status, _, data, err := h.harness.do(ctx, method, path, body, "token")
	if err != nil {
		return fmt.Errorf("harness %s %s: %w", method, path, err)
	}
	if status/100 != 2 {
		return fmt.Errorf("harness %s %s answered HTTP %d: %s", method, path, status, truncate(string(data), 300))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("harness %s %s: %w", method, path, err)
		}
	}
	return nil
}

// fetchManifest reads GET /v1/manifest and records the body.
func (h *Harness) fetchManifest(ctx context.Context) (memory.Manifest, error) {
	status, mt, data, err := h.data.do(ctx, http.MethodGet, "/v1/manifest", nil, "token")
	if err != nil {
		return memory.Manifest{}, err
	}
	if status != http.StatusOK {
		return memory.Manifest{}, problemError("GET /v1/manifest", status, mt, data, "")
	}
	h.record(data)
	var m memory.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return memory.Manifest{}, memory.NewAdapterError("wire: GET /v1/manifest: undecodable manifest", err)
	}
	return m.Normalize(), nil
}

func (h *Harness) record(body []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Past the bound only reads that differ from the first are kept, and at most as many
	// again: one differing read is all the case needs to fail.
	if len(h.reads) >= maxManifestReads && (string(body) == string(h.reads[0]) || len(h.reads) >= 2*maxManifestReads) {
		return
	}
	h.reads = append(h.reads, slices.Clone(body))
}

// MakeStore returns a raw client of the target, after one manifest read (a server that does
// not answer it cannot be judged).
func (h *Harness) MakeStore(ctx context.Context) (memory.ExternalStore, error) {
	if _, err := h.fetchManifest(ctx); err != nil {
		return nil, err
	}
	return &Store{ep: h.data, h: h}, nil
}

// Reset asks the harness to empty the disposable scope and restore every fault.
func (h *Harness) Reset(ctx context.Context) error {
	return h.call(ctx, "reset", http.MethodPost, PathReset, nil)
}

// MakeSearchIndexVisible asks the harness to make everything stored so far searchable.
func (h *Harness) MakeSearchIndexVisible(ctx context.Context) error {
	return h.call(ctx, "search_index_visible", http.MethodPost, PathSearchIndexVisible, nil)
}

// MakeTransportUnavailable asks the harness to cut the server's backend until Reset.
func (h *Harness) MakeTransportUnavailable(ctx context.Context) error {
	return h.call(ctx, "transport_unavailable", http.MethodPost, PathTransportUnavailable, nil)
}

// Close releases idle connections; the target and its scope belong to whoever started it.
func (h *Harness) Close(context.Context) error {
	h.data.client.CloseIdleConnections()
	return nil
}

// MakeGovernedStores implements conformance.GovernanceHarness: raw clients of the target
// with the tokens POST /harness/v1/governance-tokens answers.
func (h *Harness) MakeGovernedStores(ctx context.Context) (rw, ro, a, b memory.ExternalStore, err error) {
	if _, err := h.fetchManifest(ctx); err != nil {
		return nil, nil, nil, nil, err
	}
	var t GovernanceTokens
	if err := h.call(ctx, "governance_tokens", http.MethodPost, PathGovernanceTokens, &t); err != nil {
		return nil, nil, nil, nil, err
	}
	stores := make([]memory.ExternalStore, 0, 4)
	for _, tok := range []string{t.ReadWrite, t.ReadOnly, t.SubScopeA, t.SubScopeB} {
		if tok == "" || len(tok) > 4096 {
			return nil, nil, nil, nil, fmt.Errorf("harness: %s answered an empty or oversized token", PathGovernanceTokens)
		}
		ep := *h.data
		ep.token = tok
		stores = append(stores, &Store{ep: &ep, h: h})
	}
	return stores[0], stores[1], stores[2], stores[3], nil
}

// SweepRetentionAfter implements conformance.RetentionSweeper with POST
// /harness/v1/retention-sweep.
func (h *Harness) SweepRetentionAfter(ctx context.Context, after time.Duration) error {
	body, err := json.Marshal(RetentionSweep{AfterSeconds: int64(after / time.Second)})
	if err != nil {
		return err
	}
	return h.callWith(ctx, "retention_sweep", http.MethodPost, PathRetentionSweep, body, nil)
}

// MakeWrongKindRecord asks the harness to plant a record of another native kind.
func (h *Harness) MakeWrongKindRecord(ctx context.Context) (uuid.UUID, error) {
	var out WrongKindRecord
	if err := h.call(ctx, "wrong_kind_record", http.MethodPost, PathWrongKindRecord, &out); err != nil {
		return uuid.Nil, err
	}
	id, err := uuid.Parse(out.ID)
	if err != nil {
		return uuid.Nil, fmt.Errorf("harness: the planted record's id: %w", err)
	}
	return id, nil
}

// MakeWriteRejected asks the harness for an item whose write the service will reject.
func (h *Harness) MakeWriteRejected(ctx context.Context) (memory.Item, error) {
	var it memory.Item
	if err := h.call(ctx, "write_rejected", http.MethodPost, PathWriteRejected, &it); err != nil {
		return memory.Item{}, err
	}
	return it, nil
}

// MakeResponsesMalformed asks the harness to make the backend answer reads malformed.
func (h *Harness) MakeResponsesMalformed(ctx context.Context) error {
	return h.call(ctx, "responses_malformed", http.MethodPost, PathResponsesMalformed, nil)
}

// MakeNextWriteIdentityless asks the harness to make the backend acknowledge the next
// write without an identity.
func (h *Harness) MakeNextWriteIdentityless(ctx context.Context) error {
	return h.call(ctx, "identityless_write", http.MethodPost, PathIdentitylessWrite, nil)
}

// BackendCalls implements conformance.BackendCallCounter.
func (h *Harness) BackendCalls(ctx context.Context) (int64, error) {
	var out BackendCallCount
	if err := h.call(ctx, "backend_calls", http.MethodGet, PathBackendCalls, &out); err != nil {
		return 0, err
	}
	return out.Count, nil
}

// evidence reads GET /v1/evidence.
func (h *Harness) evidence(ctx context.Context) (memory.EvidenceReport, error) {
	status, mt, data, err := h.data.do(ctx, http.MethodGet, "/v1/evidence", nil, "token")
	if err != nil {
		return memory.EvidenceReport{}, err
	}
	if status != http.StatusOK {
		return memory.EvidenceReport{}, problemError("GET /v1/evidence", status, mt, data, "")
	}
	var ev memory.EvidenceReport
	if err := json.Unmarshal(data, &ev); err != nil {
		return memory.EvidenceReport{}, fmt.Errorf("GET /v1/evidence: %w", err)
	}
	return ev, nil
}

// ServiceVersion implements conformance.ServiceVersioner with the service version the
// target's evidence reports. Unreadable evidence leaves it empty instead of ending the run:
// the manifest-stable case reads the evidence again and fails on it.
func (h *Harness) ServiceVersion(ctx context.Context) (string, error) {
	ev, err := h.evidence(ctx)
	if err != nil {
		return "", nil //nolint:nilerr // reported by the manifest-stable case, see above
	}
	return ev.ServiceVersion, nil
}

// AdapterVersion implements conformance.AdapterVersioner with the adapter version the
// target's evidence reports (empty when the evidence is unreadable, as ServiceVersion).
func (h *Harness) AdapterVersion(ctx context.Context) (string, error) {
	ev, err := h.evidence(ctx)
	if err != nil {
		return "", nil //nolint:nilerr // reported by the manifest-stable case
	}
	return ev.AdapterVersion, nil
}

// TargetURL implements conformance.WireTarget.
func (h *Harness) TargetURL() string { return h.opts.TargetURL }

// Exchange implements conformance.WireTarget.
func (h *Harness) Exchange(ctx context.Context, method, path string, body []byte, auth string) (int, string, []byte, error) {
	status, mt, data, err := h.data.do(ctx, method, path, body, auth)
	if err == nil && auth == "token" && method == http.MethodGet && path == "/v1/manifest" && status == http.StatusOK {
		h.record(data)
	}
	return status, mt, data, err
}

// ManifestReads implements conformance.WireTarget.
func (h *Harness) ManifestReads() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.reads)
}

// HasToken implements conformance.WireTarget.
func (h *Harness) HasToken() bool { return h.opts.Token != "" }

// DuplicateIDBehaviour implements conformance.WireTarget.
func (h *Harness) DuplicateIDBehaviour() string { return h.dup }
