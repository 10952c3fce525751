package sqlite

import (
	"context"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

var _ memory.ScopedStore = (*Store)(nil)

// InScope implements memory.ScopedStore: a store for scope on the same database handle, so
// that a sub-scope costs no connection of its own. Every row carries its scope and every
// statement names it, so the view reads and writes only scope's rows. Closing the view does
// nothing; closing s ends it.
func (s *Store) InScope(ctx context.Context, scope string) (memory.ExternalStore, error) {
	if err := ctx.Err(); err != nil {
		return nil, memory.NewUnavailable("sqlite: in scope", err)
	}
	if err := memory.CheckScope(scope); err != nil {
		return nil, memory.NewAdapterError("sqlite: in scope: "+err.Error(), nil)
	}
	v := &Store{
		db: s.db, scope: scope, manifest: s.manifest, timeout: s.timeout, rules: s.rules,
		maxIdle: s.maxIdle, trace: s.trace, retrieve: s.retrieve, immutable: s.immutable, now: s.now,
		sweepGate: s.sweepGate, // one database, one write lock: every view's stores meet every sweep
	}
	v.closeOnce.Do(func() {}) // the handle is s's to close
	return v, nil
}
