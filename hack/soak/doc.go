// Command soak is the opt-in HTTP fuzz/soak run of the adapter server (issue 11): it starts
// `memory-adapter serve` on a loopback port over one backend, sends random valid and invalid
// requests at a fixed concurrency for a bounded budget (time and request count), kills the
// backend half-way and restarts it, and then checks that every acknowledged write is still
// retrievable exactly. It reports the requests, the status codes, the 5xx answers outside the
// outage window (goal 0), panics in the adapter's log (goal 0), acknowledged writes that were
// later not retrievable (goal 0) and the adapter's peak RSS.
//
// Run it from the repository root, e.g. `go run ./hack/soak -backend sqlite -duration 60s`.
// It only ever talks to 127.0.0.1: the adapter it starts and the throwaway PostgreSQL or Redis
// server it starts through hack/postgres-server.sh or hack/redis-server.sh. There is no flag
// to point it elsewhere, so it cannot be turned against a deployed service.
package main
