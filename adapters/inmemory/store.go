package inmemory

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// AdapterID is the stable implementation id this package publishes in its manifest.
const AdapterID = "inmemory"

// Options configure a Store.
type Options struct {
	// SupportedFilters is the exact filter key set to publish; nil means
	// memory.DefaultSupportedFilters.
	SupportedFilters []string
	// Now is the clock that stamps each write's store time, which retention ages from;
	// nil means time.Now.
	Now func() time.Time
}

// Store is the in-process reference ExternalStore. The zero value is not usable; call New.
type Store struct {
	manifest memory.Manifest

	now func() time.Time

	mu    sync.RWMutex
	order []uuid.UUID
	items map[uuid.UUID]memory.Item
	// stored is each item's store time and size, for retention and usage (retention.go).
	stored map[uuid.UUID]stamp
	usage  memory.Usage

	// scopes are the other scopes InScope served, shared by every view of one New.
	scopes *scopes
}

var _ memory.ScopedStore = (*Store)(nil)

// Manifest returns the full-fidelity, immediate manifest for the given filter keys.
func Manifest(supportedFilters []string) memory.Manifest {
	return memory.FullManifest(AdapterID, supportedFilters)
}

// New returns an empty store.
func New(opts Options) *Store {
	filters := opts.SupportedFilters
	if filters == nil {
		filters = memory.DefaultSupportedFilters()
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Store{manifest: Manifest(filters), now: now, items: map[uuid.UUID]memory.Item{}, stored: map[uuid.UUID]stamp{}, scopes: &scopes{}}
}

// Manifest implements memory.ExternalStore.
func (s *Store) Manifest() memory.Manifest { return s.manifest }

// Store keeps a deep copy of item and returns its id. Storing an existing id replaces the
// item, keeps its search position and restarts its retention age.
func (s *Store) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	if err := ctx.Err(); err != nil {
		return uuid.Nil, memory.NewUnavailable("store", err)
	}
	if err := validateItem(item); err != nil {
		return uuid.Nil, err
	}
	c := item.Clone()
	if c.Metadata == nil {
		c.Metadata = map[string]json.RawMessage{}
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	c.Content = c.ContentJSON()
	st := stamp{at: s.now().UnixMicro(), size: memory.ItemSize(item)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.items[c.ID]; !exists {
		s.order = append(s.order, c.ID)
		s.usage.Items++
	}
	s.usage.Bytes += st.size - s.stored[c.ID].size
	s.items[c.ID] = c
	s.stored[c.ID] = st
	return c.ID, nil
}

// validateItem applies the contract's limits through the same functions as every backend,
// and rejects what the wire could not carry back exactly: JSON and every string in the
// contract is UTF-8, so invalid bytes would be replaced on the way out and the item would come
// back altered. The reference must refuse what the external adapters refuse.
func validateItem(item memory.Item) error {
	if err := memory.CheckItemLimits(item); err != nil {
		return err
	}
	if item.ID == uuid.Nil {
		return memory.NewAdapterError("store: item id must not be the nil UUID", nil)
	}
	if err := memory.CheckItemDepth(item); err != nil {
		return err
	}
	if err := memory.CheckItemSize(item, memory.MaxItemBytes); err != nil {
		return err
	}
	if content := item.ContentJSON(); !utf8.Valid(content) || !json.Valid(content) {
		return memory.NewAdapterError("store: content is not valid UTF-8 JSON", nil)
	}
	for k, v := range item.Metadata {
		if !utf8.ValidString(k) {
			return memory.NewAdapterError("store: a metadata key is not valid UTF-8", nil)
		}
		if !utf8.Valid(v) || !json.Valid(v) {
			return memory.NewAdapterError(fmt.Sprintf("store: metadata %q is not valid UTF-8 JSON", k), nil)
		}
	}
	for i, tag := range item.Tags {
		if !utf8.ValidString(tag) {
			return memory.NewAdapterError(fmt.Sprintf("store: tag %d is not valid UTF-8", i), nil)
		}
	}
	return nil
}

// Retrieve returns a copy of the item, or (nil, nil) when the id is unknown.
func (s *Store) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, memory.NewUnavailable("retrieve", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	it, ok := s.items[id]
	if !ok {
		return nil, nil
	}
	c := it.Clone()
	return &c, nil
}

// Search applies lionagi's InMemoryStore predicates in insertion order.
func (s *Store) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	if err := memory.CheckQuery(s.manifest, q); err != nil {
		return nil, err
	}
	if err := memory.CheckQueryDepth(q); err != nil {
		return nil, err
	}
	if err := memory.CheckQueryLimits(q); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, memory.NewUnavailable("search", err)
	}
	out := []memory.Item{}
	if q.Limit == 0 {
		return out, nil
	}
	var needle string
	if q.Text != nil {
		needle = memory.Needle(*q.Text)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, id := range s.order {
		it := s.items[id]
		if memory.Matches(it, q, needle) {
			out = append(out, it.Clone())
			if len(out) == q.Limit {
				break
			}
		}
	}
	return out, nil
}
