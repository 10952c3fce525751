// Package webhook holds the operator's admission webhooks. Its one webhook binds agent pods to
// a MemoryAdapter at creation: a pod that names an adapter with the memory.agentmem.io/adapter
// label and carries a memory.agentmem.io/requires annotation gets the scheduling gate
// memory.agentmem.io/adapter-ready, the adapter's binding Secret projected read-only under
// $SERVICE_BINDING_ROOT in every container, and the memory.agentmem.io/bound-to label the
// adapter's NetworkPolicy admits. A malformed requirement list is rejected with the parser's
// message. The gate controller (internal/controller/gate) lifts the gate; docs/gating.md
// explains the whole path, the failure policy and the timeout.
package webhook
