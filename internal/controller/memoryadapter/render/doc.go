// Package render is the MemoryAdapter controller's pure room: from an adapter, its effective
// settings and what the reconciler observed, it builds the objects the operator wants to
// exist (the Deployment, Service, ServiceAccount, NetworkPolicy, disruption budget, data
// claim, conformance and purge Jobs, and the binding Secret with its token plan), and names
// them. It reads no cluster and no clock; every function is table-tested without a client.
// The labels and annotations other parts of the operator match on live here too, since these
// builders are what put them on the objects.
package render
