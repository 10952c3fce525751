package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// WrongKindHarness is a Harness that can plant a non-memory record in its scope.
type WrongKindHarness interface {
	Harness
	conformance.WrongKindMaker
}

// ScopeOpener opens a store over the same backend as a harness but on another scope and
// registers its clean-up with t.
type ScopeOpener func(t *testing.T, scope string) memory.Store

// WrongKindAndScopeIsolation checks that a record of another kind at an id reads as not found,
// matches no search and cannot be overwritten by a store (MemoryAdapterError), and that a
// store opened by openOther on another scope sees neither the items nor the searches of h's.
func WrongKindAndScopeIsolation(t *testing.T, h WrongKindHarness, openOther ScopeOpener) {
	t.Helper()
	ctx := Ctx(t)
	s := Open(t, h)
	id, err := h.MakeWrongKindRecord(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Retrieve(ctx, id); err != nil || got != nil {
		t.Fatalf("wrong-kind retrieve: got %v, %v; want nil, nil", got, err)
	}
	hits, err := s.Search(ctx, memory.Query{Text: Text("not a memory"), Limit: 10})
	if err != nil || len(hits) != 0 {
		t.Fatalf("wrong-kind search: got %d hits, %v", len(hits), err)
	}
	over := memory.NewItem(json.RawMessage(`1`))
	over.ID = id
	if _, err := s.Store(ctx, over); !errors.Is(err, memory.ErrAdapter) {
		t.Fatalf("store over a wrong-kind record: got %v, want MemoryAdapterError", err)
	}

	other := openOther(t, "other-scope")
	it := memory.NewItem(json.RawMessage(`"mine"`))
	MustStore(t, s, it)
	if got, err := other.Retrieve(ctx, it.ID); err != nil || got != nil {
		t.Fatalf("other scope sees the item: %v, %v", got, err)
	}
	if hits, err := other.Search(ctx, memory.Query{Limit: 10}); err != nil || len(hits) != 0 {
		t.Fatalf("other scope search: %d hits, %v", len(hits), err)
	}
}

// WriteRejectHarness is a conformance harness whose service can be made to reject a write.
type WriteRejectHarness interface {
	conformance.Harness
	conformance.WriteRejecter
}

// RejectedWriteByService checks that a write the service itself rejects is a
// MemoryAdapterError (never unavailability) with no id, and that the same item stores once
// Reset removed the rejection.
func RejectedWriteByService(t *testing.T, h WriteRejectHarness) {
	t.Helper()
	ctx := Ctx(t)
	s := Open(t, h)
	it, err := h.MakeWriteRejected(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Store(ctx, it)
	if !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) || id != uuid.Nil {
		t.Fatalf("rejected write: got %v, %v; want uuid.Nil and MemoryAdapterError", id, err)
	}
	if err := h.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	MustStore(t, s, it)
}

// Outage says how a backend's outage ends and what else fails during it.
type Outage struct {
	// Restore ends the outage MakeTransportUnavailable started, without Reset (which would
	// empty the scope), so that recovery is observed on the same store instance.
	Restore func() error
	// MakeStoreFails asserts that opening a new store during the outage is
	// MemoryAdapterUnavailable too, for backends that open their connection eagerly.
	MakeStoreFails bool
}

// OutageAndRecovery stores an item, cuts the transport, checks that store, retrieve, search
// and probe (the store must be a memory.Prober) are MemoryAdapterUnavailable, then restores
// the transport with o.Restore and checks that the same store instance retrieves the item
// exactly.
func OutageAndRecovery(t *testing.T, h conformance.Harness, o Outage) {
	t.Helper()
	ctx := Ctx(t)
	s := Open(t, h)
	p, ok := s.(memory.Prober)
	if !ok {
		t.Fatalf("store %T is not a memory.Prober", s)
	}
	it := memory.NewItem(json.RawMessage(`"before the cut"`))
	MustStore(t, s, it)
	if err := h.MakeTransportUnavailable(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := s.Store(ctx, memory.NewItem(json.RawMessage(`1`)))
	t.Logf("store during outage: %v", err)
	if !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("store during outage: got %v, want MemoryAdapterUnavailable", err)
	}
	if got, err := s.Retrieve(ctx, it.ID); !errors.Is(err, memory.ErrUnavailable) || got != nil {
		t.Errorf("retrieve during outage: got %v, %v, want MemoryAdapterUnavailable", got, err)
	}
	if hits, err := s.Search(ctx, memory.Query{Limit: 5}); !errors.Is(err, memory.ErrUnavailable) || hits != nil {
		t.Errorf("search during outage: got %v, %v, want MemoryAdapterUnavailable", hits, err)
	}
	if _, err := p.Probe(ctx); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("probe during outage: got %v, want MemoryAdapterUnavailable", err)
	}
	if o.MakeStoreFails {
		if _, err := h.MakeStore(ctx); !errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("new store during outage: got %v, want MemoryAdapterUnavailable", err)
		}
	}
	if err := o.Restore(); err != nil {
		t.Fatal(err)
	}
	got := MustRetrieve(t, s, it.ID)
	if !got.Equal(it) {
		t.Fatalf("after recovery: differs in %v", got.Diff(it))
	}
}

