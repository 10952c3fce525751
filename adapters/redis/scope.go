package redis

import (
	"context"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

var _ memory.ScopedStore = (*Store)(nil)

// InScope implements memory.ScopedStore: a store for scope on the same client, with the
// scope's own keys (every key of a scope carries its name in the prefix) and its own
// indexer, since search is fed per scope. It prepares the scope as Open does. Closing the
// view stops its indexer; closing s closes every view.
func (s *Store) InScope(ctx context.Context, scope string) (memory.ExternalStore, error) {
	if err := s.checkOpen("in scope"); err != nil {
		return nil, err
	}
	if s.parent != nil {
		return s.parent.InScope(ctx, scope)
	}
	if err := memory.CheckScope(scope); err != nil {
		return nil, memory.NewAdapterError("in scope: "+err.Error(), nil)
	}
	cfg := s.cfg
	cfg.scope = scope
	v := &Store{
		cfg: cfg, k: newKeys(scope), client: s.client, manifest: s.manifest, pin: s.pin,
		openVersion: s.openVersion, openPersistence: s.openPersistence, parent: s,
	}
	if err := v.ensureScope(ctx); err != nil {
		return nil, err
	}
	// As Open does: a sub-scope written before retention existed is brought under it.
	if err := v.backfillStored(ctx); err != nil {
		return nil, err
	}
	s.viewsMu.Lock()
	defer s.viewsMu.Unlock()
	if s.closed.Load() {
		return nil, memory.NewUnavailable("in scope: the adapter is closed", nil)
	}
	v.ix = newIndexer(v)
	go v.ix.run()
	s.views = append(s.views, v)
	return v, nil
}

// closeViews closes the views InScope made, before their client goes.
func (s *Store) closeViews() {
	s.viewsMu.Lock()
	views := s.views
	s.views = nil
	s.viewsMu.Unlock()
	for _, v := range views {
		_ = v.Close()
	}
}
