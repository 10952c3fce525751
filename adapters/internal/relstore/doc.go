// Package relstore holds what the relational adapters (SQLite and PostgreSQL) share where
// their dialects agree, so that both accept, reject, match and evolve exactly alike: the
// option checks and manifest, the item checks and search-text rules, the versioned schema
// (migration ledger, migration runner, schema-version probe), and the records their
// conformance harnesses plant.
//
// The item checks run before any I/O: a rejected item never reaches the backend, and the
// rejection is a MemoryAdapterError naming the field, never the value (values may be private).
package relstore