// ClosableStore is a store its owner closes.
type ClosableStore interface {
	memory.Store
	Close() error
}

// ClosedStore checks that Close succeeds, is idempotent, and that a call after it is
// MemoryAdapterUnavailable; open returns a store the test owns.
func ClosedStore(t *testing.T, open func(t *testing.T) ClosableStore) {
	t.Helper()
	s := open(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Retrieve(Ctx(t), uuid.New()); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("retrieve after Close: got %v, want MemoryAdapterUnavailable", err)
	}
}

// VersionedHarness is a Harness that reports its backend service's version.
type VersionedHarness interface {
	Harness
	conformance.ServiceVersioner
}

// Probe checks that a store's probe (the store must be a memory.Prober) reports the harness's
// service version and exactly probes capability checks, all OK.
func Probe(t *testing.T, h VersionedHarness, probes int) {
	t.Helper()
	ctx := Ctx(t)
	s := Open(t, h)
	p, ok := s.(memory.Prober)
	if !ok {
		t.Fatalf("store %T is not a memory.Prober", s)
	}
	ev, err := p.Probe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.ServiceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ServiceVersion != v || len(ev.Probes) != probes || !ev.AllOK() {
		t.Fatalf("probe: %+v (harness version %q)", ev, v)
	}
}

// HarnessAdapterID checks that a harness made by newHarness with an adapter id and a filter
// set makes stores whose manifest names exactly that id and that filter set.
func HarnessAdapterID(t *testing.T, adapterID string, newHarness func(t *testing.T, adapterID string, filters []string) Harness) {
	t.Helper()
	s := Open(t, newHarness(t, adapterID, []string{"k"}))
	if m := s.Manifest(); m.Adapter != adapterID || !slices.Equal(m.SupportedFilters, []string{"k"}) {
		t.Fatalf("manifest %+v", m)
	}
}

// ConcurrentProbes checks that the probes of several stores of one scope, run at once as the
// replicas of one adapter run them, all pass: no probe may read or remove another's probe
// row and call the backend unwritable.
func ConcurrentProbes(t *testing.T, h Harness) {
	t.Helper()
	ctx := Ctx(t)
	const stores, rounds = 3, 15
	probers := make([]memory.Prober, stores)
	for i := range probers {
		p, ok := Open(t, h).(memory.Prober)
		if !ok {
			t.Fatal("the store is not a memory.Prober")
		}
		probers[i] = p
	}
	errs := make(chan error, stores*rounds)
	var wg sync.WaitGroup
	for _, p := range probers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				ev, err := p.Probe(ctx)
				switch {
				case err != nil:
					errs <- err
				case !ev.AllOK():
					errs <- fmt.Errorf("failed probes: %+v", ev.Probes)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
