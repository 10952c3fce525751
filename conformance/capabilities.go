package conformance

import "context"

// The optional capabilities below let a harness expose more of its service to the suite. The
// suite detects them with a type assertion on the Harness; a harness without one gets a
// weaker check (the case message says what could not be observed) or, where the case cannot
// be observed at all, NotApplicable with the reason. Their method signatures use only the
// standard library and api/memory, so a harness satisfies them without importing this
// package.

// TransportObserver is an optional Harness capability: it counts requests that reached the
// adapter's transport (the fake transport, or an HTTP round-tripper in front of a remote
// adapter). The limit, unsupported-filter and dropped-write-field cases use it to prove that
// a call was answered before any request was sent.
type TransportObserver interface {
	// RequestCount returns the number of requests that reached the transport so far. Only
	// differences between two calls matter.
	RequestCount() int64
}

// FilterRecorder is an optional Harness capability for the supported-filter case: the fake
// transport records every native filter it receives, so the case can prove the adapter
// mapped a portable key and value to the native form it documents.
type FilterRecorder interface {
	// DocumentedFilter returns the native filter, in the harness's own textual form, that
	// the adapter documents for the portable filter key = value (value is JSON).
	DocumentedFilter(key string, value []byte) string
	// RecordedFilters returns, in the same textual form, every native filter that reached
	// the transport since the last Reset.
	RecordedFilters() []string
}

// MalformedResponder is an optional Harness capability for the typed-search case: it makes
// the service answer reads with malformed payloads until the next Reset, so the case can
// prove the adapter raises MemoryAdapterError instead of passing partial items through.
type MalformedResponder interface {
	// MakeResponsesMalformed corrupts every later read response until Reset.
	MakeResponsesMalformed(ctx context.Context) error
}

// IdentitylessWriter is an optional Harness capability for the store-identifier case: it
// makes the service acknowledge the next write successfully but without an identity, which
// the adapter must report as MemoryAdapterError (ADR-0093 D3).
type IdentitylessWriter interface {
	// MakeNextWriteIdentityless makes the next write's success response lack an identity.
	MakeNextWriteIdentityless(ctx context.Context) error
}
