// Package memoryadapter implements the MemoryAdapter controller: it deploys the adapter
// (Deployment, Service, client Secret, ServiceAccount, NetworkPolicy and, for SQLite, a
// PersistentVolumeClaim), verifies the deployed service version with a conformance Job per
// (manifest hash, service version, adapter version), and keeps the Available condition true
// only while the adapter's health evidence upholds the manifest that run verified.
//
// The files follow cluster-api's split: memoryadapter_controller.go holds Reconcile, setup and
// RBAC; phases.go the deploy, conform and health phases; resources.go the pure builders of
// owned objects; status.go the pure condition decisions; evidence.go the evidence client.
package memoryadapter
