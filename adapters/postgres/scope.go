package postgres

import (
	"context"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

var _ memory.ScopedStore = (*Store)(nil)

// InScope implements memory.ScopedStore: a store for scope on the same connection pool, so
// that a sub-scope costs no connection of its own. Every row carries its scope and every
// statement names it, so the view reads and writes only scope's rows. Closing the view does
// nothing; closing s ends it.
func (s *Store) InScope(ctx context.Context, scope string) (memory.ExternalStore, error) {
	if err := ctx.Err(); err != nil {
		return nil, memory.NewUnavailable("postgres: in scope", err)
	}
	if err := memory.CheckScope(scope); err != nil {
		return nil, memory.NewAdapterError("postgres: in scope: "+err.Error(), nil)
	}
	v := &Store{
		pool: s.pool, pin: s.pin, scope: scope, table: s.table, schema: s.schema,
		manifest: s.manifest, timeout: s.timeout, retries: s.retries, rules: s.rules,
		versions: s.versions, storeSQL: s.storeSQL, retrieveSQL: s.retrieveSQL, now: s.now,
	}
	v.closeOnce.Do(func() {}) // the pool is s's to close
	return v, nil
}
