package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// concurrentWriters and concurrentSearchers size the burst; two store instances share it so
// that backends with per-instance state (pools, indexers) race against each other too.
const (
	concurrentWriters   = 8
	concurrentSearchers = 3
	concurrentInstances = 2
)

// ConcurrentWritersLoseNothing stores perWriter items from each of several goroutines spread
// over two store instances while other goroutines search, then checks that no call failed,
// that every write was acknowledged, that every acknowledged item retrieves exactly, and that
// (once the index caught up) a search returns exactly the acknowledged items, each exactly.
func ConcurrentWritersLoseNothing(t *testing.T, f Factory, perWriter int) {
	t.Helper()
	h := f(t)
	ctx := Ctx(t)
	stores := make([]memory.Store, concurrentInstances)
	for i := range stores {
		stores[i] = Open(t, h)
	}
	total := concurrentWriters * perWriter
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked = map[uuid.UUID]memory.Item{}
		errs  = make(chan error, total+concurrentSearchers)
		stop  = make(chan struct{})
	)
	for w := range concurrentWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%len(stores)]
			for i := range perWriter {
				it := memory.NewItem(json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)), "burst", fmt.Sprintf("w%d", w))
				id, err := s.Store(ctx, it)
				if err != nil {
					errs <- fmt.Errorf("writer %d store %d: %w", w, i, err)
					continue
				}
				if id != it.ID {
					errs <- fmt.Errorf("writer %d store %d: returned id %v, want %v", w, i, id, it.ID)
					continue
				}
				mu.Lock()
				acked[id] = it
				mu.Unlock()
			}
		}()
	}
	var sg sync.WaitGroup
	for r := range concurrentSearchers {
		sg.Add(1)
		go func() {
			defer sg.Done()
			s := stores[r%len(stores)]
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Search(ctx, memory.Query{Tags: []string{"burst"}, Text: Text(`"w"`), Limit: 50}); err != nil {
					errs <- fmt.Errorf("searcher %d: %w", r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	sg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call failed: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
	if len(acked) != total {
		t.Fatalf("acknowledged %d writes, want %d", len(acked), total)
	}
	for id, it := range acked {
		if got := MustRetrieve(t, stores[0], id); !got.Equal(it) {
			t.Fatalf("acknowledged write %v differs in %v", id, got.Diff(it))
		}
	}
	Visible(t, h)
	hits, err := stores[0].Search(ctx, memory.Query{Tags: []string{"burst"}, Limit: 10 * total})
	if err != nil || len(hits) != total {
		t.Fatalf("search after burst: %d hits, %v; want %d", len(hits), err, total)
	}
	seen := map[uuid.UUID]bool{}
	for _, hit := range hits {
		want, ok := acked[hit.ID]
		if !ok || seen[hit.ID] || !hit.Equal(want) {
			t.Fatalf("hit %v is not a distinct, exact acknowledged write", hit.ID)
		}
		seen[hit.ID] = true
	}
}
