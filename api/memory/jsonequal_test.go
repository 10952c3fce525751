package memory

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestJSONEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`1`, `1.0`, true},
		{`1`, `1e0`, true},
		{`100`, `1E2`, true},
		{`-0`, `0`, true},
		{`0.1`, `1e-1`, true},
		{`9007199254740993`, `9007199254740992`, false}, // equal as float64, not as decimals
		{`123456789012345678901234567890`, `123456789012345678901234567890.0`, true},
		{`0.30000000000000004`, `0.3`, false},
		{`{"a":1,"b":[1,2]}`, ` { "b" : [1, 2.0], "a" : 1 } `, true},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`"é"`, `"\u00e9"`, true},
		{`"é"`, `"e\u0301"`, false}, // code points, no Unicode normalization
		{`"1"`, `1`, false},
		{`null`, `{}`, false},
		{`true`, `true`, true},
		{`true`, `1`, false},
		{`[]`, `{}`, false},
		{`1e10000`, `1e10000`, true},  // huge exponents compare textually ...
		{`1e10000`, `10e9999`, false}, // ... and are never expanded
		{`{`, `{`, false},             // invalid JSON equals nothing, not even itself
		{``, ``, false},
		{`1 2`, `1 2`, false},
	}
	for _, tt := range tests {
		t.Run(tt.a+" vs "+tt.b, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(JSONEqual([]byte(tt.a), []byte(tt.b))).To(Equal(tt.want))
			g.Expect(JSONEqual([]byte(tt.b), []byte(tt.a))).To(Equal(tt.want), "symmetric")
		})
	}
}

func TestJSONEqualDepthBound(t *testing.T) {
	g := NewWithT(t)
	nest := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	g.Expect(JSONEqual(nest(256), nest(256))).To(BeTrue())
	g.Expect(JSONEqual(nest(258), nest(258))).To(BeFalse(), "documented bound: deeper values are never equal")
	// Far deeper than the bound, and deeper than encoding/json accepts: no stack blow-up.
	g.Expect(JSONEqual(nest(20_000), nest(20_000))).To(BeFalse())
}

func TestMetadataEqual(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name string
		a, b map[string]json.RawMessage
		want bool
	}{
		{"nil and empty", nil, map[string]json.RawMessage{}, true},
		{"same values respelled", map[string]json.RawMessage{"k": raw(`{"x":1,"y":2}`)}, map[string]json.RawMessage{"k": raw(`{"y":2.0,"x":1}`)}, true},
		{"different value", map[string]json.RawMessage{"k": raw(`1`)}, map[string]json.RawMessage{"k": raw(`2`)}, false},
		{"different key", map[string]json.RawMessage{"k": raw(`1`)}, map[string]json.RawMessage{"j": raw(`1`)}, false},
		{"missing key is not null", map[string]json.RawMessage{"k": raw(`null`)}, map[string]json.RawMessage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(MetadataEqual(tt.a, tt.b)).To(Equal(tt.want))
			g.Expect(MetadataEqual(tt.b, tt.a)).To(Equal(tt.want))
		})
	}
}

// TestJSONEqualIdenticalBytes pins JSONEqual's shortcut for identical bytes to the decoding
// comparison it skips, where a shortcut could go wrong: invalid JSON, blank input, several
// values, nesting on both sides of the 256-level bound, escapes and invalid UTF-8.
func TestJSONEqualIdenticalBytes(t *testing.T) {
	nest := func(n int, inner string) string {
		return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
	}
	values := []string{
		``, ` `, `null`, `1`, ` 1 `, `1 2`, `{"a":`, `{"a":1,"a":2}`, `"\"]]]"`, "\"\xff\"",
		`"<&>"`, `1e99999`, `{"a":[1,{"b":null}]}`,
		nest(255, `1`), nest(256, `1`), nest(257, `1`), nest(255, `[]`), nest(256, `[]`),
		nest(257, `[]`), nest(256, `{}`), nest(300, `1`), strings.Repeat("[", 10),
	}
	for _, v := range values {
		if got, want := JSONEqual([]byte(v), []byte(v)), jsonEqualDecoded([]byte(v), []byte(v)); got != want {
			t.Errorf("JSONEqual(%.40q, itself) = %v, decoding gives %v", v, got, want)
		}
	}
}
