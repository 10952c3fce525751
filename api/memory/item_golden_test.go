package memory

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
)

// goldenItem carries every character encoding/json escapes (HTML characters, U+2028/9,
// control characters, quotes and backslashes in keys), whitespace inside raw values and a
// number literal that must stay verbatim.
func goldenItem() Item {
	return Item{
		ID:        uuid.MustParse("6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e"),
		CreatedAt: 1767225600.12345,
		Metadata: map[string]json.RawMessage{
			"source":           json.RawMessage(` "a<b>&c" `),
			"k\"ey\\\n\u2028<": json.RawMessage(`{ "x" : [ 1e400 , "\u2029" , "é" ] }`),
			"branch_id":        json.RawMessage(`null`),
			"ünï":              json.RawMessage(`12345678901234567890123`),
		},
		Content: json.RawMessage(`{ "text" : "x < y && \u2028 \t" , "n" : -0.0e-0 }`),
		Tags:    []string{"<t>", "a&b", "\u2028", "é", "q\"\\"},
	}
}

// goldenItemWire is what json.Marshal(goldenItem()) wrote before the one-pass encoder; the
// server, the remote client and Redis's stored payload all depend on these exact bytes.
const goldenItemWire = `{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1767225600.12345,"metadata":{"branch_id":null,"k\"ey\\\n\u2028\u003c":{"x":[1e400,"\u2029","é"]},"source":"a\u003cb\u003e\u0026c","ünï":12345678901234567890123},"content":{"text":"x \u003c y \u0026\u0026 \u2028 \t","n":-0.0e-0},"tags":["\u003ct\u003e","a\u0026b","\u2028","é","q\"\\"]}`

func TestItemWireBytesAreUnchanged(t *testing.T) {
	b, err := json.Marshal(goldenItem())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != goldenItemWire {
		t.Errorf("json.Marshal(item):\n got %s\nwant %s", b, goldenItemWire)
	}
	// MarshalItem is json.Marshal in one pass: the same bytes, here and for an item without
	// any character to escape, and the same error for an item MarshalJSON refuses.
	plain := goldenItem()
	plain.Metadata = map[string]json.RawMessage{"source": json.RawMessage(`"s"`)}
	plain.Content = json.RawMessage(`{"text":"plain"}`)
	plain.Tags = []string{"t"}
	broken := goldenItem()
	broken.Content = json.RawMessage(`{"unterminated"`)
	for _, it := range []Item{goldenItem(), plain, broken} {
		want, wantErr := json.Marshal(it)
		got, err := MarshalItem(it)
		if string(got) != string(want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("MarshalItem: %s, %v; json.Marshal: %s, %v", got, err, want, wantErr)
		}
	}
}

// TestPlainStringsAgreesWithEncodingJSON pins stringList's one-pass path to the
// encoding/json path it short-cuts: on every input the fast path accepts, both give the same
// list; on the others the fast path declines.
func TestPlainStringsAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`[]`, ` [ ] `, `["a"]`, `["a","b"]`, ` [ "a" , "" , "a" ] `, "[\"x\x7fy\"]", `["with space","t42"]`,
		`null`, `["\u00e9"]`, `["é"]`, `["a\"b"]`, `["a\\b"]`, `[1]`, `["a",null]`, `["a",]`, `["a"`,
		`["a"] x`, `[,"a"]`, `{"a":1}`, `"a"`, `["a" "b"]`, "[\"a\tb\"]", ``,
	} {
		var ref []*string
		refErr := json.Unmarshal([]byte(in), &ref)
		got, ok := plainStrings([]byte(in), "")
		if !ok {
			continue
		}
		if refErr != nil {
			t.Errorf("%q: the fast path accepted what encoding/json refuses (%v)", in, refErr)
			continue
		}
		want := make([]string, len(ref))
		for i, p := range ref {
			if p == nil {
				t.Fatalf("%q: null element accepted", in)
			}
			want[i] = *p
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) || (got == nil) != (ref == nil) {
			t.Errorf("%q: fast path %q, encoding/json %q", in, got, want)
		}
	}
	// The fast path must actually take the common shapes.
	for _, in := range []string{`[]`, `["t42","common"]`} {
		if _, ok := plainStrings([]byte(in), ""); !ok {
			t.Errorf("%q: fast path declined", in)
		}
	}
}
