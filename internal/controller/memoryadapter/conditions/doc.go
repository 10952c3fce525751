// Package conditions decides the MemoryAdapter conditions that do not come from evidence:
// ManifestValid, Deployed, Conformant and the Available summary, each a pure function of
// what the reconciler observed (Deployed a chain of small checks), so table tests cover every
// reason. Healthy is decided in the health package, from what the prober read.
package conditions
