package relstore

import (
	"context"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// SweepBatch is how many rows one retention statement deletes at most, unless the backend
// says otherwise: each statement holds its locks and the index triggers' work until it
// commits, so a large expiry is removed in many short transactions instead of one long one.
const SweepBatch = 250

// DeleteOldest deletes up to limit of a scope's oldest memory rows by store time, only
// those stored at or before cutoff (Unix microseconds) unless cutoff is negative, and
// returns how many it deleted.
type DeleteOldest func(ctx context.Context, cutoff, limit int64) (int64, error)

// Sweep is memory.Sweeper.Sweep for a relational store: what MaxAge expires, in batches of
// batch rows oldest first, then the oldest beyond MaxItems as usage counts them. A store
// since the count only makes the excess larger than counted, and the next sweep takes the
// rest; an overwrite restamps its row as the newest, out of the oldest.
func Sweep(ctx context.Context, p memory.RetentionPolicy, now time.Time, batch int64, del DeleteOldest, usage func(context.Context) (memory.Usage, error)) (int64, error) {
	var deleted int64
	if cutoff, ok := p.Cutoff(now); ok {
		for {
			n, err := del(ctx, cutoff, batch)
			deleted += n
			if err != nil {
				return deleted, err
			}
			if n < batch {
				break
			}
		}
	}
	if p.MaxItems <= 0 {
		return deleted, nil
	}
	u, err := usage(ctx)
	if err != nil {
		return deleted, err
	}
	for excess := u.Items - p.MaxItems; excess > 0; {
		n, err := del(ctx, -1, min(excess, batch))
		deleted += n
		if err != nil || n == 0 {
			return deleted, err
		}
		excess -= n
	}
	return deleted, nil
}
