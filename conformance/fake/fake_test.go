package fake

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func TestTruthfulManifest(t *testing.T) {
	tests := []struct {
		name  string
		svc   ServiceKnobs
		adapt AdapterKnobs
		check func(memory.Manifest) bool
	}{
		{"faithful is full and immediate", ServiceKnobs{}, AdapterKnobs{}, func(m memory.Manifest) bool {
			return m.RetrieveFidelity == memory.FidelityFull && m.SearchFidelity == memory.FidelityFull &&
				m.SearchConsistency == memory.ConsistencyImmediate && m.PreservesMetadata && m.SearchReturnsTags &&
				slices.Equal(m.SupportedFilters, DefaultFilters)
		}},
		{"eventual index", ServiceKnobs{EventualIndex: true}, AdapterKnobs{}, func(m memory.Manifest) bool {
			return m.SearchConsistency == memory.ConsistencyEventual && m.RetrieveFidelity == memory.FidelityFull
		}},
		{"dropped metadata has no filters", ServiceKnobs{DropMetadata: true}, AdapterKnobs{}, func(m memory.Manifest) bool {
			return m.Dropped(memory.FieldMetadata) && !m.PreservesMetadata && len(m.SupportedFilters) == 0 &&
				m.RetrieveFidelity == memory.FidelityNativeFields
		}},
		{"rejected metadata is dropped", ServiceKnobs{}, AdapterKnobs{RejectMetadata: true}, func(m memory.Manifest) bool {
			return m.Dropped(memory.FieldMetadata)
		}},
		{"altered metadata is lossy", ServiceKnobs{AlterMetadata: true}, AdapterKnobs{}, func(m memory.Manifest) bool {
			return m.Native(memory.FieldMetadata) && !m.PreservesMetadata && m.RetrieveFidelity == memory.FidelityLossy
		}},
		{"hits without tags", ServiceKnobs{DropSearchTags: true}, AdapterKnobs{}, func(m memory.Manifest) bool {
			return !m.SearchReturnsTags && m.SearchFidelity == memory.FidelityNativeFields && m.RetrieveFidelity == memory.FidelityFull
		}},
		{"closed filter set", ServiceKnobs{FilterableKeys: []string{"source"}}, AdapterKnobs{}, func(m memory.Manifest) bool {
			return slices.Equal(m.SupportedFilters, []string{"source"})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := TruthfulManifest(tc.svc, tc.adapt)
			if err := m.Validate(); err != nil {
				t.Fatalf("invalid: %v", err)
			}
			if !tc.check(m) {
				t.Errorf("unexpected manifest %+v", m)
			}
		})
	}
}

// TestAdapterErrorMapping checks that the correct adapter keeps native causes reachable
// and maps them to the contract's error classes.
func TestAdapterErrorMapping(t *testing.T) {
	ctx := context.Background()
	h := New(Config{})
	s, err := h.MakeStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	it := memory.NewItem(json.RawMessage(`{"a":1}`), "x")
	if id, err := s.Store(ctx, it); err != nil || id != it.ID {
		t.Fatalf("store: %v %v", id, err)
	}
	if err := h.MakeResponsesMalformed(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Retrieve(ctx, it.ID); !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("malformed retrieve: %v, want MemoryAdapterError", err)
	}
	if err := h.MakeTransportUnavailable(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = s.Search(ctx, memory.Query{Limit: 1})
	if !errors.Is(err, memory.ErrUnavailable) || !errors.Is(err, errRefused) {
		t.Errorf("search during outage: %v, want MemoryAdapterUnavailable wrapping the native error", err)
	}
	if err := h.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	rejected, err := h.MakeWriteRejected(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store(ctx, rejected); !errors.Is(err, errRejected) || errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("rejected write: %v, want MemoryAdapterError wrapping the rejection", err)
	}
	if n := h.RequestCount(); n < 4 {
		t.Errorf("request count %d, want every call counted", n)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.MakeStore(ctx); err == nil {
		t.Errorf("MakeStore after Close succeeded")
	}
}

func TestFilterMappingIsRecorded(t *testing.T) {
	ctx := context.Background()
	h := New(Config{})
	s, _ := h.MakeStore(ctx)
	if _, err := s.Search(ctx, memory.Query{Filters: map[string]json.RawMessage{"source": json.RawMessage(` { "a" : [1, 2] } `)}, Limit: 5}); err != nil {
		t.Fatal(err)
	}
	want := h.DocumentedFilter("source", []byte(`{"a":[1,2]}`))
	if got := h.RecordedFilters(); !slices.Equal(got, []string{want}) || want != `md:source={"a":[1,2]}` {
		t.Errorf("recorded %q, want [%q]", got, want)
	}
}
