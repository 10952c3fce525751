// Package backends links the built-in backends into the memory-adapter binary: importing it
// registers each one's whole entry in adapters/backend's table, the operator's side from its
// <name>deploy package (which internal/backends/deploy links into the manager alone) and the
// binary's side (flags, open, harness, purge) from the backend's own package. It is the one
// list of built-in backends the binary runs; a new backend adds its import here and its
// <name>deploy import there (docs/development.md, "Adding a backend").
package backends
