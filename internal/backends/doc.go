// Package backends links the built-in backends into a binary: importing it registers each
// one's entry in adapters/backend's table, which the operator's render room and the
// memory-adapter commands read. It is the one list of built-in backends; a new backend adds
// its import here (docs/development.md, "Adding a backend").
package backends
