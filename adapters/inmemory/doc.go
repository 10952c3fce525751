// Package inmemory is the reference memory store: lionagi's InMemoryStore semantics as an
// ExternalStore with an honest, full-fidelity, immediately consistent manifest.
//
// Semantics (contract.md §1): text is a case-insensitive literal substring of the content's
// text (a JSON string's own characters, otherwise its compact JSON); tags match when an item
// carries any wanted tag; filters require every key to be JSON-equal in metadata; results come
// in insertion order cut to the limit. Unlike lionagi, a negative limit is rejected with
// UnsupportedMemoryQuery naming "limit", and filter keys outside the manifest are rejected.
// Storing an existing id replaces the item in place, keeping its original position, as a
// Python dict assignment does. The predicates themselves are api/memory's Matches, which
// every backend applies; this package is one backend among others, and only commands and
// test harnesses import it.
//
// Lifecycle (ADR-0093 D4): nothing to connect, no timeouts, no retries; safe for concurrent
// use; state lives only in the process and is lost with it.
package inmemory
