package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// PinnedStore is a store that keeps its data calls on the service version it opened against
// (issue 45 item 4), with a way for its own package's test to move that pin.
type PinnedStore interface {
	memory.ExternalStore
	memory.Prober
}

// VersionPin checks a store's version pin against its real server, whose version the store
// reports as service + " " + real: with the pin moved to another version (as if the instance
// had opened against it; move sets it), every data call answers the typed unavailable error
// naming both versions while Probe still runs and reports the server's own version; with the
// pin moved back, calls succeed again.
func VersionPin(t *testing.T, s PinnedStore, service, real string, move func(version string)) {
	t.Helper()
	ctx := context.Background()
	item := memory.NewItem([]byte(`"pinned"`), "pin")
	if _, err := s.Store(ctx, item); err != nil {
		t.Fatalf("Store on the pinned version: %v", err)
	}

	started := "0.1 (the version the instance opened against)"
	move(started)
	_, storeErr := s.Store(ctx, memory.NewItem([]byte(`"refused"`)))
	_, retrieveErr := s.Retrieve(ctx, item.ID)
	_, searchErr := s.Search(ctx, memory.Query{Limit: 5})
	for name, err := range map[string]error{"Store": storeErr, "Retrieve": retrieveErr, "Search": searchErr} {
		if !errors.Is(err, memory.ErrUnavailable) {
			t.Fatalf("%s on another server version: %v, want ErrUnavailable", name, err)
		}
		if !strings.Contains(err.Error(), service+" "+real) || !strings.Contains(err.Error(), started) {
			t.Fatalf("%s's error names not both versions: %v", name, err)
		}
	}
	ev, err := s.Probe(ctx)
	if err != nil {
		t.Fatalf("Probe on another server version: %v", err)
	}
	if ev.ServiceVersion != service+" "+real {
		t.Fatalf("Probe reported %q, want the server's own %q", ev.ServiceVersion, service+" "+real)
	}

	move(real)
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
