// Package conformance is the reusable ADR-0093 conformance suite: the 17-case matrix that
// every memory adapter runs against a deterministic fake transport and against its live
// service, through a Harness of the seed's five capabilities.
package conformance
