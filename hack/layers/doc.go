// Command layers fails when an import arrow runs back up the project's floors:
//
//	cmd → internal (controller, server, webhook) → adapters | conformance → api
//
// It reads every package's transitive non-test dependencies from `go list -deps`, so a rule
// holds for what a package pulls in through others, not only for its own import lines, and a
// package added later (internal/controller, internal/webhook) is checked without editing
// anything here. api/memory and api/requirements must also stay free of Kubernetes modules
// (k8s.io, sigs.k8s.io). `make lint` runs it. Test files are exempt: a backend's tests may start the
// reference store or the HTTP server to exercise it.
package main
