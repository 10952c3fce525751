package inmemory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// stamp is when an item was stored (Unix microseconds, the store's clock) and its size.
type stamp struct {
	at   int64
	size int64
}

var (
	_ memory.Sweeper       = (*Store)(nil)
	_ memory.UsageReporter = (*Store)(nil)
)

// Sweep removes the items p expires at now (memory.Sweeper). The reference store keeps no
// index by store time: it reads every stamp, which is what a reference for the external
// backends' results needs and no more (they sweep through an index).
func (s *Store) Sweep(ctx context.Context, p memory.RetentionPolicy, now time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, memory.NewUnavailable("retention sweep", err)
	}
	cutoff, byAge := p.Cutoff(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	doomed := map[uuid.UUID]bool{}
	if byAge {
		for id, st := range s.stored {
			if st.at <= cutoff {
				doomed[id] = true
			}
		}
	}
	if excess := int64(len(s.items)-len(doomed)) - p.MaxItems; p.MaxItems > 0 && excess > 0 {
		// The oldest survivors by store time, then by search position among equal stamps.
		rest := make([]uuid.UUID, 0, len(s.order))
		for _, id := range s.order {
			if !doomed[id] {
				rest = append(rest, id)
			}
		}
		slices.SortStableFunc(rest, func(a, b uuid.UUID) int { return cmp.Compare(s.stored[a].at, s.stored[b].at) })
		for _, id := range rest[:excess] {
			doomed[id] = true
		}
	}
	if len(doomed) == 0 {
		return 0, nil
	}
	s.order = slices.DeleteFunc(s.order, func(id uuid.UUID) bool { return doomed[id] })
	for id := range doomed {
		s.usage.Items--
		s.usage.Bytes -= s.stored[id].size
		delete(s.items, id)
		delete(s.stored, id)
	}
	return int64(len(doomed)), nil
}

// Usage returns the items and bytes the store holds (memory.UsageReporter), kept as it
// writes and sweeps.
func (s *Store) Usage(ctx context.Context) (memory.Usage, error) {
	if err := ctx.Err(); err != nil {
		return memory.Usage{}, memory.NewUnavailable("usage", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.usage, nil
}
