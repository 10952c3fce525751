package inmemory

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// scopes holds the stores of the other scopes a Store served, so that two views of one
// scope see the same items, as two connections to a server would.
type scopes struct {
	mu     sync.Mutex
	stores map[string]*Store
}

// InScope implements memory.ScopedStore: the items of scope, empty at first, kept for the
// life of the store New made.
func (s *Store) InScope(ctx context.Context, scope string) (memory.ExternalStore, error) {
	if err := ctx.Err(); err != nil {
		return nil, memory.NewUnavailable("in scope", err)
	}
	if err := memory.CheckScope(scope); err != nil {
		return nil, memory.NewAdapterError("in scope: "+err.Error(), nil)
	}
	s.scopes.mu.Lock()
	defer s.scopes.mu.Unlock()
	if st, ok := s.scopes.stores[scope]; ok {
		return st, nil
	}
	if s.scopes.stores == nil {
		s.scopes.stores = map[string]*Store{}
	}
	st := &Store{manifest: s.manifest, now: s.now, items: map[uuid.UUID]memory.Item{}, stored: map[uuid.UUID]stamp{}, scopes: s.scopes}
	s.scopes.stores[scope] = st
	return st, nil
}
