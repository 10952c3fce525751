// Package wire judges any memory adapter server over HTTP: a raw client of the data wire
// (api/memory/openapi.yaml, /v1) that adds no rules of its own, and a client of the harness
// protocol (/harness/v1) that a server exposes in harness mode on a disposable scope.
// Together they make a conformance.Harness (and conformance.WireTarget), so that
// conformance.Execute runs the whole matrix, plus the wire-rule cases, against a server
// written in any language; `memory-adapter conformance --target` is its command line.
//
// The client is raw on purpose: it validates no query, answers nothing locally (limit 0 and
// a negative limit go to the server), passes rejected_keys through in the server's order,
// returns whatever id and items the server answers, and reads GET /v1/manifest on every
// Manifest call. adapters/remote is the client for programs; this one is for judging.
//
// The package imports only the standard library and api/memory, so the conformance
// package's own tests can use it.
package wire
