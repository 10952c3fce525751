package cond

import (
	"strings"
	"testing"
)

func TestTruncateKeepsRunesWhole(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"}, // é is two bytes: cutting inside it keeps neither half
		{"日本", 4, "日"},
		{"日本", 2, ""},
	} {
		if got := Truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestNewBoundsTheMessage(t *testing.T) {
	long := strings.Repeat("x", MessageLimit+10)
	c := New("Healthy", "False", "Why", long)
	if len(c.Message) != MessageLimit+len("…") || !strings.HasSuffix(c.Message, "…") {
		t.Fatalf("message of %d bytes, want %d ending in an ellipsis", len(c.Message), MessageLimit+len("…"))
	}
	if c := New("Healthy", "True", "Fine", "short"); c.Message != "short" || c.Type != "Healthy" || c.Reason != "Fine" {
		t.Fatalf("a short message changed: %+v", c)
	}
}
