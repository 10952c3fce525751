package postgres

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestPurgeScopeDeletesOnlyItsItems: the purge removes every memory item of its scope, and
// nothing else: not another scope's items (even one whose name extends it), not a record of
// another kind in the same scope. A second purge finds nothing.
func TestPurgeScopeDeletesOnlyItsItems(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	s := newStore(t, h)
	var mine []uuid.UUID
	for i := range 3 {
		it := memory.NewItem([]byte(`"mine"`), "t", string(rune('a'+i)))
		mustStore(t, s, it)
		mine = append(mine, it.ID)
	}
	// A sub-scope's items go with the scope (memory.SubScope).
	sub, err := memory.SubScope(h.Scope(), "planner")
	if err != nil {
		t.Fatal(err)
	}
	view, err := s.InScope(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		it := memory.NewItem([]byte(`"in a sub-scope"`))
		mustStore(t, view, it)
		mine = append(mine, it.ID)
	}
	foreign, err := h.MakeWrongKindRecord(ctx)
	if err != nil {
		t.Fatal(err)
	}
	others := map[string]uuid.UUID{}
	for _, scope := range []string{h.Scope() + "x", "other-" + relstore.RandomHex(4)} {
		o := h.StoreOptions()
		o.Scope = scope
		other, err := Open(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = other.Close() })
		it := memory.NewItem([]byte(`"theirs"`))
		mustStore(t, other, it)
		others[scope] = it.ID
	}

	n, err := PurgeScope(ctx, Options{URL: testURL, Schema: h.Schema(), Scope: h.Scope()})
	if err != nil || n != 5 {
		t.Fatalf("PurgeScope = %d, %v; want 5 items deleted (3 of the scope, 2 of its sub-scope)", n, err)
	}
	for _, id := range mine {
		got, err := s.Retrieve(ctx, id)
		if err == nil && got == nil {
			got, err = view.Retrieve(ctx, id)
		}
		if err != nil || got != nil {
			t.Errorf("item %s after the purge: %v, %v", id, got, err)
		}
	}
	for scope, id := range others {
		o := h.StoreOptions()
		o.Scope = scope
		other, err := Open(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := other.Retrieve(ctx, id)
		_ = other.Close()
		if err != nil || got == nil {
			t.Errorf("scope %s lost its item %s: %v, %v", scope, id, got, err)
		}
	}
	var kinds int
	if err := h.admin.QueryRow(ctx, `SELECT count(*) FROM `+h.table()+` WHERE scope = $1 AND id = $2`, h.Scope(), foreign).Scan(&kinds); err != nil || kinds != 1 {
		t.Errorf("the record of another kind: %d rows, %v; want it kept", kinds, err)
	}
	if n, err := PurgeScope(ctx, Options{URL: testURL, Schema: h.Schema(), Scope: h.Scope()}); err != nil || n != 0 {
		t.Errorf("second PurgeScope = %d, %v; want 0, nil", n, err)
	}
}

// TestPurgeScopeWithoutTable: a server the adapter never used holds nothing to purge, and the
// purge creates nothing there.
func TestPurgeScopeWithoutTable(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	schema := "mao_purge_" + relstore.RandomHex(6)
	n, err := PurgeScope(ctx, Options{URL: testURL, Schema: schema, Scope: "s"})
	if err != nil || n != 0 {
		t.Fatalf("PurgeScope on a missing schema = %d, %v; want 0, nil", n, err)
	}
	var created bool
	if err := h.admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&created); err != nil || created {
		t.Errorf("schema %s exists after the purge (%v): the purge must not create anything", schema, err)
	}
}

// TestPurgeScopeErrorsAreTyped: bad options are MemoryAdapterError before any I/O; a server
// that does not answer is MemoryAdapterUnavailable; neither error carries the password.
func TestPurgeScopeErrorsAreTyped(t *testing.T) {
	closed := storetest.ClosedAddr(t)
	for _, tc := range []struct {
		name string
		opts Options
		want error
	}{
		{"bad scope", Options{URL: testURL, Scope: "Bad Scope"}, memory.ErrAdapter},
		{"bad schema", Options{URL: testURL, Scope: "s", Schema: "Bad-Schema"}, memory.ErrAdapter},
		{"bad URL", Options{URL: "postgres://u:hunter2@[::1", Scope: "s"}, memory.ErrAdapter},
		{"no server", Options{URL: "postgres://u:hunter2@" + closed + "/db", Scope: "s"}, memory.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PurgeScope(context.Background(), tc.opts)
			storetest.ExpectKind(t, err, tc.want, "hunter2")
		})
	}
}
