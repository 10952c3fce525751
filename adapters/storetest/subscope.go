package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// SubScopes checks memory.ScopedStore on root, a store of scope: two sub-scopes and root
// hold the same id independently, none retrieves or finds another's items (text, tag and
// the empty query), a second view of a sub-scope sees what the first stored, and closing a
// view (where a view can be closed) leaves root serving. Search is polled, so eventual
// backends pass once their index caught up; a leak must be absent after the owner's own
// search shows the item.
func SubScopes(t *testing.T, root memory.ScopedStore, scope string) {
	t.Helper()
	ctx := Ctx(t)
	view := func(sub string) memory.ExternalStore {
		t.Helper()
		name, err := memory.SubScope(scope, sub)
		if err != nil {
			t.Fatal(err)
		}
		v, err := root.InScope(ctx, name)
		if err != nil {
			t.Fatalf("InScope(%s): %v", name, err)
		}
		if !reflectManifest(v.Manifest(), root.Manifest()) {
			t.Fatalf("InScope(%s): manifest %+v, want the root's %+v", name, v.Manifest(), root.Manifest())
		}
		return v
	}
	a, b := view("planner"), view("recaller.team-2")
	id := uuid.New()
	items := map[string]memory.Item{}
	for name, s := range map[string]memory.ExternalStore{"root": root, "a": a, "b": b} {
		it := memory.NewItem(json.RawMessage(`"needle-`+name+`"`), "tag-"+name, "shared-tag")
		it.ID = id
		MustStore(t, s, it)
		items[name] = it
	}
	stores := map[string]memory.ExternalStore{"root": root, "a": a, "b": b}
	for name, s := range stores {
		got := MustRetrieve(t, s, id)
		if string(got.ContentJSON()) != string(items[name].ContentJSON()) {
			t.Errorf("%s retrieves %s, want its own %s", name, got.ContentJSON(), items[name].ContentJSON())
		}
	}
	onlyItem := memory.NewItem(json.RawMessage(`"only in a"`), "only-a")
	only := onlyItem.ID
	MustStore(t, a, onlyItem)
	for name, s := range map[string]memory.ExternalStore{"root": root, "b": b} {
		if got, err := s.Retrieve(ctx, only); err != nil || got != nil {
			t.Errorf("%s retrieves a's item: %v, %v", name, got, err)
		}
	}
	for owner, s := range stores {
		queries := []memory.Query{
			{Text: Text("needle-"), Limit: 50},
			{Tags: []string{"shared-tag"}, Limit: 50},
			{Limit: 50},
		}
		for _, q := range queries {
			hits := searchUntil(t, s, q, func(hits []memory.Item) bool {
				return slices.ContainsFunc(hits, func(h memory.Item) bool {
					return string(h.ContentJSON()) == string(items[owner].ContentJSON())
				})
			})
			for _, h := range hits {
				if h.ID == id && string(h.ContentJSON()) != string(items[owner].ContentJSON()) {
					t.Errorf("%s's search %+v finds another scope's item %s", owner, q, h.ContentJSON())
				}
				if owner != "a" && h.ID == only {
					t.Errorf("%s's search %+v finds a's item", owner, q)
				}
			}
		}
	}
	again := view("planner")
	if got := MustRetrieve(t, again, only); string(got.ContentJSON()) != `"only in a"` {
		t.Errorf("a second view of a retrieves %s", got.ContentJSON())
	}
	if c, ok := a.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			t.Errorf("closing a view: %v", err)
		}
		MustRetrieve(t, root, id)
	}
	if _, err := root.InScope(ctx, "Not A Scope"); err == nil {
		t.Error("InScope accepted an invalid scope name")
	}
}

// searchUntil searches s with q until done holds for the hits (an eventual index catching
// up) or the shared deadline passes, and returns the last hits.
func searchUntil(t *testing.T, s memory.Store, q memory.Query, done func([]memory.Item) bool) []memory.Item {
	t.Helper()
	ctx, cancel := context.WithTimeout(Ctx(t), 30*time.Second)
	defer cancel()
	for {
		hits, err := s.Search(ctx, q)
		if err != nil {
			t.Fatalf("search %+v: %v", q, err)
		}
		if done(hits) {
			return hits
		}
		select {
		case <-ctx.Done():
			t.Fatalf("search %+v never showed the item: %d hits", q, len(hits))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func reflectManifest(a, b memory.Manifest) bool { return a.Hash() == b.Hash() }
