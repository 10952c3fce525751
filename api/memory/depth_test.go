package memory

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestJSONDepth(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int
	}{
		{"scalar", `1`, 0},
		{"string", `"[[[{"`, 0},
		{"empty array", `[]`, 1},
		{"object in array", `[{"a":{}}]`, 3},
		{"brackets in strings do not count", `{"a":"[[[","b":"\"[{"}`, 1},
		{"escaped backslash before quote", `["\\",[1]]`, 2},
		{"siblings take the max", `[[1],[[2]],[]]`, 3},
		{"at the limit", nested(MaxJSONDepth), MaxJSONDepth},
		{"hostile", nested(100_000), 100_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JSONDepth([]byte(tc.in)); got != tc.want {
				t.Errorf("JSONDepth = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestMaxJSONDepthPinned pins the number: clients in other languages are told it, and
// raising it past 61 would let a search page (limit + 3 levels) exceed .NET's default 64.
func TestMaxJSONDepthPinned(t *testing.T) {
	if MaxJSONDepth != 32 {
		t.Fatalf("MaxJSONDepth = %d; it is part of the contract (openapi.yaml, docs/server.md) and must stay 32", MaxJSONDepth)
	}
}

func TestCheckItemDepth(t *testing.T) {
	meta := func(v string) map[string]json.RawMessage { return map[string]json.RawMessage{"k": json.RawMessage(v)} }
	for _, tc := range []struct {
		name string
		it   Item
		want string // "" means accepted
	}{
		{"content at the limit", Item{Content: json.RawMessage(nested(MaxJSONDepth))}, ""},
		{"content one over", Item{Content: json.RawMessage(nested(MaxJSONDepth + 1))}, TooDeepMessage("content")},
		{"content far over", Item{Content: json.RawMessage(nested(10_000))}, TooDeepMessage("content")},
		{"metadata value at the limit", Item{Metadata: meta(nested(MaxJSONDepth - 1))}, ""},
		{"metadata value one over", Item{Metadata: meta(nested(MaxJSONDepth))}, TooDeepMessage("metadata")},
		{"empty item", Item{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckItemDepth(tc.it)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckItemDepth: %v, want nil", err)
				}
				return
			}
			var ae *MemoryAdapterError
			if !errors.As(err, &ae) || ae.Message != tc.want {
				t.Fatalf("CheckItemDepth: %v, want MemoryAdapterError %q", err, tc.want)
			}
		})
	}
}

func TestCheckQueryDepth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter string
		ok     bool
	}{
		{"as deep as a storable metadata value", nested(MaxJSONDepth - 1), true},
		{"deeper than any stored value", nested(MaxJSONDepth), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckQueryDepth(Query{Filters: map[string]json.RawMessage{"k": json.RawMessage(tc.filter)}, Limit: 1})
			if (err == nil) != tc.ok {
				t.Fatalf("CheckQueryDepth: %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), TooDeepMessage("filters")) {
				t.Fatalf("message %q does not carry %q", err, TooDeepMessage("filters"))
			}
		})
	}
}

func TestWithinAmplification(t *testing.T) {
	for _, tc := range []struct {
		stored, returned int
		want             bool
	}{
		{100, 100, true},
		{100, 2*100 + 1024, true},
		{100, 2*100 + 1025, false},
		{9108, 131_000_000, false},
	} {
		if got := WithinAmplification(tc.stored, tc.returned); got != tc.want {
			t.Errorf("WithinAmplification(%d, %d) = %v, want %v", tc.stored, tc.returned, got, tc.want)
		}
	}
}

// TestOpenAPIStatesTheNestingLimit pins the OpenAPI document to MaxJSONDepth: every
// x-max-json-depth extension and the limit named in the 400 description are this constant.
func TestOpenAPIStatesTheNestingLimit(t *testing.T) {
	doc := string(OpenAPI)
	const ext = "x-max-json-depth: "
	n := 0
	for rest := doc; ; {
		i := strings.Index(rest, ext)
		if i < 0 {
			break
		}
		rest = rest[i+len(ext):]
		end := strings.IndexByte(rest, '\n')
		if got := strings.TrimSpace(rest[:end]); got != strconv.Itoa(MaxJSONDepth) {
			t.Errorf("x-max-json-depth %s, want %d", got, MaxJSONDepth)
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d x-max-json-depth extensions, want 3 (content, metadata, filters)", n)
	}
	if msg := TooDeepMessage("<field>"); !strings.Contains(doc, msg) {
		t.Errorf("the document does not quote the rejection message %q", msg)
	}
}
