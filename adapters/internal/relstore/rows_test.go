package relstore

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func TestCheckSearch(t *testing.T) {
	m := memory.FullManifest("a", []string{"source"})
	many := make([]string, memory.MaxQueryTags+1)
	cases := []struct {
		name    string
		q       memory.Query
		run     bool
		wantErr error
	}{
		{"plain", memory.Query{Limit: 5}, true, nil},
		{"zero limit", memory.Query{Limit: 0}, false, nil},
		{"max tags", memory.Query{Tags: many[:memory.MaxQueryTags], Limit: 5}, true, nil},
		{"too many tags", memory.Query{Tags: many, Limit: 5}, false, memory.ErrAdapter},
		{"unsupported filter", memory.Query{Filters: map[string]json.RawMessage{"x": json.RawMessage(`1`)}, Limit: 5}, false, memory.ErrUnsupportedQuery},
		{"unsupported beats zero limit", memory.Query{Filters: map[string]json.RawMessage{"x": json.RawMessage(`1`)}}, false, memory.ErrUnsupportedQuery},
	}
	for _, c := range cases {
		run, err := CheckSearch(m, c.q)
		if run != c.run || (c.wantErr == nil) != (err == nil) || (c.wantErr != nil && !errors.Is(err, c.wantErr)) {
			t.Errorf("%s: run=%v err=%v, want run=%v err %v", c.name, run, err, c.run, c.wantErr)
		}
	}
}

func TestDecodeMetadata(t *testing.T) {
	for raw, ok := range map[string]bool{`{}`: true, `{"a":12345678901234567890123}`: true, `null`: false, `[]`: false, `{`: false} {
		m, err := DecodeMetadata(raw)
		if ok && (err != nil || m == nil) || !ok && (!errors.Is(err, memory.ErrAdapter) || m != nil) {
			t.Errorf("DecodeMetadata(%s) = %v, %v; ok=%v", raw, m, err, ok)
		}
	}
	if m, _ := DecodeMetadata(`{"a":12345678901234567890123}`); string(m["a"]) != `12345678901234567890123` {
		t.Errorf("big integer not kept verbatim: %s", m["a"])
	}
}

func TestNotWritten(t *testing.T) {
	if err := NotWritten(); !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("NotWritten() = %v, want MemoryAdapterError", err)
	}
}
