package storetest

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// PredicatesAndOrder checks each search predicate alone and in conjunction (text over the
// JSON text, any-of tags, filters by JSON value including big integers, reordered objects and
// null), that results keep insertion order, that Limit cuts after filtering, and that
// replacing an item keeps its position and its new content.
func PredicatesAndOrder(t *testing.T, f Factory) {
	t.Helper()
	h := f(t)
	s := Open(t, h)
	mk := func(content string, meta map[string]string, tags ...string) memory.Item {
		it := memory.NewItem(json.RawMessage(content), tags...)
		for k, v := range meta {
			it.Metadata[k] = json.RawMessage(v)
		}
		MustStore(t, s, it)
		return it
	}
	a := mk(`"alpha"`, map[string]string{"source": `"web"`, "branch_id": `1`}, "x", "y")
	b := mk(`{"k":"Alpha"}`, map[string]string{"source": `"chat"`, "branch_id": `1.0`}, "y")
	c := mk(`"gamma"`, map[string]string{"source": `"web"`, "branch_id": `{"b":1,"a":2}`}, "z")
	d := mk(`"delta"`, map[string]string{"branch_id": `12345678901234567890123`}, "x")
	e := mk(`"eps"`, map[string]string{"branch_id": `12345678901234567890124`, "source": `null`})
	// Replacing an item keeps its position.
	a2 := a
	a2.Content = json.RawMessage(`"alpha replaced"`)
	MustStore(t, s, a2)
	Visible(t, h)

	filter := func(k, v string) map[string]json.RawMessage {
		return map[string]json.RawMessage{k: json.RawMessage(v)}
	}
	cases := []struct {
		name string
		q    memory.Query
		want []uuid.UUID
	}{
		{"all in insertion order", memory.Query{Limit: 10}, []uuid.UUID{a.ID, b.ID, c.ID, d.ID, e.ID}},
		{"limit", memory.Query{Limit: 2}, []uuid.UUID{a.ID, b.ID}},
		{"text in JSON object", memory.Query{Text: Text("alpha"), Limit: 10}, []uuid.UUID{a.ID, b.ID}},
		{"JSON punctuation is text", memory.Query{Text: Text(`{"k":`), Limit: 10}, []uuid.UUID{b.ID}},
		{"any tag", memory.Query{Tags: []string{"z", "x"}, Limit: 10}, []uuid.UUID{a.ID, c.ID, d.ID}},
		{"string filter", memory.Query{Filters: filter("source", `"web"`), Limit: 10}, []uuid.UUID{a.ID, c.ID}},
		{"number filter by value", memory.Query{Filters: filter("branch_id", `1`), Limit: 10}, []uuid.UUID{a.ID, b.ID}},
		{"number filter limit in Go", memory.Query{Filters: filter("branch_id", `1e0`), Limit: 1}, []uuid.UUID{a.ID}},
		{"big integer filter exact", memory.Query{Filters: filter("branch_id", `12345678901234567890124`), Limit: 10}, []uuid.UUID{e.ID}},
		{"object filter reordered", memory.Query{Filters: filter("branch_id", `{"a":2,"b":1}`), Limit: 10}, []uuid.UUID{c.ID}},
		{"null filter", memory.Query{Filters: filter("source", `null`), Limit: 10}, []uuid.UUID{e.ID}},
		{"conjunction", memory.Query{Text: Text("a"), Tags: []string{"y"}, Filters: filter("source", `"chat"`), Limit: 10}, []uuid.UUID{b.ID}},
		{"zero limit", memory.Query{Limit: 0}, []uuid.UUID{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits, err := s.Search(Ctx(t), c.q)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			if got := IDs(hits); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	got := MustRetrieve(t, s, a.ID)
	if !got.Equal(a2) {
		t.Fatalf("replaced item differs in %v", got.Diff(a2))
	}
}
