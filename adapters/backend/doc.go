// Package backend is the one table of what the operator and the memory-adapter binary know
// about each backend: its API type and --backend name, its documented lifecycle, which calls
// it repeats, its command-line options, the flags and environment the operator renders into
// its pods, whether it keeps a database volume, how a deleted adapter's scope is purged, and
// how to open it, its conformance harness and its purge.
//
// Each backend's own package registers its entry from an init function, as database/sql
// drivers do; internal/backends links the built-in ones into both binaries. The controller's
// render room and the commands read the table and never name a backend, so adding one touches
// its package and the lines docs/development.md lists. The package stands on api and
// conformance alone: render may read it without holding a client.
package backend
