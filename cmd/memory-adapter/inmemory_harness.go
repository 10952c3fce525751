package main

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// inMemoryHarness is the live harness of the inmemory backend: one store per disposable
// scope. The backend has no transport, so MakeTransportUnavailable makes the store's calls
// fail as an unreachable service would (the wire harness cuts HTTP instead by default), and
// MakeWriteRejected makes the wrapper refuse one id as a service constraint would: both test
// what the caller (the HTTP server in harness mode) makes of the failure. It has no
// WrongKindMaker: the inmemory backend holds memory items only, there is no other native
// kind to plant, so that case is NotApplicable for it.
type inMemoryHarness struct {
	filters []string

	mu       sync.Mutex
	store    *inmemory.Store
	cut      bool
	rejected map[uuid.UUID]bool
}

func newInMemoryHarness(filters []string) *inMemoryHarness {
	return &inMemoryHarness{filters: filters, store: inmemory.New(inmemory.Options{SupportedFilters: filters}), rejected: map[uuid.UUID]bool{}}
}

func (h *inMemoryHarness) MakeStore(context.Context) (memory.ExternalStore, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return &cutStore{ExternalStore: h.store, h: h}, nil
}

func (h *inMemoryHarness) Reset(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.store, h.cut, h.rejected = inmemory.New(inmemory.Options{SupportedFilters: h.filters}), false, map[uuid.UUID]bool{}
	return nil
}

// MakeWriteRejected returns an item whose store the wrapper refuses with MemoryAdapterError.
func (h *inMemoryHarness) MakeWriteRejected(context.Context) (memory.Item, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	it := memory.NewItem([]byte(`"refused by the inmemory harness"`))
	h.rejected[it.ID] = true
	return it, nil
}

func (h *inMemoryHarness) isRejected(id uuid.UUID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rejected[id]
}

func (h *inMemoryHarness) MakeSearchIndexVisible(context.Context) error { return nil }

func (h *inMemoryHarness) MakeTransportUnavailable(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut = true
	return nil
}

func (h *inMemoryHarness) Close(context.Context) error { return nil }

func (h *inMemoryHarness) isCut() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cut
}

type cutStore struct {
	memory.ExternalStore
	h *inMemoryHarness
}

func (c *cutStore) Store(ctx context.Context, it memory.Item) (uuid.UUID, error) {
	if c.h.isCut() {
		return uuid.Nil, memory.NewUnavailable("inmemory: transport cut by the harness", nil)
	}
	if c.h.isRejected(it.ID) {
		return uuid.Nil, memory.NewAdapterError("inmemory: write rejected by the harness", nil)
	}
	return c.ExternalStore.Store(ctx, it)
}

func (c *cutStore) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	if c.h.isCut() {
		return nil, memory.NewUnavailable("inmemory: transport cut by the harness", nil)
	}
	return c.ExternalStore.Retrieve(ctx, id)
}

func (c *cutStore) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	if err := memory.CheckQuery(c.Manifest(), q); err != nil {
		return nil, err
	}
	if c.h.isCut() {
		return nil, memory.NewUnavailable("inmemory: transport cut by the harness", nil)
	}
	return c.ExternalStore.Search(ctx, q)
}
