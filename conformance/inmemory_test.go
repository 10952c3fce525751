package conformance

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// referenceHarness runs the suite against adapters/inmemory from this package's own tests,
// so that go test ./conformance/... covers the reference store as well as the fake. The
// outage is emulated by a switch in front of the store (there is no transport); the
// adapter package's own conformance_test.go documents the same harness for authors.
type referenceHarness struct {
	mu    sync.Mutex
	store *inmemory.Store
	cut   bool
}

type referenceStore struct{ h *referenceHarness }

func (h *referenceHarness) MakeStore(context.Context) (memory.ExternalStore, error) {
	return referenceStore{h}, nil
}

func (h *referenceHarness) Reset(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.store, h.cut = inmemory.New(inmemory.Options{}), false
	return nil
}

func (h *referenceHarness) MakeSearchIndexVisible(context.Context) error { return nil }

func (h *referenceHarness) MakeTransportUnavailable(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut = true
	return nil
}

func (h *referenceHarness) Close(context.Context) error { return nil }

func (s referenceStore) get() (*inmemory.Store, error) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if s.h.cut {
		return nil, memory.NewUnavailable("reference harness: transport cut", nil)
	}
	return s.h.store, nil
}

func (s referenceStore) Manifest() memory.Manifest {
	return inmemory.Manifest(memory.DefaultSupportedFilters())
}

func (s referenceStore) Store(ctx context.Context, it memory.Item) (uuid.UUID, error) {
	st, err := s.get()
	if err != nil {
		return uuid.Nil, err
	}
	return st.Store(ctx, it)
}

func (s referenceStore) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	st, err := s.get()
	if err != nil {
		return nil, err
	}
	return st.Retrieve(ctx, id)
}

func (s referenceStore) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	st, err := s.get()
	if err != nil {
		return nil, err
	}
	return st.Search(ctx, q)
}

func TestReferenceStorePasses(t *testing.T) {
	var progress strings.Builder
	opts := fastOptions()
	opts.Progress = &progress
	r := Execute(t.Context(), &referenceHarness{}, opts)
	if r.Result != Passed || r.Counts.NotApplicable != 2 {
		t.Fatalf("reference store: %+v\n%s", r.Counts, r.Table())
	}
	if lines := strings.Count(progress.String(), "\n"); lines != len(cases) {
		t.Errorf("progress has %d lines, want one per case:\n%s", lines, progress.String())
	}
}
