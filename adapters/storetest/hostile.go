package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Hostile fixture names, for HostileOptions.Rejects.
const (
	HostileDeepContent  = "deep-content-at-limit"
	HostileDeepMetadata = "deep-metadata-at-limit"
	HostileHugeExponent = "huge-exponents"
	HostileManyTags     = "many-tags"
	HostileLongKeys     = "long-keys-and-tags"
	HostileNUL          = "u0000"
	HostileLongString   = "very-long-string"
)

// HostileOptions declares a backend's documented rejections among the hostile fixtures.
type HostileOptions struct {
	// Rejects names the fixtures the backend refuses with a MemoryAdapterError by its
	// documented rules (for example PostgreSQL and U+0000); every other fixture must be stored
	// and must read back exactly.
	Rejects []string
}

// nestedArray is n arrays around one string, so text search sees a word at the bottom.
func nestedArray(n int, leaf string) string {
	return strings.Repeat("[", n) + leaf + strings.Repeat("]", n)
}

// hostileFixtures are what an attacker or a careless client sends: each is within the
// contract, so a backend must store it (or refuse it by a documented rule), and none may
// break the scope for anyone else.
func hostileFixtures() []Fixture {
	manyTags := make([]string, 1000)
	for i := range manyTags {
		manyTags[i] = "hostile-tag-" + strings.Repeat("x", i%7)
	}
	longKey := strings.Repeat("k", 4000)
	return []Fixture{
		{HostileDeepContent, memory.Item{
			Content:  json.RawMessage(nestedArray(memory.MaxJSONDepth, `"deep"`)),
			Metadata: map[string]json.RawMessage{"branch_id": json.RawMessage(`"hostile"`)},
		}},
		{HostileDeepMetadata, memory.Item{
			Content: json.RawMessage(`"deep metadata"`),
			Metadata: map[string]json.RawMessage{
				"source":    json.RawMessage(nestedArray(memory.MaxJSONDepth-1, `1`)),
				"branch_id": json.RawMessage(nestedArray(memory.MaxJSONDepth-2, `{"a":"b"}`)),
			},
		}},
		// The PostgreSQL report: 1,000 copies of 1e131071 (9 KB) read back as 131 MB.
		{HostileHugeExponent, memory.Item{
			Content:  json.RawMessage("[" + strings.TrimSuffix(strings.Repeat("1e131071,", 1000), ",") + "]"),
			Metadata: map[string]json.RawMessage{"source": json.RawMessage(`1e131071`), "branch_id": json.RawMessage(`-1E-16000`)},
		}},
		{HostileManyTags, memory.Item{Content: json.RawMessage(`"tags"`), Tags: manyTags}},
		{HostileLongKeys, memory.Item{
			Content:  json.RawMessage(`{"` + longKey + `":1}`),
			Metadata: map[string]json.RawMessage{longKey: json.RawMessage(`"v"`), "source": json.RawMessage(`{"` + longKey + `":null}`)},
			Tags:     []string{strings.Repeat("t", 4000)},
		}},
		{HostileNUL, memory.Item{
			Content:  json.RawMessage(`"a\u0000b"`),
			Metadata: map[string]json.RawMessage{"source": json.RawMessage(`"\u0000"`)},
		}},
		{HostileLongString, memory.Item{
			Content:  json.RawMessage(`"` + strings.Repeat("long ", 50_000) + `"`),
			Metadata: map[string]json.RawMessage{"source": json.RawMessage(`"` + strings.Repeat("s", 10_000) + `"`)},
		}},
	}
}

// refusedFixtures must be refused by every backend with a MemoryAdapterError and must not be
// written: the SQLite report (metadata nested 1,000 levels poisoned every filtered search of
// the scope), values one level over the limit, and invalid UTF-8.
func refusedFixtures() []Fixture {
	return []Fixture{
		{"metadata-nested-1000", memory.Item{Metadata: map[string]json.RawMessage{"source": json.RawMessage(nestedArray(1000, `1`))}}},
		{"content-nested-1000", memory.Item{Content: json.RawMessage(nestedArray(1000, `1`))}},
		{"content-one-over-the-limit", memory.Item{Content: json.RawMessage(nestedArray(memory.MaxJSONDepth+1, `1`))}},
		{"metadata-one-over-the-limit", memory.Item{Metadata: map[string]json.RawMessage{"branch_id": json.RawMessage(nestedArray(memory.MaxJSONDepth, `1`))}}},
		{"invalid-utf8-content", memory.Item{Content: json.RawMessage("\"\xff\xfe\"")}},
		{"invalid-utf8-tag", memory.Item{Tags: []string{"\xc3("}}},
	}
}

