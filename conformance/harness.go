package conformance

import (
	"context"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Harness is the seed's MemoryAdapterHarness: the test-side controls the suite needs over a
// disposable namespace or a fake transport. The adapter itself never has to expose reset,
// index or failure controls.
type Harness interface {
	// MakeStore returns a fresh adapter instance over the harness's disposable scope.
	MakeStore(ctx context.Context) (memory.ExternalStore, error)
	// Reset empties the disposable scope and restores the transport.
	Reset(ctx context.Context) error
	// MakeSearchIndexVisible returns once everything stored so far is searchable.
	MakeSearchIndexVisible(ctx context.Context) error
	// MakeTransportUnavailable cuts the transport between the adapter and its service until
	// the next Reset, so that explicit calls must fail with MemoryAdapterUnavailable.
	MakeTransportUnavailable(ctx context.Context) error
	// Close releases everything the harness created, dropping the disposable scope.
	Close(ctx context.Context) error
}

// ServiceVersioner is an optional Harness capability: the backend service version that a run
// exercised, recorded in the report.
type ServiceVersioner interface {
	// ServiceVersion returns the backend service's version string.
	ServiceVersion(ctx context.Context) (string, error)
}

// WrongKindMaker is an optional Harness capability for the wrong-native-kind case: it writes,
// behind the adapter's back, a service record that is not a memory item but resolves to the
// returned identity. Harnesses without it make that case NotApplicable with a reason.
type WrongKindMaker interface {
	// MakeWrongKindRecord plants a non-memory record and returns the identity it resolves to.
	MakeWrongKindRecord(ctx context.Context) (uuid.UUID, error)
}

// WriteRejecter is an optional Harness capability for the rejected-write case: it arranges
// for the service (not the adapter's own validation) to reject a write of the returned item.
// Harnesses without it make that case NotApplicable with a reason.
type WriteRejecter interface {
	// MakeWriteRejected returns an item whose store the service will reject.
	MakeWriteRejected(ctx context.Context) (memory.Item, error)
}
