// Package backend is the one table of what the operator and the memory-adapter binary know
// about each backend: its API type and --backend name, its documented lifecycle, which calls
// it repeats, its command-line options, the flags and environment the operator renders into
// its pods, whether it keeps a database volume, how a deleted adapter's scope is purged, and
// how to open it, its conformance harness and its purge.
//
// Each backend registers its entry from init functions, as database/sql drivers do, in two
// halves: its <name>deploy package the operator's side (Register), its own package, beside
// its driver, the binary's side (Provide, the Runtime). internal/backends/deploy links the
// first halves into the manager, which so links no driver; internal/backends links whole
// backends into the memory-adapter binary. The controller's render room and the commands read
// the table and never name a backend, so adding one touches its packages and the lines
// docs/development.md lists. The package stands on api and
// conformance alone: render may read it without holding a client.
package backend
