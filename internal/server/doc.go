// Package server is the memory adapter's HTTP server: one memory.ExternalStore instance
// published over the wire format of contract.md §4 (api/memory/openapi.yaml).
//
// The server publishes the manifest it captured at construction for its whole life. When its
// own evidence invalidates that manifest (the backend's service version changed since start,
// a capability probe fails, an immediate backend's index lags, or the store starts reporting
// a different manifest), store, retrieve and search answer 503 unavailable instead of serving
// a different contract; a service version change is sticky for the life of the process. The
// decision itself is memory.JudgeEvidence, a pure function the controller shares; the server
// only gathers the observations and records the verdict.
//
// Every request is bounded: body size (413), JSON strictness (400), per-operation backend
// timeout, and the http.Server read/write/idle timeouts set by Serve. Filter keys
// outside the manifest and negative limits are rejected with 422 before the backend is
// called, so no partial or broadened query ever reaches it.
package server
