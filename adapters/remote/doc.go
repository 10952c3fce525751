// Package remote is the HTTP client of a deployed memory adapter server
// (internal/server, wire format api/memory/openapi.yaml): a memory.ExternalStore whose
// manifest is the server's, for Go workloads and for the conformance job. An agent in a
// bound pod connects with FromBinding, which reads the projected Service Binding
// (OpenBinding), sends its token as it is on disk before each call and verifies the server
// against its ca.crt as it is on disk, so a rotated token or CA needs no restart
// (docs/agents-go.md). The package imports nothing from Kubernetes.
//
// Lifecycle (ADR-0093 D4):
//
//   - Connections: New fetches GET /v1/manifest once, so an unreachable server fails at
//     construction with MemoryAdapterUnavailable; the manifest is kept for the Store's
//     lifetime and never re-read, so a caller cannot observe a different contract later.
//     Connections are pooled by the http.Client and created lazily afterwards.
//   - Concurrency: a Store is safe for concurrent use.
//   - Close: Close releases idle connections; it is idempotent.
//   - Timeouts: every call has a deadline of Options.Timeout (default 15 s: the server's
//     own backend timeout of 10 s plus headroom for the network), and dialing is bounded by
//     5 s. A caller's shorter context deadline wins.
//   - Retries: only of calls the adapter did not act on. A call whose connection could not
//     be opened is tried on a new one (DoUnsentRetry); with a TokenSource, a call the server
//     answered 401 unauthorized is sent once more when the source then gives another token
//     (the server checks the token before any route). Otherwise a write is never retried (a
//     retried store may duplicate state on backends without idempotent writes); Go's
//     transport may replay an idempotent GET on a keep-alive connection the server closed
//     before answering, which is safe.
//   - Credentials: Options.Token is fixed for the Store's life; Options.TokenSource is asked
//     before every call (Binding is one, re-reading the projected token file when it
//     changed).
//   - Scope: the server's instance; the client adds none.
//   - Duplicate ids: the server's backend decides (see its manifest and documentation).
//   - Errors: every transport failure is MemoryAdapterUnavailable; a problem+json answer
//     maps by its stable type (unsupported_query → UnsupportedMemoryQuery with the server's
//     rejected keys, unavailable → MemoryAdapterUnavailable, not_found on retrieve → nil
//     item, anything else → MemoryAdapterError); a malformed payload is MemoryAdapterError
//     with the decoding error chained. Query rules (filter keys, negative limit, limit 0)
//     are applied locally before any request is sent.
//   - Invalidation: the server answers unavailable when its own evidence invalidates the
//     manifest; Evidence exposes that evidence.
package remote
