package inmemory_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// harness runs the conformance suite against the reference store.
//
// The reference store has no transport and no service behind it, so two of the seed's
// capabilities are emulated honestly rather than exercised: MakeSearchIndexVisible is a no-op
// because the store is immediately consistent, and MakeTransportUnavailable flips a switch in
// a thin wrapper (cutStore) that stands in for the transport: while it is set, every call on
// any store this harness made fails with MemoryAdapterUnavailable without reaching the
// reference store. The transport-outage case therefore checks the wrapper's error mapping,
// not anything inside inmemory. The harness cannot plant a non-memory record or make a
// service reject a write, so wrong-native-kind and rejected-write are NotApplicable; it
// does not count transport requests, because the reference store validates queries inside
// the same call the wrapper would count.
type harness struct {
	mu    sync.Mutex
	store *inmemory.Store
	cut   bool
}

var _ conformance.Harness = (*harness)(nil)

func (h *harness) MakeStore(ctx context.Context) (memory.ExternalStore, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &cutStore{h: h}, nil
}

func (h *harness) Reset(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.store = inmemory.New(inmemory.Options{})
	h.cut = false
	return ctx.Err()
}

func (h *harness) MakeSearchIndexVisible(ctx context.Context) error { return ctx.Err() }

func (h *harness) MakeTransportUnavailable(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut = true
	return ctx.Err()
}

func (h *harness) Close(ctx context.Context) error { return nil }

// current returns the disposable store, or an error while the "transport" is cut.
func (h *harness) current(op string) (*inmemory.Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cut {
		return nil, memory.NewUnavailable("inmemory harness: transport cut during "+op, nil)
	}
	return h.store, nil
}

// cutStore forwards to the harness's current reference store unless the transport is cut.
type cutStore struct{ h *harness }

func (s *cutStore) Manifest() memory.Manifest {
	return inmemory.Manifest(memory.DefaultSupportedFilters())
}

func (s *cutStore) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	st, err := s.h.current("store")
	if err != nil {
		return uuid.Nil, err
	}
	return st.Store(ctx, item)
}

func (s *cutStore) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	st, err := s.h.current("retrieve")
	if err != nil {
		return nil, err
	}
	return st.Retrieve(ctx, id)
}

func (s *cutStore) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	st, err := s.h.current("search")
	if err != nil {
		return nil, err
	}
	return st.Search(ctx, q)
}

func TestConformance(t *testing.T) {
	h := &harness{}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	r := conformance.Run(t, h)
	// The reference store publishes a full, immediate manifest; every case that the
	// harness can observe must have passed, and only the two it cannot are NotApplicable.
	if r.Counts.Passed != len(conformance.Cases())-2 || r.Counts.NotApplicable != 2 {
		t.Errorf("counts %+v, want %d passed and 2 not applicable\n%s", r.Counts, len(conformance.Cases())-2, r.Table())
	}
	for _, id := range []conformance.CaseID{conformance.CaseWrongNativeKind, conformance.CaseRejectedWrite} {
		if c, _ := r.Case(id); c.Outcome != conformance.NotApplicable {
			t.Errorf("%s: %s, want NotApplicable", id, c.Outcome)
		}
	}
}
