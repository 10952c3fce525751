package memory

import (
	"context"

	"github.com/google/uuid"
)

// Store is lionagi's MemoryStore protocol in Go (ADR-0092).
//
// Store returns the item's own id on success. Retrieve is a direct identity read: an unknown id
// (or a record of the wrong native kind) is (nil, nil), never an empty item. Search returns
// typed items only. Failures are MemoryAdapterError, UnsupportedMemoryQuery or
// MemoryAdapterUnavailable; an outage is never reported as an empty result.
type Store interface {
	// Store persists item and returns item.ID.
	Store(ctx context.Context, item Item) (uuid.UUID, error)
	// Retrieve reads the item with the given id, or returns (nil, nil) when there is none.
	Retrieve(ctx context.Context, id uuid.UUID) (*Item, error)
	// Search returns at most q.Limit items matching q.
	Search(ctx context.Context, q Query) ([]Item, error)
}

// ExternalStore is a Store that publishes an immutable fidelity manifest (ADR-0093's
// ExternalMemoryStore). Manifest returns the same value for the instance's whole lifetime.
type ExternalStore interface {
	Store
	// Manifest returns the instance's immutable fidelity manifest.
	Manifest() Manifest
}

// ScopedStore is an ExternalStore that can serve other scopes of its backend over the same
// connections: the server's sub-scopes (SubScope), one per isolated binding, without a
// connection pool each.
type ScopedStore interface {
	ExternalStore
	// InScope returns a store for scope, which must pass CheckScope, with the same manifest.
	// The view shares the receiver's connections: closing the receiver ends it, and its own
	// Close (when it has one) releases only what the view added.
	InScope(ctx context.Context, scope string) (ExternalStore, error)
}
