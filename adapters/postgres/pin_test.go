package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestCallsRefusedOnAnotherServerVersion: the store pins the version of its first
// connection, and once the server it reaches runs another one (here: the pin moved to a
// version this server is not, as if the instance had started on it), every data call answers
// the typed unavailable error naming both versions while the probe still reports the
// server's real version, which is what makes the evidence invalidate the manifest. Back on
// the pinned version, calls succeed again.
func TestCallsRefusedOnAnotherServerVersion(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, newHarness(t))
	real := s.pin.pinned()
	if real == "" {
		t.Fatal("Open pinned no version")
	}
	item := memory.NewItem([]byte(`"pinned"`), "pin")
	if _, err := s.Store(ctx, item); err != nil {
		t.Fatalf("Store on the pinned version: %v", err)
	}

	started := "11.0 (the version the instance started on)"
	s.pin.version.Store(&started)
	_, storeErr := s.Store(ctx, memory.NewItem([]byte(`"refused"`)))
	_, retrieveErr := s.Retrieve(ctx, item.ID)
	_, searchErr := s.Search(ctx, memory.Query{Limit: 5})
	for name, err := range map[string]error{"Store": storeErr, "Retrieve": retrieveErr, "Search": searchErr} {
		if !errors.Is(err, memory.ErrUnavailable) {
			t.Fatalf("%s on another server version: %v, want ErrUnavailable", name, err)
		}
		if !strings.Contains(err.Error(), "PostgreSQL "+real) || !strings.Contains(err.Error(), started) {
			t.Fatalf("%s's error names not both versions: %v", name, err)
		}
	}
	ev, err := s.Probe(ctx)
	if err != nil {
		t.Fatalf("Probe on another server version: %v", err)
	}
	if ev.ServiceVersion != "PostgreSQL "+real || !ev.AllOK() {
		t.Fatalf("Probe reported %q (probes %+v), want the server's own %q with every probe passing", ev.ServiceVersion, ev.Probes, "PostgreSQL "+real)
	}

	s.pin.version.Store(&real)
	got, err := s.Retrieve(ctx, item.ID)
	if err != nil || got == nil || got.ID != item.ID {
		t.Fatalf("Retrieve back on the pinned version: %v, %v", got, err)
	}
	if _, err := s.Store(ctx, memory.NewItem([]byte(`"again"`))); err != nil {
		t.Fatalf("Store back on the pinned version: %v", err)
	}
	if _, err := s.Retrieve(ctx, uuid.New()); err != nil {
		t.Fatalf("Retrieve of an absent id on the pinned version: %v", err)
	}
}
