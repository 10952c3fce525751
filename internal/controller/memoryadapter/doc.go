// Package memoryadapter implements the MemoryAdapter controller: it deploys the adapter
// (Deployment, Service, binding Secret, ServiceAccount, NetworkPolicy and, for SQLite, a
// PersistentVolumeClaim), verifies the deployed service version with a conformance Job per
// (manifest hash, service version, adapter version), and keeps the Available condition true
// only while the adapter's health evidence upholds the manifest that run verified.
//
// The controller is three rooms. render (a subpackage) builds the desired objects and names
// them, with no client and no clock; health (a subpackage) reads the adapters' evidence off
// the reconcile workers and decides Healthy; this package observes the cluster, decides the
// other conditions with pure functions (the conditions subpackage, decideConformance,
// decidePurge; runs reads what a Job left) and acts, writing status once per reconcile.
// memoryadapter_controller.go holds Reconcile, setup and RBAC; phases.go the deploy, conform
// and health phases; purge.go the deletion path.
package memoryadapter
