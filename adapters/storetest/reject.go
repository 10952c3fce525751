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

// RejectsInvalidInput checks that a query with unsupported filter keys and a negative limit
// is an UnsupportedMemoryQuery naming every rejected key in order, and that malformed items
// (nil id, broken or non-UTF-8 JSON, non-UTF-8 tags) are a MemoryAdapterError, never
// unavailability, and are not written.
func RejectsInvalidInput(t *testing.T, f Factory) {
	t.Helper()
	s := Open(t, f(t))
	ctx := Ctx(t)
	_, err := s.Search(ctx, memory.Query{Filters: map[string]json.RawMessage{"zeta": json.RawMessage(`1`), "alpha": json.RawMessage(`1`)}, Limit: -1})
	var uq *memory.UnsupportedMemoryQuery
	if !errors.As(err, &uq) || !slices.Equal(uq.RejectedKeys, []string{"alpha", "limit", "zeta"}) {
		t.Fatalf("Search with bad keys: got %v, want UnsupportedMemoryQuery [alpha limit zeta]", err)
	}
	bad := []memory.Item{
		{ID: uuid.Nil, Content: json.RawMessage(`1`)},
		{ID: uuid.New(), Content: json.RawMessage(`{"a":`)},
		{ID: uuid.New(), Content: json.RawMessage("\"\xff\"")},
		{ID: uuid.New(), Metadata: map[string]json.RawMessage{"k": json.RawMessage(`nope`)}},
		{ID: uuid.New(), Tags: []string{"\xff"}},
	}
	for i, it := range bad {
		if _, err := s.Store(ctx, it); !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("bad item %d: got %v, want MemoryAdapterError", i, err)
		}
		if got, err := s.Retrieve(ctx, it.ID); err != nil || got != nil {
			t.Errorf("bad item %d was written: %v, %v", i, got, err)
		}
	}
}

// RejectsOversized checks that a store opened with a 64-byte item limit refuses a larger item
// with MemoryAdapterError. open returns a store over the same backend with that limit.
func RejectsOversized(t *testing.T, open func(maxItemBytes int) (ClosableStore, error)) {
	t.Helper()
	small, err := open(64)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = small.Close() }()
	// Valid JSON, so that only its size can be the reason for the refusal.
	big := memory.NewItem(json.RawMessage(`"` + strings.Repeat("a", 100) + `"`))
	if _, err := small.Store(Ctx(t), big); !errors.Is(err, memory.ErrAdapter) {
		t.Fatalf("oversized item: got %v, want MemoryAdapterError", err)
	}
}
