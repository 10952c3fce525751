package memory_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func TestCheckScope(t *testing.T) {
	tests := []struct {
		scope string
		ok    bool
	}{
		{"a", true},
		{"conformance-1a2b", true},
		{"agents_v2.eu", true},
		{strings.Repeat("a", memory.MaxScopeLength), true},
		{strings.Repeat("a", memory.MaxScopeLength+1), false},
		{"", false},
		{"1abc", false},
		{"Upper", false},
		{"with space", false},
		{"Robert'); DROP TABLE items;--", false},
		{"ünï", false},
	}
	for _, tt := range tests {
		t.Run(tt.scope, func(t *testing.T) {
			NewWithT(t).Expect(memory.CheckScope(tt.scope) == nil).To(Equal(tt.ok))
		})
	}
}

func TestCheckItemAndQueryLimits(t *testing.T) {
	many := func(n int) []string { return make([]string, n) }
	meta := func(n int) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for i := range n {
			m[strings.Repeat("k", i+1)] = json.RawMessage("1")
		}
		return m
	}
	long := strings.Repeat("x", memory.MaxQueryTextBytes+1)
	tests := []struct {
		name string
		err  error
		ok   bool
	}{
		{"tags at the limit", memory.CheckItemLimits(memory.Item{Tags: many(memory.MaxTagsPerItem)}), true},
		{"too many tags", memory.CheckItemLimits(memory.Item{Tags: many(memory.MaxTagsPerItem + 1)}), false},
		{"tag at the limit", memory.CheckItemLimits(memory.Item{Tags: []string{strings.Repeat("t", memory.MaxTagBytes)}}), true},
		{"tag too long", memory.CheckItemLimits(memory.Item{Tags: []string{strings.Repeat("t", memory.MaxTagBytes+1)}}), false},
		{"metadata keys at the limit", memory.CheckItemLimits(memory.Item{Metadata: meta(memory.MaxMetadataKeys)}), true},
		{"too many metadata keys", memory.CheckItemLimits(memory.Item{Metadata: meta(memory.MaxMetadataKeys + 1)}), false},
		{"query tags at the limit", memory.CheckQueryLimits(memory.Query{Tags: many(memory.MaxQueryTags)}), true},
		{"too many query tags", memory.CheckQueryLimits(memory.Query{Tags: many(memory.MaxQueryTags + 1)}), false},
		{"query text too long", memory.CheckQueryLimits(memory.Query{Text: &long}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			if tt.ok {
				g.Expect(tt.err).NotTo(HaveOccurred())
				return
			}
			var ae *memory.MemoryAdapterError
			g.Expect(errors.As(tt.err, &ae)).To(BeTrue(), "want a MemoryAdapterError, got %v", tt.err)
		})
	}
	// The wire must be able to carry the largest storable item.
	NewWithT(t).Expect(memory.MaxRequestBytes).To(BeNumerically(">", memory.MaxItemBytes))
}

func TestMatches(t *testing.T) {
	text := func(s string) *string { return &s }
	it := memory.Item{
		Content:  json.RawMessage(`"Hello World"`),
		Tags:     []string{"a", "b"},
		Metadata: map[string]json.RawMessage{"source": json.RawMessage(`{"x":1,"y":2}`), "n": json.RawMessage(`10`)},
	}
	tests := []struct {
		name string
		q    memory.Query
		want bool
	}{
		{"empty query", memory.Query{}, true},
		{"case-insensitive substring", memory.Query{Text: text("WORLD")}, true},
		{"text absent", memory.Query{Text: text("moon")}, false},
		{"any one tag", memory.Query{Tags: []string{"z", "b"}}, true},
		{"no tag in common", memory.Query{Tags: []string{"z"}}, false},
		{"filter equal as JSON", memory.Query{Filters: map[string]json.RawMessage{"source": json.RawMessage(`{"y":2,"x":1}`), "n": json.RawMessage(`1e1`)}}, true},
		{"filter value differs", memory.Query{Filters: map[string]json.RawMessage{"n": json.RawMessage(`11`)}}, false},
		{"filter key missing", memory.Query{Filters: map[string]json.RawMessage{"branch_id": json.RawMessage(`1`)}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var needle string
			if tt.q.Text != nil {
				needle = memory.Needle(*tt.q.Text)
			}
			NewWithT(t).Expect(memory.Matches(it, tt.q, needle)).To(Equal(tt.want))
		})
	}
}

func TestContentText(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"Straße"`, "Straße"},
		{`{"a": [1, 2]}`, `{"a":[1,2]}`},
		{`12`, "12"},
	}
	for _, tt := range tests {
		NewWithT(t).Expect(memory.ContentText(json.RawMessage(tt.in))).To(Equal(tt.want), tt.in)
	}
}
