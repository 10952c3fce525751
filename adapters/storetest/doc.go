// Package storetest holds the behaviour tests that every memory.Store backend must pass
// (exactness fixtures, literal text search, search predicates and order, concurrent writers)
// so that the SQLite, PostgreSQL, Redis and in-memory adapters assert the same contract from
// one source instead of from near-copies that drift apart.
//
// A backend's own test file provides a [Factory] that returns a fresh [Harness] on an empty
// scope (the adapters' conformance harnesses already satisfy it) and keeps its
// backend-specific checks — SQL-level verbatim storage, U+0000 handling, eventual-index
// internals — next to the backend. The package imports only the standard library, the
// memory API and the conformance package; it must stay free of Kubernetes imports. It is not
// under adapters/internal because the server's wire tests (internal/server/wireharness) run
// the same checks through HTTP.
package storetest
