package postgres

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestLikeTextSearchIsLiteral: the text predicate is an escaped LIKE (migration 3's trigram
// index applies to it), so besides storetest.LiteralText's % and _ the escape character
// itself, a backslash, must match only itself, alone and before a wildcard.
func TestLikeTextSearchIsLiteral(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	texts := []string{`a\b`, `ab`, `100\% sure`, `100% sure`, `x\_y`, `x_y`, `xzy`, `end\`}
	for _, tx := range texts {
		c, err := json.Marshal(tx)
		if err != nil {
			t.Fatal(err)
		}
		mustStore(t, s, memory.NewItem(c))
	}
	cases := []struct {
		needle string
		want   []string
	}{
		{`\`, []string{`a\b`, `100\% sure`, `x\_y`, `end\`}},
		{`a\b`, []string{`a\b`}},
		{`\%`, []string{`100\% sure`}},
		{`%`, []string{`100\% sure`, `100% sure`}},
		{`\_`, []string{`x\_y`}},
		{`_`, []string{`x\_y`, `x_y`}},
		{`d\`, []string{`end\`}},
		{`\\`, nil},
	}
	for _, c := range cases {
		t.Run(c.needle, func(t *testing.T) {
			hits, err := s.Search(context.Background(), memory.Query{Text: ptr(c.needle), Limit: 100})
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			var got []string
			for _, hit := range hits {
				var str string
				if err := json.Unmarshal(hit.Content, &str); err != nil {
					t.Fatal(err)
				}
				got = append(got, str)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("text %q: got %q, want %q", c.needle, got, c.want)
			}
		})
	}
}

// TestContainmentDoesNotWidenFilters: the filter statement adds jsonb containment for the
// index, which alone would also accept a longer array or a larger object; the equality
// beside it keeps the contract's JSON equality.
func TestContainmentDoesNotWidenFilters(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	values := []string{`[1]`, `[1,2]`, `{"a":1}`, `{"a":1,"b":2}`, `1.0`, `"s"`}
	ids := map[string]string{}
	for _, v := range values {
		it := memory.NewItem(json.RawMessage(`null`))
		it.Metadata["source"] = json.RawMessage(v)
		mustStore(t, s, it)
		ids[it.ID.String()] = v
	}
	for _, c := range []struct{ filter, want string }{
		{`[1]`, `[1]`}, {`{"a":1}`, `{"a":1}`}, {`1`, `1.0`}, {`"s"`, `"s"`},
	} {
		hits, err := s.Search(context.Background(), memory.Query{
			Filters: map[string]json.RawMessage{"source": json.RawMessage(c.filter)}, Limit: 100})
		if err != nil {
			t.Fatalf("Search %s: %v", c.filter, err)
		}
		var got []string
		for _, hit := range hits {
			got = append(got, ids[hit.ID.String()])
		}
		if !slices.Equal(got, []string{c.want}) {
			t.Errorf("filter source=%s: got %q, want [%s]", c.filter, got, c.want)
		}
	}
}

// TestMigrationThreeIndexes: migration 3 creates the jsonb_path_ops index and, pg_trgm
// being part of Debian's server package, the trigram index.
func TestMigrationThreeIndexes(t *testing.T) {
	h := newHarness(t)
	_ = newStore(t, h)
	rows, err := h.admin.Query(context.Background(), `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname`, h.schema)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		defs[name] = def
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"memory_items_metadata":    "jsonb_path_ops",
		"memory_items_search_trgm": "gin_trgm_ops",
		"memory_items_tags":        "gin (tags)",
		"memory_items_scope_seq":   "(scope, seq)",
	} {
		if !strings.Contains(defs[name], want) {
			t.Errorf("index %s: %q, want it to mention %q", name, defs[name], want)
		}
	}
}
