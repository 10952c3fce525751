// Package sqlite is the embedded default memory store: one SQLite database file opened with
// the pure-Go modernc.org/sqlite driver (no cgo), in WAL mode, with full fidelity and
// immediate search.
//
// One file can hold many adapters: every row carries the scope fixed at construction, and a
// store never reads or writes another scope's rows. Content and metadata are stored as their
// compact JSON text, so numbers above 2^53, key order and string escapes survive byte for
// byte; created_at as the text of its double's shortest form, bit for bit; tags as an ordered
// JSON array. Text search is a case-insensitive literal substring match (instr over a lower-cased copy of
// the content text), so %, _ and * are ordinary characters.
//
// The lifecycle facts (connections, concurrency, timeouts, retries, health evidence) are in
// docs/adapters/sqlite.md.
package sqlite
