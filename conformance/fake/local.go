package fake

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// localStore is the process-local map the FallbackOnCreationFailure defect silently writes to
// instead of the service. It only has to behave like a plausible store (the defect is that it
// exists at all), so it keeps items in insertion order and matches with the contract's
// reference predicates; it does not reimplement a backend's validation.
type localStore struct {
	filters []string

	mu    sync.Mutex
	order []uuid.UUID
	items map[uuid.UUID]memory.Item
}

func newLocalStore(filters []string) *localStore {
	return &localStore{filters: filters, items: map[uuid.UUID]memory.Item{}}
}

func (l *localStore) Store(_ context.Context, item memory.Item) (uuid.UUID, error) {
	if item.ID == uuid.Nil {
		return uuid.Nil, memory.NewAdapterError("store: item id must not be the nil UUID", nil)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.items[item.ID]; !ok {
		l.order = append(l.order, item.ID)
	}
	l.items[item.ID] = item.Clone()
	return item.ID, nil
}

func (l *localStore) Retrieve(_ context.Context, id uuid.UUID) (*memory.Item, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	it, ok := l.items[id]
	if !ok {
		return nil, nil
	}
	c := it.Clone()
	return &c, nil
}

func (l *localStore) Search(_ context.Context, q memory.Query) ([]memory.Item, error) {
	if err := memory.CheckQuery(memory.FullManifest("fake-fallback", l.filters), q); err != nil {
		return nil, err
	}
	var needle string
	if q.Text != nil {
		needle = memory.Needle(*q.Text)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []memory.Item{}
	for _, id := range l.order {
		if len(out) == q.Limit {
			break
		}
		if it := l.items[id]; memory.Matches(it, q, needle) {
			out = append(out, it.Clone())
		}
	}
	return out, nil
}
