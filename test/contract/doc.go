// Package contract tests, from the operator's module, what the contract modules promise
// adapter authors: api/memory and conformance build on their own go.mod with no Kubernetes
// module in their graph, an author's module outside this one runs the suite against the
// example Python adapter over the wire, and the documents quote the contract's limits as the
// constants define them.
package contract
