package khive

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/khive/khivefake"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestChildKilledMidCall kills the child process while it holds a search and expects
// MemoryAdapterUnavailable, never an empty result; the next call starts a new child.
func TestChildKilledMidCall(t *testing.T) {
	h := newFakeHarness(t, HarnessOptions{Command: buildFake(t)})
	ctx := context.Background()
	es, err := h.MakeStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := es.(*Store)
	it := memory.NewItem(json.RawMessage(`"kept"`), "a")
	if _, err := s.Store(ctx, it); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "hanging")
	if err := h.SetKnobs(khivefake.Knobs{HangOn: "list", HangMarker: marker}); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		hits []memory.Item
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		hits, err := s.Search(ctx, memory.Query{Limit: 10})
		done <- answer{hits, err}
	}()
	// Wait for the child to hold the call (it creates the marker), then kill it.
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		select {
		case a := <-done:
			t.Fatalf("search returned before the child was killed: %d hits, %v", len(a.hits), a.err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	s.mu.Lock()
	p := s.c.t.(*process)
	s.mu.Unlock()
	proc, err := os.FindProcess(p.pid())
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if !errors.Is(a.err, memory.ErrUnavailable) || a.hits != nil {
		t.Fatalf("search with the child killed mid-call: (%d hits, %v), want MemoryAdapterUnavailable", len(a.hits), a.err)
	}
	// Recovery: the knob is cleared and the next call starts a fresh child.
	if err := h.SetKnobs(khivefake.Knobs{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Retrieve(ctx, it.ID)
	if err != nil || got == nil {
		t.Fatalf("retrieve after the restart: (%v, %v)", got, err)
	}
}

// TestChildExitsMidWrite: a child that exits without answering a write leaves its outcome
// unknown, which is MemoryAdapterUnavailable, never a returned id.
func TestChildExitsMidWrite(t *testing.T) {
	h := newFakeHarness(t, HarnessOptions{InProcess: true})
	ctx := context.Background()
	s, err := h.MakeStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Search(ctx, memory.Query{Limit: 1}); err != nil { // start the server
		t.Fatal(err)
	}
	if err := h.SetKnobs(khivefake.Knobs{ExitOn: "memory.remember"}); err != nil {
		t.Fatal(err)
	}
	id, err := s.Store(ctx, memory.NewItem(json.RawMessage(`1`)))
	if !errors.Is(err, memory.ErrUnavailable) || id != [16]byte{} {
		t.Fatalf("store with the server exiting mid-call: (%s, %v), want MemoryAdapterUnavailable", id, err)
	}
}
