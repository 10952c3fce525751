// Package postgres is the production relational memory store: a pgx v5 connection pool over
// one PostgreSQL database, full fidelity and immediate search.
//
// Items live in <schema>.memory_items, created on first use by versioned migrations under an
// advisory lock. Every row carries the scope fixed at construction, so one database (even one
// schema) can hold many adapters. Content and metadata are jsonb (numbers are exact numerics;
// key order and whitespace are not kept, which JSON equality ignores), tags an ordered text[],
// created_at a timestamptz (microseconds). Text search is strpos over a lower-cased copy of the
// content text, so %, _ and * are ordinary characters. Values PostgreSQL cannot store exactly
// (U+0000 anywhere, unpaired surrogate escapes) are rejected before the write with
// MemoryAdapterError.
//
// The lifecycle facts (connections, concurrency, timeouts, retries, health evidence) are in
// docs/adapters/postgres.md. Connection strings carry passwords: they never appear in errors
// or logs from this package.
package postgres
