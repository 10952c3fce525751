package storetest

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// LegacyMicros are created_at values as builds before the double wrote them (integer Unix
// microseconds), across the range: today, a whole second, near the epoch on both sides and
// both ends of years 1 to 9999.
var LegacyMicros = []int64{1_764_975_600_573_842, 1_764_975_600_000_000, 1_000_000, 0, -500_000, -62_135_596_800_000_000, 253_402_300_799_999_999}

// LegacyItem is the i-th item a migration test writes in a backend's previous row format:
// a big integer, a filterable metadata key and the tag "legacy". Its CreatedAt is what a
// client read from the wire for us before the upgrade ([LegacyWireTimestamp]).
func LegacyItem(i int, us int64) memory.Item {
	it := memory.NewItem(json.RawMessage(fmt.Sprintf(`{"n":%d,"big":9007199254740993}`, i)), "legacy", "t")
	it.Metadata["branch_id"] = json.RawMessage(`"b"`)
	it.CreatedAt = LegacyWireTimestamp(us)
	return it
}

// LegacyWireTimestamp is the created_at the wire wrote for us microseconds before the double
// (seconds, a point, six digits), read as a JSON parser reads it: the double a client holds
// for an item stored then.
func LegacyWireTimestamp(us int64) float64 {
	sign := ""
	if us < 0 {
		sign, us = "-", -us
	}
	f, err := strconv.ParseFloat(fmt.Sprintf("%s%d.%06d", sign, us/1_000_000, us%1_000_000), 64)
	if err != nil {
		panic(err)
	}
	return f
}

// CheckMigrated checks a store opened over rows written in the previous format: each of old
// is retrieved equal (created_at bit for bit), a search for "legacy" returns them all equal in
// order, and a new item keeps a sub-microsecond created_at and -0.0 bit for bit.
func CheckMigrated(t *testing.T, s memory.ExternalStore, old []memory.Item) {
	t.Helper()
	ctx := Ctx(t)
	for _, want := range old {
		got, err := s.Retrieve(ctx, want.ID)
		if err != nil || got == nil {
			t.Fatalf("retrieve %s after migration: %v, %v", want.ID, got, err)
		}
		if !got.Equal(want) {
			t.Errorf("item %s after migration: diff %v (created_at %s, want %s)", want.ID, got.Diff(want),
				memory.FormatTimestamp(got.CreatedAt), memory.FormatTimestamp(want.CreatedAt))
		}
	}
	hits, err := s.Search(ctx, memory.Query{Tags: []string{"legacy"}, Limit: 100})
	if err != nil || len(hits) != len(old) {
		t.Fatalf("search after migration: %d hits, %v; want %d", len(hits), err, len(old))
	}
	for i, h := range hits {
		if !h.Equal(old[i]) {
			t.Errorf("hit %d after migration: diff %v", i, h.Diff(old[i]))
		}
	}
	for _, ts := range []float64{1796513095.4649496, math.Copysign(0, -1)} {
		fresh := memory.NewItem(json.RawMessage(`"new"`))
		fresh.CreatedAt = ts
		if _, err := s.Store(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		got, err := s.Retrieve(ctx, fresh.ID)
		if err != nil || got == nil || math.Float64bits(got.CreatedAt) != math.Float64bits(ts) {
			t.Fatalf("a new item after migration: %v, %v; want created_at %s bit for bit", got, err, memory.FormatTimestamp(ts))
		}
	}
}
