// Package postgresdeploy is the operator's side of the PostgreSQL backend: its entry in
// adapters/backend's table (API type, documented lifecycle and failover, the connection flags
// rendered into its pods, its purge), registered when the package is imported. It links no
// PostgreSQL driver, so the operator's manager can import it; adapters/postgres imports it and
// adds the binary's side.
package postgresdeploy
