package wireharness_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/server/openapitest"
	"github.com/agentmem/memory-adapter-operator/internal/server/wireharness"
)

// memHarness is the inmemory backend's harness: one store per disposable scope, and a cut
// that makes every call fail as an unreachable backend would.
type memHarness struct {
	mu       sync.Mutex
	store    *inmemory.Store
	cut      bool
	rejected map[uuid.UUID]bool
}

// MakeWriteRejected returns an item the backend will refuse, as a service constraint would.
func (h *memHarness) MakeWriteRejected(context.Context) (memory.Item, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	it := memory.NewItem([]byte(`"refused"`))
	h.rejected[it.ID] = true
	return it, nil
}

func newMemHarness() *memHarness {
	return &memHarness{store: inmemory.New(inmemory.Options{}), rejected: map[uuid.UUID]bool{}}
}

func (h *memHarness) MakeStore(context.Context) (memory.ExternalStore, error) {
	return &cuttable{ExternalStore: h.store, h: h}, nil
}

func (h *memHarness) Reset(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.store, h.cut, h.rejected = inmemory.New(inmemory.Options{}), false, map[uuid.UUID]bool{}
	return nil
}

func (h *memHarness) MakeSearchIndexVisible(context.Context) error { return nil }

func (h *memHarness) MakeTransportUnavailable(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut = true
	return nil
}

func (h *memHarness) Close(context.Context) error { return nil }

func (h *memHarness) isRejected(id uuid.UUID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rejected[id]
}

func (h *memHarness) isCut() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cut
}

type cuttable struct {
	memory.ExternalStore
	h *memHarness
}

func (c *cuttable) Store(ctx context.Context, it memory.Item) (uuid.UUID, error) {
	if c.h.isCut() {
		return uuid.Nil, memory.NewUnavailable("cut", nil)
	}
	if c.h.isRejected(it.ID) {
		return uuid.Nil, memory.NewAdapterError("constraint violated", nil)
	}
	return c.ExternalStore.Store(ctx, it)
}

func (c *cuttable) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	if c.h.isCut() {
		return nil, memory.NewUnavailable("cut", nil)
	}
	return c.ExternalStore.Retrieve(ctx, id)
}

func (c *cuttable) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	if err := memory.CheckQuery(c.Manifest(), q); err != nil {
		return nil, err
	}
	if c.h.isCut() {
		return nil, memory.NewUnavailable("cut", nil)
	}
	return c.ExternalStore.Search(ctx, q)
}

func validated(t *testing.T) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper { return openapitest.NewTransport(t, rt) }
}

func TestInMemoryThroughTheWire(t *testing.T) {
	for _, cutBackend := range []bool{false, true} {
		name := "cut-http"
		if cutBackend {
			name = "cut-backend"
		}
		t.Run(name, func(t *testing.T) {
			h := wireharness.New(newMemHarness(), wireharness.Options{Token: "t0k", CutBackend: cutBackend, WrapTransport: validated(t)})
			t.Cleanup(func() { _ = h.Close(context.Background()) })
			r := conformance.Run(t, h)
			// The wire harness's own capabilities must have been used, not skipped.
			for _, id := range []conformance.CaseID{"typed-search", "store-identifier", "unsupported-filter", "transport-outage", "rejected-write"} {
				c, ok := r.Case(id)
				if !ok || c.Outcome != conformance.Passed {
					t.Errorf("case %s: %+v", id, c)
				}
			}
		})
	}
}
