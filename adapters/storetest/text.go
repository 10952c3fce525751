package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/google/uuid"
)

// LiteralText checks that Query.Text is a case-insensitive literal substring match: SQL
// wildcards (% and _), glob stars and regular-expression metacharacters match only
// themselves, Unicode case folds, and hits come back in insertion order.
func LiteralText(t *testing.T, f Factory) {
	t.Helper()
	h := f(t)
	s := Open(t, h)
	texts := []string{
		"100% sure", "100 percent", "snake_case", "snakeXcase", "a*b", "aXXb", "Ünïcode CASE",
		"glob*star", "plain TEXT", "a.c", "abc", "[x]",
	}
	for _, tx := range texts {
		c, err := json.Marshal(tx)
		if err != nil {
			t.Fatal(err)
		}
		MustStore(t, s, memory.NewItem(c))
	}
	Visible(t, h)
	cases := []struct {
		needle string
		want   []string
	}{
		{"%", []string{"100% sure"}},
		{"0%", []string{"100% sure"}},
		{"a%", nil},
		{"_", []string{"snake_case"}},
		{"e_c", []string{"snake_case"}},
		{"s_a", nil},
		{"*", []string{"a*b", "glob*star"}},
		{"a*b", []string{"a*b"}},
		{"g*", nil},
		{".", []string{"a.c"}},
		{"a.c", []string{"a.c"}},
		{"[x]", []string{"[x]"}},
		{"ünïcode case", []string{"Ünïcode CASE"}},
		{"SNAKE", []string{"snake_case", "snakeXcase"}},
		{"text", []string{"plain TEXT"}},
		{"nothing-like-this", nil},
	}
	for _, c := range cases {
		t.Run(c.needle, func(t *testing.T) {
			hits, err := s.Search(Ctx(t), memory.Query{Text: Text(c.needle), Limit: 100})
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			var got []string
			for _, h := range hits {
				var str string
				if err := json.Unmarshal(h.Content, &str); err != nil {
					t.Fatalf("hit content %s is not one of the stored strings: %v", h.Content, err)
				}
				got = append(got, str)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("text %q: got %q, want %q", c.needle, got, c.want)
			}
		})
	}
}

// TextMatchesReference checks that each needle's search over s returns exactly the items of
// live (in storing order) that memory.Matches accepts, at a limit that holds every hit and
// at limit 1: the adapters' text index tests call it after each change to the index's rows.
func TextMatchesReference(t *testing.T, s memory.Store, live []memory.Item, needles []string) {
	t.Helper()
	ctx := context.Background()
	for _, needle := range needles {
		for _, limit := range []int{1, 100} {
			q := memory.Query{Text: Text(needle), Limit: limit}
			var want []uuid.UUID
			for _, it := range live {
				if len(want) < limit && memory.Matches(it, q, memory.Needle(needle)) {
					want = append(want, it.ID)
				}
			}
			hits, err := s.Search(ctx, q)
			if err != nil {
				t.Fatalf("Search(%q): %v", needle, err)
			}
			if got := IDs(hits); !slices.Equal(got, want) {
				t.Errorf("text %q limit %d: got %v, want %v (memory.Matches)", needle, limit, got, want)
			}
		}
	}
}

// storeTextIndexItems stores one item per relstore.TextIndexTexts text in s, its content
// the text as a JSON string and its tag t<i%3>, and returns them in storing order.
func storeTextIndexItems(t *testing.T, s memory.Store) []memory.Item {
	t.Helper()
	var live []memory.Item
	for i, text := range relstore.TextIndexTexts() {
		c, err := json.Marshal(text)
		if err != nil {
			t.Fatal(err)
		}
		it := memory.NewItem(c, fmt.Sprintf("t%d", i%3))
		if _, err := s.Store(context.Background(), it); err != nil {
			t.Fatal(err)
		}
		live = append(live, it)
	}
	return live
}

// TextIndexHooks are an adapter's views of its sampled suffix text index (relstore's
// shape) for [TextIndex].
type TextIndexHooks struct {
	// Candidates probes the index for a needle and returns how many candidate rows it
	// names (a row may count twice), or -1 when it does not answer with candidates.
	Candidates func(ctx context.Context, needle string) (int, error)
	// CheckRows fails t unless the index holds exactly relstore.TextGrams of each row's
	// search text, under that row, and nothing else.
	CheckRows func(t *testing.T, live []memory.Item)
	// Delete removes the item with id behind the adapter's back, as a purge would.
	Delete func(ctx context.Context, id uuid.UUID) error
}

// TextIndex checks an adapter's text index through s, an empty store: searches equal
// memory.Matches for relstore.TextIndexNeedles after stores, replacements that change and
// keep the text, and a delete; the probe is what answers (a rare needle gets its row and
// the rows too long for the index as candidates, an absent one only those), the index holds
// exactly the live rows' grams, and searches with tags too agree.
func TextIndex(t *testing.T, s memory.Store, h TextIndexHooks) {
	t.Helper()
	ctx := context.Background()
	live := storeTextIndexItems(t, s)
	TextMatchesReference(t, s, live, relstore.TextIndexNeedles())
	// "deep needle", beyond relstore.TextIndexBytes, is found through the long rows.
	for needle, want := range map[string]int{"item 4242 lorem": 1, "lorem item": 0, "deep needle": 0, "日本語のテ": 1} {
		got, err := h.Candidates(ctx, needle)
		if want += relstore.LongTexts(live); err != nil || got != want {
			t.Errorf("text index probe for %q: %d candidate(s) (%v), want %d", needle, got, err, want)
		}
	}
	h.CheckRows(t, live)

	// A replacement that changes the text, one that keeps it (the update trigger's WHEN
	// skips it), and a delete.
	live[0].Content = json.RawMessage(`"now about zebras"`)
	live[1].Tags = []string{"other"}
	for _, it := range live[:2] {
		if _, err := s.Store(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Delete(ctx, live[2].ID); err != nil {
		t.Fatal(err)
	}
	live = slices.Delete(live, 2, 3)
	TextMatchesReference(t, s, live, append(relstore.TextIndexNeedles(), "now about", "about zebras"))
	h.CheckRows(t, live)

	// With tags too: the tag and text index answers are intersected, or one index walked
	// while the other's condition is checked.
	for _, q := range []memory.Query{
		{Text: Text("lorem ipsum"), Tags: []string{"t1", "t2"}, Limit: 10},
		{Text: Text("shifted token"), Tags: []string{"t0"}, Limit: 10},
		{Text: Text("shifted token"), Tags: []string{"absent"}, Limit: 10},
		{Text: Text("abab"), Tags: []string{"t0", "t1", "t2"}, Limit: 10},
	} {
		var want []uuid.UUID
		for _, it := range live {
			if memory.Matches(it, q, memory.Needle(*q.Text)) {
				want = append(want, it.ID)
			}
		}
		hits, err := s.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got := IDs(hits); !slices.Equal(got, want) {
			t.Errorf("%+v: got %v, want %v", q, got, want)
		}
	}
}
