package redis

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// scopeKeys lists every key under a scope's prefix.
func scopeKeys(t *testing.T, h *Harness, scope string) []string {
	t.Helper()
	ks, err := h.admin.Keys(testCtx(t), newKeys(scope).pattern()).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ks)
	return ks
}

// TestPurgeScopeDeletesOnlyItsItems: the purge removes every memory item of its scope and the
// scope's index, stream and config, and nothing else: not another scope's keys (even a scope
// whose name extends this one), not another program's records at item identities. A second
// purge finds nothing, and a new store on the purged scope starts empty.
func TestPurgeScopeDeletesOnlyItsItems(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	s, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []uuid.UUID
	for i := range 3 {
		it := memory.NewItem(json.RawMessage(`"mine"`), "t", string(rune('a'+i)))
		mustStore(t, s, it)
		mine = append(mine, it.ID)
	}
	if err := s.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	// A sub-scope's items and index go with the scope (memory.SubScope).
	sub, err := memory.SubScope(h.Scope(), "planner")
	if err != nil {
		t.Fatal(err)
	}
	view, err := s.InScope(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		it := memory.NewItem(json.RawMessage(`"in a sub-scope"`))
		mustStore(t, view, it)
		mine = append(mine, it.ID)
	}
	if err := view.(*Store).WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	// The purge runs when no instance writes to the scope; a live indexer would recreate the
	// scope's config and consumer group when it sees them gone.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	foreign, err := h.MakeWrongKindRecord(ctx)
	if err != nil {
		t.Fatal(err)
	}
	occupied, err := h.MakeWriteRejected(ctx)
	if err != nil {
		t.Fatal(err)
	}
	others := map[*Harness]uuid.UUID{}
	for _, scope := range []string{h.Scope() + "x", "other-" + randomSuffix()} {
		oh, err := NewHarness(ctx, HarnessOptions{Addr: redisAddr, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = oh.Close(context.Background()) })
		st, err := oh.OpenStore(ctx)
		if err != nil {
			t.Fatal(err)
		}
		it := memory.NewItem(json.RawMessage(`"theirs"`))
		mustStore(t, st, it)
		// Indexed and closed, so the snapshot below does not move by itself.
		if err := st.WaitIndexed(ctx); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		others[oh] = it.ID
	}
	otherKeys := map[string][]string{}
	for oh := range others {
		otherKeys[oh.Scope()] = scopeKeys(t, h, oh.Scope())
	}

	res, err := PurgeScope(ctx, Options{Addr: redisAddr, Scope: h.Scope()})
	if err != nil || res.Items != 5 || res.Keys <= 5 {
		t.Fatalf("PurgeScope = %+v, %v; want 5 items (3 of the scope, 2 of its sub-scope) and their index keys", res, err)
	}
	if left := scopeKeys(t, h, sub); len(left) != 0 {
		t.Errorf("keys left in the purged sub-scope: %q", left)
	}
	left := scopeKeys(t, h, h.Scope())
	want := []string{h.k.item(foreign), h.k.item(occupied.ID)}
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("keys left in the purged scope: %q; want only the two foreign records %q", left, want)
	}
	for oh, id := range others {
		if got := scopeKeys(t, h, oh.Scope()); !slices.Equal(got, otherKeys[oh.Scope()]) {
			t.Errorf("scope %s changed: %q, was %q", oh.Scope(), got, otherKeys[oh.Scope()])
		}
		st, err := oh.OpenStore(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := st.Retrieve(ctx, id); err != nil || got == nil {
			t.Errorf("scope %s lost its item %s: %v, %v", oh.Scope(), id, got, err)
		}
	}
	if res, err := PurgeScope(ctx, Options{Addr: redisAddr, Scope: h.Scope()}); err != nil || res.Items != 0 {
		t.Errorf("second PurgeScope = %+v, %v; want no item", res, err)
	}
	again, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range mine {
		if got, err := again.Retrieve(ctx, id); err != nil || got != nil {
			t.Errorf("item %s after the purge: %v, %v", id, got, err)
		}
	}
	if hits, err := again.Search(ctx, memory.Query{Limit: 10}); err != nil || len(hits) != 0 {
		t.Errorf("search after the purge: %d hits, %v", len(hits), err)
	}
}

// TestPurgeScopeErrorsAreTyped: bad options are MemoryAdapterError before any I/O, a server
// that does not answer is MemoryAdapterUnavailable, and no error carries the password.
func TestPurgeScopeErrorsAreTyped(t *testing.T) {
	closed := storetest.ClosedAddr(t)
	for _, tc := range []struct {
		name string
		opts Options
		want error
	}{
		{"bad scope", Options{Addr: redisAddr, Scope: "Bad Scope"}, memory.ErrAdapter},
		{"glob in scope", Options{Addr: redisAddr, Scope: "a*"}, memory.ErrAdapter},
		{"bad URL", Options{URL: "redis://u:hunter2@[::1", Scope: "s"}, memory.ErrAdapter},
		{"no server", Options{URL: "redis://u:hunter2@" + closed, Scope: "s"}, memory.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PurgeScope(testCtx(t), tc.opts)
			storetest.ExpectKind(t, err, tc.want, "hunter2")
		})
	}
}
