package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Harness is the part of conformance.Harness the behaviour tests need: a way to open store
// instances over one scope and a way to wait for that scope's search index.
type Harness interface {
	// MakeStore opens a store instance over the harness's scope; instances share data.
	MakeStore(ctx context.Context) (memory.ExternalStore, error)
	// MakeSearchIndexVisible returns once every acknowledged write is visible to Search;
	// immediately consistent backends return nil at once.
	MakeSearchIndexVisible(ctx context.Context) error
}

// Factory returns a fresh harness over an empty scope whose stores accept the filter keys
// "branch_id" and "source"; it registers the harness's clean-up with t.
type Factory func(t *testing.T) Harness

// Single wraps one immediately consistent store as a Harness whose MakeStore always returns
// it, for backends such as the in-memory reference store that have no separate harness.
func Single(s memory.ExternalStore) Harness { return single{s} }

type single struct{ s memory.ExternalStore }

func (h single) MakeStore(context.Context) (memory.ExternalStore, error) { return h.s, nil }
func (single) MakeSearchIndexVisible(context.Context) error              { return nil }

// caseTimeout bounds each shared test so a hung backend fails instead of stalling the run.
const caseTimeout = 2 * time.Minute

// Ctx returns a context bounded by the shared per-test deadline and cancelled at clean-up.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), caseTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Open makes a store instance from h or fails the test.
func Open(t testing.TB, h Harness) memory.ExternalStore {
	t.Helper()
	s, err := h.MakeStore(Ctx(t))
	if err != nil {
		t.Fatalf("MakeStore: %v", err)
	}
	return s
}

// Visible waits for h's search index to show every acknowledged write or fails the test.
func Visible(t testing.TB, h Harness) {
	t.Helper()
	if err := h.MakeSearchIndexVisible(Ctx(t)); err != nil {
		t.Fatalf("MakeSearchIndexVisible: %v", err)
	}
}

// MustStore stores it and fails the test unless the store acknowledges it under its own id.
func MustStore(t testing.TB, s memory.Store, it memory.Item) {
	t.Helper()
	id, err := s.Store(Ctx(t), it)
	if err != nil {
		t.Fatalf("Store %v: %v", it.ID, err)
	}
	if id != it.ID {
		t.Fatalf("Store returned %v, want the item's own id %v", id, it.ID)
	}
}

// MustRetrieve reads id and fails the test on an error or when the item is missing.
func MustRetrieve(t testing.TB, s memory.Store, id uuid.UUID) memory.Item {
	t.Helper()
	got, err := s.Retrieve(Ctx(t), id)
	if err != nil {
		t.Fatalf("Retrieve: %v", err)
	}
	if got == nil {
		t.Fatalf("Retrieve(%v) = nil, want the stored item", id)
	}
	return *got
}

// Text returns a pointer to s, for memory.Query.Text literals.
func Text(s string) *string { return &s }

// IDs lists the items' ids in order; it never returns nil, so an empty result compares
// equal to an empty want list.
func IDs(items []memory.Item) []uuid.UUID {
	out := make([]uuid.UUID, 0, len(items))
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}
