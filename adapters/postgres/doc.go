// Package postgres is the production relational memory store: a pgx v5 connection pool over
// one PostgreSQL database, full fidelity and immediate search.
//
// Items live in <schema>.memory_items, created on first use by versioned migrations under an
// advisory lock. Every row carries the scope fixed at construction, so one database (even one
// schema) can hold many adapters. Content and metadata are jsonb for filters (numbers are
// exact numerics) and, beside it, the exact compact text written, which reads return: jsonb
// prints 1e131071 as 131,072 digits, and a read must stay about the size of the write (the
// contract's amplification bound). Tags are an ordered text[], created_at a double precision
// (the client's double, bit for bit). Text search is a literal substring test over a
// lower-cased copy of the content text, so %, _ and * are ordinary characters; a sampled
// suffix index (migration 7) names the only rows that can hold a needle of six bytes or more,
// so an absent or rare text is answered without reading the scope, and pg_trgm's index serves
// the rest. Tag searches probe a tag index first the same way. Values PostgreSQL cannot
// store exactly (U+0000 anywhere, unpaired surrogate escapes) are rejected before the write
// with MemoryAdapterError.
//
// The lifecycle facts (connections, concurrency, timeouts, retries, health evidence) are in
// docs/adapters/postgres.md. Connection strings carry passwords: they never appear in errors
// or logs from this package.
package postgres
