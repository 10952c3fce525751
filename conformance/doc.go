// Package conformance is the reusable ADR-0093 conformance suite: the matrix (Cases) that
// every memory adapter runs against a deterministic fake transport and against its live
// service, through a Harness of the seed's five capabilities.
//
// Run executes the matrix from go test with one subtest per case id; Execute runs it from a
// program and returns a Report, which has a full JSON form, a compact JSON form that fits a
// Kubernetes termination message, and a table for terminals. Cases lists the stable case ids
// with a description and a troubleshooting hint each.
//
// Every case reads the store's manifest and checks the behavior it claims, so a truthful
// lossy or eventually consistent adapter passes while one whose manifest overstates (or, for
// tags and dropped fields, understates) its behavior fails. The manifest-accuracy case runs
// a built-in table over the fake in package conformance/fake that proves the suite catches
// every manifest lie the fake can express. See README.md for harness authors.
//
// A harness that is a WireTarget (conformance/wire, `memory-adapter conformance --target`)
// judges a server over HTTP through a raw client: the matrix then tests the server's own
// rules, and four wire-rule cases (content kinds, duplicate id, authentication, manifest
// stability) follow the matrix. Every report carries a claim: full only when no case lacked a
// harness capability.
//
// The package imports nothing from Kubernetes.
package conformance
