package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// HarnessGrants is the data listener's token source in a governed harness mode (serve
// --harness with governance flags): the token file's grants, plus the tokens the harness
// protocol's governance-tokens call issued last, each working in a fresh sub-scope.
type HarnessGrants struct {
	base TokenSource

	mu     sync.Mutex
	issued []Grant
}

// NewHarnessGrants returns a source of base's tokens (full access unless base grants less)
// and, once issued, the governance profiles' tokens.
func NewHarnessGrants(base TokenSource) *HarnessGrants { return &HarnessGrants{base: base} }

// Grants implements GrantSource.
func (h *HarnessGrants) Grants() []Grant {
	var out []Grant
	if gs, ok := h.base.(GrantSource); ok {
		out = slices.Clone(gs.Grants())
	} else if h.base != nil {
		for _, d := range h.base.TokenDigests() {
			out = append(out, Grant{Digest: d})
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(out, h.issued...)
}

// TokenDigests implements TokenSource.
func (h *HarnessGrants) TokenDigests() [][sha256.Size]byte { return digestsOf(h.Grants()) }

// GovernanceTokens are the governance profiles' data tokens (the body of POST
// /harness/v1/governance-tokens' answer).
type GovernanceTokens struct {
	// ReadWrite reads and writes the governed sub-scope G.
	ReadWrite string `json:"read_write"`
	// ReadOnly reads G.
	ReadOnly string `json:"read_only"`
	// SubScopeA reads and writes sub-scope A.
	SubScopeA string `json:"sub_scope_a"`
	// SubScopeB reads and writes sub-scope B.
	SubScopeB string `json:"sub_scope_b"`
}

// Issue replaces the issued tokens with four new ones: read-write and read-only in a fresh
// sub-scope G, read-write in fresh sub-scopes A and B. Fresh names make every profile start
// empty without a reset having to know the sub-scopes.
func (h *HarnessGrants) Issue() (GovernanceTokens, error) {
	suffix := uuid.NewString()[:8]
	grants := []Grant{{SubScope: "g-" + suffix}, {SubScope: "g-" + suffix, ReadOnly: true}, {SubScope: "a-" + suffix}, {SubScope: "b-" + suffix}}
	tokens := make([]string, len(grants))
	for i := range grants {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return GovernanceTokens{}, err
		}
		tokens[i] = hex.EncodeToString(b[:])
		grants[i].Digest = sha256.Sum256([]byte(tokens[i]))
	}
	h.mu.Lock()
	h.issued = grants
	h.mu.Unlock()
	return GovernanceTokens{ReadWrite: tokens[0], ReadOnly: tokens[1], SubScopeA: tokens[2], SubScopeB: tokens[3]}, nil
}

var _ memory.ScopedStore = (*HarnessStore)(nil)

// InScope implements memory.ScopedStore: a view of scope through whichever store is current,
// so that a reset (which replaces the store) never leaves the server a closed one.
func (h *HarnessStore) InScope(_ context.Context, scope string) (memory.ExternalStore, error) {
	if _, ok := h.current().(memory.ScopedStore); !ok {
		return nil, memory.NewAdapterError("harness store: the backend store serves no sub-scopes", nil)
	}
	if err := memory.CheckScope(scope); err != nil {
		return nil, memory.NewAdapterError("harness store: "+err.Error(), nil)
	}
	return &harnessScope{h: h, scope: scope}, nil
}

// Scope is the disposable scope's name, when the backend's harness names it.
func (h *HarnessStore) Scope() string {
	if s, ok := h.inner.(interface{ Scope() string }); ok {
		return s.Scope()
	}
	return ""
}

// harnessScope is a sub-scope of the harness store, opened anew on every call.
type harnessScope struct {
	h     *HarnessStore
	scope string
}

var (
	_ memory.Sweeper       = (*harnessScope)(nil)
	_ memory.UsageReporter = (*harnessScope)(nil)
)

func (v *harnessScope) view(ctx context.Context) (memory.ExternalStore, error) {
	v.h.calls.Add(1)
	sc, ok := v.h.current().(memory.ScopedStore)
	if !ok {
		return nil, memory.NewAdapterError("harness store: the backend store serves no sub-scopes", nil)
	}
	return sc.InScope(ctx, v.scope)
}

func (v *harnessScope) Manifest() memory.Manifest { return v.h.Manifest() }

func (v *harnessScope) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	s, err := v.view(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	return s.Store(ctx, item)
}

func (v *harnessScope) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	s, err := v.view(ctx)
	if err != nil {
		return nil, err
	}
	return s.Retrieve(ctx, id)
}

func (v *harnessScope) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	s, err := v.view(ctx)
	if err != nil {
		return nil, err
	}
	return s.Search(ctx, q)
}

func (v *harnessScope) Sweep(ctx context.Context, p memory.RetentionPolicy, now time.Time) (int64, error) {
	s, err := v.view(ctx)
	if err != nil {
		return 0, err
	}
	sw, ok := s.(memory.Sweeper)
	if !ok {
		return 0, errors.New("harness store: the backend store does not sweep")
	}
	return sw.Sweep(ctx, p, now)
}

func (v *harnessScope) Usage(ctx context.Context) (memory.Usage, error) {
	s, err := v.view(ctx)
	if err != nil {
		return memory.Usage{}, err
	}
	u, ok := s.(memory.UsageReporter)
	if !ok {
		return memory.Usage{}, errors.New("harness store: the backend store does not count its usage")
	}
	return u.Usage(ctx)
}
