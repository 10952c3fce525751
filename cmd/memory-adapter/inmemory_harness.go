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
// fail as an unreachable service would (the wire harness cuts HTTP instead by default).
type inMemoryHarness struct {
	filters []string

	mu    sync.Mutex
	store *inmemory.Store
	cut   bool
}

func newInMemoryHarness(filters []string) *inMemoryHarness {
	return &inMemoryHarness{filters: filters, store: inmemory.New(inmemory.Options{SupportedFilters: filters})}
}

func (h *inMemoryHarness) MakeStore(context.Context) (memory.ExternalStore, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return &cutStore{ExternalStore: h.store, h: h}, nil
}

func (h *inMemoryHarness) Reset(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.store, h.cut = inmemory.New(inmemory.Options{SupportedFilters: h.filters}), false
	return nil
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
