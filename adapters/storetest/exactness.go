package storetest

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Fixture is one named item that must round-trip exactly. A CreatedAt of +0 gets a distinct
// time.time()-like created_at and nil Tags become an empty list before the item is stored.
type Fixture struct {
	Name string
	Item memory.Item
}

// Fixture names a backend may look up in the map [Exactness] returns.
const (
	FixtureBigInteger = "integer-above-2^53"
	FixtureReordered  = "reordered-keys"
	// FixtureTimeTime is a created_at as lionagi's time.time() makes it, sub-microsecond bits
	// and all.
	FixtureTimeTime = "time-time-sub-microsecond"
)

// Fixtures returns contract.md §3's portable exactness fixtures (everything except U+0000,
// whose handling differs per backend and is passed as an extra fixture where supported).
func Fixtures() []Fixture {
	meta := func(kv map[string]string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for k, v := range kv {
			m[k] = json.RawMessage(v)
		}
		return m
	}
	return []Fixture{
		{FixtureBigInteger, memory.Item{
			Content:  json.RawMessage(`{"n":12345678901234567890123,"m":9007199254740993,"big":987654321098765432109876543210}`),
			Metadata: meta(map[string]string{"branch_id": `9007199254740993`, "n": `9007199254740993`}),
		}},
		{FixtureReordered, memory.Item{
			Content:  json.RawMessage(`{"b":1,"a":{"y":2,"x":1,"d":[1,2],"c":null}}`),
			Metadata: meta(map[string]string{"source": `{"z":1,"a":2}`, "branch_id": `{"z":1,"y":2}`}),
		}},
		{"tags-duplicates-in-order", memory.Item{
			Content: json.RawMessage(`"t"`),
			Tags:    []string{"b", "a", "b", "a", "a"},
		}},
		// created_at is lionagi's time.time(): doubles with sub-microsecond bits, each of which
		// must come back (contract.md §3); a microsecond or timestamptz store fails these.
		{FixtureTimeTime, memory.Item{
			Content:   json.RawMessage(`"ts"`),
			CreatedAt: 1796513095.4649496,
		}},
		{"time-time-sub-microsecond-2", memory.Item{
			Content:   json.RawMessage(`"micro"`),
			CreatedAt: 1764975600.5738423,
		}},
		{"time-time-near-one", memory.Item{
			Content:   json.RawMessage(`"one"`),
			CreatedAt: 1.0000004,
		}},
		{"time-time-before-1970", memory.Item{
			Content:   json.RawMessage(`"past"`),
			CreatedAt: -12345.678901234567,
		}},
		{"time-time-negative-zero", memory.Item{
			Content:   json.RawMessage(`"signed zero"`),
			CreatedAt: math.Copysign(0, -1),
		}},
		{"time-time-range-edges", memory.Item{
			Content:   json.RawMessage(`"edge"`),
			CreatedAt: memory.MaxTimestamp,
		}},
		{"escaped-backslash-u0000-is-text", memory.Item{
			Content:  json.RawMessage(`{"s":"a\\u0000b"}`),
			Metadata: meta(map[string]string{"source": `"x\\u0000y"`}),
		}},
		{"float-and-exponent", memory.Item{
			Content: json.RawMessage(`[1.0, 1e400, -0, 0.1000000000000000055511151231257827]`),
		}},
		{"unicode", memory.Item{
			Content: json.RawMessage(`"Grüße, 世界 😀 \ud83d\ude00"`),
			Tags:    []string{"ß", "😀"},
		}},
		{"html-and-line-separator", memory.Item{
			Content:  json.RawMessage(`"<é> & \u2028"`),
			Metadata: meta(map[string]string{"k<": `"v>"`}),
		}},
	}
}

// Exactness stores [Fixtures] plus extra through a fresh store from f and checks that
// retrieve returns each one exactly (Item.Equal), that a search for everything returns
// exactly the fixtures, each exactly, and that filters compare by JSON value (a big integer
// is not rounded through float64, reordered object keys still match). It returns the stored
// items by fixture name for backend-specific follow-up checks.
func Exactness(t *testing.T, f Factory, extra ...Fixture) map[string]memory.Item {
	t.Helper()
	h := f(t)
	s := Open(t, h)
	ctx := Ctx(t)
	base := 1772600767.1234567
	stored := map[string]memory.Item{}
	for i, fx := range append(Fixtures(), extra...) {
		t.Run(fx.Name, func(t *testing.T) {
			it := fx.Item
			it.ID = uuid.New()
			if it.CreatedAt == 0 && !math.Signbit(it.CreatedAt) {
				it.CreatedAt = base + float64(i)*1e-7
			}
			if it.Tags == nil {
				it.Tags = []string{}
			}
			if it.Metadata == nil {
				it.Metadata = map[string]json.RawMessage{}
			}
			stored[fx.Name] = it
			MustStore(t, s, it)
			got := MustRetrieve(t, s, it.ID)
			if !got.Equal(it) {
				t.Fatalf("retrieve differs in %v:\n got %+v\nwant %+v", got.Diff(it), got, it)
			}
		})
	}
	Visible(t, h)
	hits, err := s.Search(ctx, memory.Query{Limit: 1000})
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	if len(hits) != len(stored) {
		t.Errorf("search returned %d items, want the %d fixtures", len(hits), len(stored))
	}
	for name, it := range stored {
		idx := slices.IndexFunc(hits, func(h memory.Item) bool { return h.ID == it.ID })
		switch {
		case idx < 0:
			t.Errorf("%s: search did not return %v", name, it.ID)
		case !hits[idx].Equal(it):
			t.Errorf("%s: search hit differs in %v", name, hits[idx].Diff(it))
		}
	}
	big, reordered := stored[FixtureBigInteger], stored[FixtureReordered]
	for _, tc := range []struct {
		key, val string
		want     []uuid.UUID
	}{
		{"branch_id", `9007199254740993`, []uuid.UUID{big.ID}},
		{"branch_id", `9007199254740992`, []uuid.UUID{}},
		{"branch_id", `9007199254740993.0`, []uuid.UUID{big.ID}},
		{"branch_id", `{"y":2,"z":1}`, []uuid.UUID{reordered.ID}},
		{"source", `{"a":2,"z":1}`, []uuid.UUID{reordered.ID}},
	} {
		got, err := s.Search(ctx, memory.Query{Filters: map[string]json.RawMessage{tc.key: json.RawMessage(tc.val)}, Limit: 10})
		if err != nil {
			t.Fatalf("Search filter %s=%s: %v", tc.key, tc.val, err)
		}
		if !slices.Equal(IDs(got), tc.want) {
			t.Errorf("filter %s=%s: got %v, want %v", tc.key, tc.val, IDs(got), tc.want)
		}
	}
	return stored
}
