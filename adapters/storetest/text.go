package storetest

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentmem/memory-adapter-operator/api/memory"
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
