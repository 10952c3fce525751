// Package relstore holds the item checks and search-text rules shared by the relational
// adapters (SQLite and PostgreSQL), so that both accept, reject and match exactly alike.
//
// Everything here runs before any I/O: a rejected item never reaches the backend, and the
// rejection is a MemoryAdapterError naming the field, never the value (values may be private).
package relstore
