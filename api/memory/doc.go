// Package memory is the Go form of the lionagi memory adapter contract (ADR-0092 and ADR-0093).
//
// It defines the portable record ([Item]), the portable query ([Query]), the store interfaces
// ([Store], [ExternalStore]), the immutable fidelity [Manifest] with its six coherence rules,
// the stable errors every adapter must return, and the JSON wire form used by the adapter
// server. It deliberately imports nothing from Kubernetes so that adapter authors and agent
// workloads can depend on it alone.
//
// Exactness matters more than convenience here: content and metadata are kept as raw JSON so
// that numbers above 2^53 and key order survive, created_at is the client's double of Unix
// seconds kept bit for bit (lionagi's time.time()), and tag order and duplicates are part of
// an item's value.
package memory
