package khive

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/khive/khivefake"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestConcurrentCallsShareOneChild drives one store from many goroutines (stores, retrieves,
// ranked and list searches) over one child whose answers come back out of order, then checks
// that every acknowledged write reads back exactly and that one child served them all.
func TestConcurrentCallsShareOneChild(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts func(t *testing.T) HarnessOptions
	}{
		{"in-process", func(*testing.T) HarnessOptions { return HarnessOptions{InProcess: true} }},
		{"child process", func(t *testing.T) HarnessOptions { return HarnessOptions{Command: buildFake(t)} }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			h := newFakeHarness(t, mode.opts(t))
			ctx := context.Background()
			es, err := h.MakeStore(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s := es.(*Store)
			if _, err := s.Search(ctx, memory.Query{Limit: 1}); err != nil { // starts the child
				t.Fatal(err)
			}
			s.mu.Lock()
			child := s.c
			s.mu.Unlock()
			const writers, perWriter = 6, 15
			var mu sync.Mutex
			acked := map[uuid.UUID]memory.Item{}
			errs := make(chan error, writers*perWriter*3)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range perWriter {
						it := memory.NewItem(json.RawMessage(fmt.Sprintf(`{"burst":"concurrent writer","w":%d,"i":%d}`, w, i)), "burst", fmt.Sprintf("w%d", w))
						if _, err := s.Store(ctx, it); err != nil {
							errs <- err
							continue
						}
						mu.Lock()
						acked[it.ID] = it
						mu.Unlock()
						if got, err := s.Retrieve(ctx, it.ID); err != nil || got == nil || !slices.Equal(got.Tags, it.Tags) {
							errs <- fmt.Errorf("retrieve right after store (item %v): %w", got != nil, err)
						}
						text := "concurrent writer"
						if _, err := s.Search(ctx, memory.Query{Text: &text, Tags: []string{"burst"}, Limit: 5}); err != nil {
							errs <- err
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("concurrent call: %v", err)
			}
			if len(acked) != writers*perWriter {
				t.Fatalf("acknowledged %d writes, want %d", len(acked), writers*perWriter)
			}
			hits, err := s.Search(ctx, memory.Query{Tags: []string{"burst"}, Limit: 1000})
			if err != nil || len(hits) != len(acked) {
				t.Fatalf("list after the burst: %d hits, %v", len(hits), err)
			}
			for _, hit := range hits {
				want, ok := acked[hit.ID]
				if !ok || !memory.JSONEqual(hit.ContentJSON(), want.ContentJSON()) {
					t.Fatalf("hit %s is not an acknowledged write", hit.ID)
				}
			}
			s.mu.Lock()
			same := s.c == child
			s.mu.Unlock()
			if !same {
				t.Fatal("the burst restarted the child; one child must serve concurrent calls")
			}
			var requests int64
			_ = h.b.Update(func(st *khivefake.State) error { requests = st.Requests; return nil })
			if requests < int64(3*len(acked)) {
				t.Fatalf("the fake saw %d requests for %d writes", requests, len(acked))
			}
		})
	}
}

// TestEventualRecall: with khive's vector index lagging, a text search may miss a new
// memory but never fails; once the index caught up it finds it. Retrieve never waits.
func TestEventualRecall(t *testing.T) {
	h := newFakeHarness(t, HarnessOptions{InProcess: true})
	ctx := context.Background()
	if err := h.SetKnobs(khivefake.Knobs{Eventual: true}); err != nil {
		t.Fatal(err)
	}
	s, err := h.MakeStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	it := memory.NewItem(json.RawMessage(`"the lagging index"`))
	if _, err := s.Store(ctx, it); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Retrieve(ctx, it.ID); err != nil || got == nil {
		t.Fatalf("retrieve before the index: %v, %v", got, err)
	}
	text := "lagging index"
	hits, err := s.Search(ctx, memory.Query{Text: &text, Limit: 5})
	if err != nil || len(hits) != 0 {
		t.Fatalf("recall before the index caught up: %d hits, %v; want a miss (the degraded empty form)", len(hits), err)
	}
	if err := h.MakeSearchIndexVisible(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err = s.Search(ctx, memory.Query{Text: &text, Limit: 5})
	if err != nil || len(hits) != 1 || hits[0].ID != it.ID || len(hits[0].Tags) != 0 {
		t.Fatalf("recall after the index caught up: %v, %v", hits, err)
	}
}