// HostileData is the "no scope is poisoned" test. In one scope it stores ordinary items
// around every hostile fixture, checks that each accepted fixture retrieves exactly and
// within memory.WithinAmplification, that every refused fixture is a MemoryAdapterError with
// nothing written (a too-deep value with memory.TooDeepMessage), and then that every kind of
// search (text, tags, each supported filter with string, number and object values, and the
// empty query) still answers exactly the ordinary items it should, in insertion order.
func HostileData(t *testing.T, f Factory, o HostileOptions) {
	t.Helper()
	h := f(t)
	s := Open(t, h)
	ctx := Ctx(t)
	base := 1778051289.0000001
	n := 0
	next := func(it memory.Item) memory.Item {
		n++
		it.ID = uuid.New()
		it.CreatedAt = base + float64(n)*1e-6
		if it.Tags == nil {
			it.Tags = []string{}
		}
		if it.Metadata == nil {
			it.Metadata = map[string]json.RawMessage{}
		}
		return it
	}
	ordinary := func(branch string, tags ...string) memory.Item {
		return next(memory.Item{
			Content: json.RawMessage(`{"note":"ordinary needle","n":7}`),
			Metadata: map[string]json.RawMessage{
				"branch_id": json.RawMessage(`"` + branch + `"`),
				"source":    json.RawMessage(`{"kind":"agent","v":[1,2.5]}`),
			},
			Tags: tags,
		})
	}
	first := ordinary("b1", "t1")
	MustStore(t, s, first)

	accepted := []memory.Item{first}
	for _, fx := range hostileFixtures() {
		it := next(fx.Item)
		_, err := s.Store(ctx, it)
		if slices.Contains(o.Rejects, fx.Name) {
			requireRefused(t, s, fx.Name, it, err, "")
			continue
		}
		if err != nil {
			t.Fatalf("%s: Store: %v (the backend must store it, or declare the rejection)", fx.Name, err)
		}
		got := MustRetrieve(t, s, it.ID)
		if !got.Equal(it) {
			t.Fatalf("%s: retrieve differs in %v", fx.Name, got.Diff(it))
		}
		requireBounded(t, fx.Name+" retrieve", it, got)
		accepted = append(accepted, it)
	}
	for _, fx := range refusedFixtures() {
		it := next(fx.Item)
		_, err := s.Store(ctx, it)
		// A too-deep value is refused with the contract's own message, whatever the backend.
		want := ""
		var deep *memory.MemoryAdapterError
		if errors.As(memory.CheckItemDepth(it), &deep) {
			want = deep.Message
		}
		requireRefused(t, s, fx.Name, it, err, want)
	}
	second := ordinary("b2", "t2", "t1")
	MustStore(t, s, second)
	accepted = append(accepted, second)
	Visible(t, h)

	byID := map[uuid.UUID]memory.Item{}
	for _, it := range accepted {
		byID[it.ID] = it
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name string
		q    memory.Query
		want []uuid.UUID
	}{
		{"empty query", memory.Query{Limit: 1000}, IDs(accepted)},
		{"text", memory.Query{Text: Text("ORDINARY NEEDLE"), Limit: 10}, []uuid.UUID{first.ID, second.ID}},
		{"tags", memory.Query{Tags: []string{"t1"}, Limit: 10}, []uuid.UUID{first.ID, second.ID}},
		{"tags, the second only", memory.Query{Tags: []string{"t2", "absent"}, Limit: 10}, []uuid.UUID{second.ID}},
		{"string filter", memory.Query{Filters: map[string]json.RawMessage{"branch_id": raw(`"b2"`)}, Limit: 10}, []uuid.UUID{second.ID}},
		{"object filter", memory.Query{Filters: map[string]json.RawMessage{"source": raw(`{"v":[1,2.50],"kind":"agent"}`)}, Limit: 10}, []uuid.UUID{first.ID, second.ID}},
		{"two filters", memory.Query{Filters: map[string]json.RawMessage{"source": raw(`{"kind":"agent","v":[1,2.5]}`), "branch_id": raw(`"b1"`)}, Limit: 10}, []uuid.UUID{first.ID}},
		{"number filter matching nothing", memory.Query{Filters: map[string]json.RawMessage{"branch_id": raw(`7`)}, Limit: 10}, []uuid.UUID{}},
		{"filter with limit 1", memory.Query{Filters: map[string]json.RawMessage{"source": raw(`{"kind":"agent","v":[1,2.5]}`)}, Limit: 1}, []uuid.UUID{first.ID}},
		{"text, tags and filter", memory.Query{Text: Text("needle"), Tags: []string{"t1"}, Filters: map[string]json.RawMessage{"branch_id": raw(`"b2"`)}, Limit: 10}, []uuid.UUID{second.ID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := s.Search(Ctx(t), tc.q)
			if err != nil {
				t.Fatalf("Search: %v (a stored hostile item must not break the scope's search)", err)
			}
			if !slices.Equal(IDs(hits), tc.want) {
				t.Fatalf("got %v, want %v", IDs(hits), tc.want)
			}
			for _, hit := range hits {
				want := byID[hit.ID]
				if !hit.Equal(want) {
					t.Fatalf("hit %v differs in %v", hit.ID, hit.Diff(want))
				}
				requireBounded(t, "search hit", want, hit)
			}
		})
	}
}

func requireRefused(t *testing.T, s memory.Store, name string, it memory.Item, err error, message string) {
	t.Helper()
	var ae *memory.MemoryAdapterError
	if !errors.As(err, &ae) || errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("%s: Store: %v, want a MemoryAdapterError", name, err)
	}
	// Contains, not equality: through the wire the message arrives as the server's detail,
	// chained under the client's own words.
	if message != "" && !strings.Contains(err.Error(), message) {
		t.Fatalf("%s: error %q lacks the message %q", name, err, message)
	}
	if got, err := s.Retrieve(Ctx(t), it.ID); err != nil || got != nil {
		t.Fatalf("%s: refused, yet retrieve answered %v, %v", name, got, err)
	}
}

// requireBounded checks memory.WithinAmplification on the two items' wire forms.
func requireBounded(t *testing.T, what string, stored, returned memory.Item) {
	t.Helper()
	sb, err := json.Marshal(stored)
	if err != nil {
		t.Fatalf("%s: marshal stored: %v", what, err)
	}
	rb, err := json.Marshal(returned)
	if err != nil {
		t.Fatalf("%s: marshal returned: %v", what, err)
	}
	if !memory.WithinAmplification(len(sb), len(rb)) {
		t.Fatalf("%s: %d bytes returned for a %d-byte item, over %d× + %d", what, len(rb), len(sb), memory.MaxAmplificationFactor, memory.AmplificationAllowance)
	}
}
