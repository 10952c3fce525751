// Package gate implements the gate controller: it lifts the memory.agentmem.io/adapter-ready
// scheduling gate that the admission webhook (internal/webhook) puts on agent pods, once the
// MemoryAdapter they name is Available and the manifest its passing conformance run verified
// meets the requirements in their memory.agentmem.io/requires annotation. While it does not,
// the pod stays gated and carries an Event naming each unmet requirement; the adapter's
// status.workloads counts gated and released pods.
//
// The controller is keyed by adapter: one reconcile decides for every bound pod of that
// adapter and writes one status patch. decide.go holds the pure decision; gate_controller.go
// the reconcile, the watches and RBAC.
package gate
