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

// TestFilterHashIsImpliedByEquality: the filter statement adds the equality of the values'
// jsonb_hash for the key's index; values jsonb equality calls equal (1 and 1.0, objects in
// another key order) must still match, and values it does not must not.
func TestFilterHashIsImpliedByEquality(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	values := []string{`1.0`, `{"a":1,"b":[1,2]}`, `[1]`, `[1,2]`, `"s"`, `null`, `12345678901234567890123`}
	ids := map[string]string{}
	for _, v := range values {
		it := memory.NewItem(json.RawMessage(`null`))
		it.Metadata["source"] = json.RawMessage(v)
		mustStore(t, s, it)
		ids[it.ID.String()] = v
	}
	for _, c := range []struct{ filter, want string }{
		{`1`, `1.0`}, {`1e0`, `1.0`}, {`{"b":[1,2.0],"a":1}`, `{"a":1,"b":[1,2]}`}, {`[1]`, `[1]`},
		{`"s"`, `"s"`}, {`null`, `null`}, {`12345678901234567890123.00`, `12345678901234567890123`},
		{`12345678901234567890124`, ``}, {`"S"`, ``},
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
		var want []string
		if c.want != "" {
			want = []string{c.want}
		}
		if !slices.Equal(got, want) {
			t.Errorf("filter source=%s: got %q, want %q", c.filter, got, want)
		}
	}
}

// TestSearchIndexes: migration 3 creates the trigram index (pg_trgm is part of Debian's
// server package) and Open one hash-expression index and, on PostgreSQL 14+ (the test
// server is 15), one extended statistics object per supported filter key.
func TestSearchIndexes(t *testing.T) {
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
		"memory_items_search_trgm": "gin_trgm_ops",
		"memory_items_tags":        "gin (tags)",
		"memory_items_scope_seq":   "(scope, seq)",
	} {
		if !strings.Contains(defs[name], want) {
			t.Errorf("index %s: %q, want it to mention %q", name, defs[name], want)
		}
	}
	var perKey []string
	for _, def := range defs {
		if strings.Contains(def, "jsonb_hash") {
			perKey = append(perKey, def)
		}
	}
	joined := strings.Join(perKey, "\n")
	if len(perKey) != 2 || !strings.Contains(joined, `(metadata -> 'branch_id'::text)`) || !strings.Contains(joined, `(metadata -> 'source'::text)`) {
		t.Errorf("filter indexes: %q, want one per default key (branch_id, source)", perKey)
	}
	var stats int
	if err := h.admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_statistic_ext e
		JOIN pg_namespace n ON n.oid = e.stxnamespace WHERE n.nspname = $1 AND e.stxkind @> '{f,m}'`, h.schema).Scan(&stats); err != nil {
		t.Fatal(err)
	}
	if stats != 2 {
		t.Errorf("%d extended statistics with dependencies and MCV lists, want one per default key", stats)
	}
}
