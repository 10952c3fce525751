// Package requirements is the language of the memory.agentmem.io/requires pod annotation: what
// an agent workload needs from a memory adapter's fidelity manifest before it may run against
// it (docs/gating.md).
//
// A requirement list is comma-separated clauses, each naming the manifest field it constrains
// with the field's MemoryAdapter spelling:
//
//	searchConsistency=immediate, retrieveFidelity>=native_fields, searchFidelity>=full,
//	searchReturnsTags, preservesMetadata, supportedFilters=branch_id+source,
//	nativeItemFields=created_at+metadata
//
// [Parse] turns the annotation into [Requirements] or a [*SyntaxError] that names the clause,
// its byte offset and what is wrong; [Requirements.Unmet] names each clause a manifest does
// not satisfy. The package imports nothing from Kubernetes (only api/memory's Manifest), so
// an agent, an admission webhook or a CLI in any setting applies exactly the same check.
package requirements
