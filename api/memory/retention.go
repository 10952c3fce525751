package memory

import (
	"context"
	"time"
)

// RetentionPolicy is what a retention sweep removes from one scope (issue 46, item 2). Age
// counts from when the adapter stored the item, by the adapter's clock, never from the
// client's created_at, so that a client can neither hide an item from retention nor hasten
// its removal; a write under an existing id stores the item anew and restarts its age.
type RetentionPolicy struct {
	// MaxAge removes items stored at least this long ago; zero keeps items of any age.
	MaxAge time.Duration
	// MaxItems keeps the MaxItems most recently stored items of the scope and removes the
	// rest; zero keeps any number.
	MaxItems int64
}

// Enabled reports whether the policy removes anything at all.
func (p RetentionPolicy) Enabled() bool { return p.MaxAge > 0 || p.MaxItems > 0 }

// Cutoff is the store time at or before which an item is expired at now under MaxAge, in
// Unix microseconds, the unit every backend records; ok is false when MaxAge is zero.
func (p RetentionPolicy) Cutoff(now time.Time) (us int64, ok bool) {
	if p.MaxAge <= 0 {
		return 0, false
	}
	return now.Add(-p.MaxAge).UnixMicro(), true
}

// Sweeper is a store that enforces a RetentionPolicy on its own scope. Sweep removes what
// the policy expires at now (an item is never removed before MaxAge has passed since it was
// stored, nor while it is among the MaxItems newest) from retrieve and from every search
// index, and returns how many items it removed. Each backend keeps an index by store time,
// so a sweep reads only the items it removes (and, for MaxItems, counts the scope).
type Sweeper interface {
	Sweep(ctx context.Context, p RetentionPolicy, now time.Time) (deleted int64, err error)
}

// Usage is what one scope holds: its items and their bytes as ItemSize counts them.
type Usage struct {
	// Items is the number of memory items in the scope.
	Items int64 `json:"items"`
	// Bytes is the sum of ItemSize over those items.
	Bytes int64 `json:"bytes"`
}

// ScopeUsage is one scope's usage and quotas as the adapter server counts them, in GET
// /v1/evidence's usage list.
type ScopeUsage struct {
	// Scope is the scope's name.
	Scope string `json:"scope"`
	// Items and Bytes are the scope's usage: the backend's count at CountedAt plus the
	// writes acknowledged since (an overwrite counts as an item until the next count).
	Items int64 `json:"items"`
	// Bytes is the sum of ItemSize over the scope's items, counted as Items is.
	Bytes int64 `json:"bytes"`
	// MaxItems and MaxBytes are the scope's quotas; zero or absent is none.
	MaxItems int64 `json:"max_items,omitempty"`
	// MaxBytes is the scope's bytes quota; zero or absent is none.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// CountedAt is when the backend last counted the scope; nil before the first count.
	CountedAt *time.Time `json:"counted_at,omitempty"`
}

// UsageReporter is a store that can count its own scope. Usage reads the backend's index
// (never the items themselves), but it reads all of the scope's entries, so callers cache it
// (the quota guard refreshes it once per retention sweep period) rather than call it per
// write.
type UsageReporter interface {
	Usage(ctx context.Context) (Usage, error)
}

// ItemSize is the size a quota counts for item: its content JSON, each metadata key and
// value, and each tag with three bytes for its quotes and separator, as the client sent
// them. It is the measure CheckItemSize bounds, the same on every backend whatever form the
// backend stores, so that a scope's usage does not depend on where it lives.
func ItemSize(item Item) int64 {
	size := len(item.ContentJSON())
	for k, v := range item.Metadata {
		size += len(k) + len(v)
	}
	for _, t := range item.Tags {
		size += len(t) + 3
	}
	return int64(size)
}
