package relstore

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func TestScanEscapes(t *testing.T) {
	cases := []struct {
		in   string
		want bool // true = rejected
	}{
		{`"plain"`, false},
		{`"a\u0000b"`, true},
		{`{"k\u0000":1}`, true},
		{`"a\\u0000b"`, false}, // an escaped backslash followed by text
		{`"a\\\u0000"`, true},  // escaped backslash, then a real NUL escape
		{`"\u0001"`, false},
		{`"\ud83d\ude00"`, false},
		{`"\uD83D\uDE00"`, false},
		{`"\ud800"`, true},
		{`"\ud800\u0041"`, true},
		{`"\udc00"`, true},
		{`["\u00000"]`, true},
		{`12345678901234567890`, false},
	}
	for _, c := range cases {
		if got := scanEscapes([]byte(c.in)) != nil; got != c.want {
			t.Errorf("scanEscapes(%s) rejected=%v, want %v", c.in, got, c.want)
		}
	}
}

func TestPrepare(t *testing.T) {
	id := uuid.New()
	ts := 1767323045.1234567
	meta := map[string]json.RawMessage{"a": json.RawMessage(` { "x" : 12345678901234567890123 } `)}
	p, err := Prepare(memory.Item{ID: id, CreatedAt: ts, Metadata: meta, Content: json.RawMessage(` "Hello  World" `)}, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Content) != `"Hello  World"` || string(p.Metadata) != `{"a":{"x":12345678901234567890123}}` {
		t.Fatalf("compact forms: content %s metadata %s", p.Content, p.Metadata)
	}
	if p.SearchText != "hello  world" || math.Float64bits(p.CreatedAt) != math.Float64bits(ts) || p.Tags == nil {
		t.Fatalf("prepared: %+v", p)
	}
	if string(meta["a"]) != ` { "x" : 12345678901234567890123 } ` {
		t.Fatal("Prepare modified the caller's metadata")
	}
	p, err = Prepare(memory.Item{ID: id}, Rules{})
	if err != nil || string(p.Content) != "null" || string(p.Metadata) != "{}" {
		t.Fatalf("defaults: %+v, %v", p, err)
	}

	bad := []struct {
		name  string
		item  memory.Item
		rules Rules
	}{
		{"nil id", memory.Item{}, Rules{}},
		{"invalid JSON", memory.Item{ID: id, Content: json.RawMessage(`{`)}, Rules{}},
		{"invalid UTF-8 content", memory.Item{ID: id, Content: json.RawMessage("\"\xc3\x28\"")}, Rules{}},
		{"invalid UTF-8 tag", memory.Item{ID: id, Tags: []string{"\xff"}}, Rules{}},
		{"invalid UTF-8 key", memory.Item{ID: id, Metadata: map[string]json.RawMessage{"\xff": json.RawMessage(`1`)}}, Rules{}},
		{"too large", memory.Item{ID: id, Content: json.RawMessage(`"0123456789"`)}, Rules{MaxItemBytes: 8}},
		{"too large tags", memory.Item{ID: id, Tags: []string{"0123456789"}}, Rules{MaxItemBytes: 8}},
		{"NUL escape", memory.Item{ID: id, Content: json.RawMessage(`"\u0000"`)}, Rules{RejectNUL: true}},
		{"NUL tag", memory.Item{ID: id, Tags: []string{"\x00"}}, Rules{RejectNUL: true}},
		{"year 10000", memory.Item{ID: id, CreatedAt: math.Nextafter(memory.MaxTimestamp, math.Inf(1))}, Rules{}},
		{"before year 1", memory.Item{ID: id, CreatedAt: math.Nextafter(memory.MinTimestamp, math.Inf(-1))}, Rules{}},
		{"NaN", memory.Item{ID: id, CreatedAt: math.NaN()}, Rules{}},
		{"infinity", memory.Item{ID: id, CreatedAt: math.Inf(1)}, Rules{}},
	}
	for _, b := range bad {
		_, err := Prepare(b.item, b.rules)
		var ae *memory.MemoryAdapterError
		if !errors.As(err, &ae) || errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("%s: got %v, want MemoryAdapterError", b.name, err)
		}
	}
	// Without RejectNUL (SQLite) U+0000 is stored as given.
	if _, err := Prepare(memory.Item{ID: id, Content: json.RawMessage(`"\u0000"`), Tags: []string{"\x00"}}, Rules{}); err != nil {
		t.Errorf("NUL without RejectNUL: %v", err)
	}
}
