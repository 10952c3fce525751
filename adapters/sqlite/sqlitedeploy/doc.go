// Package sqlitedeploy is the operator's side of the SQLite backend: its entry in
// adapters/backend's table (API type, documented lifecycle, data volume, the flags rendered
// into its pods), registered when the package is imported. It links no SQLite driver, so
// the operator's manager can import it; adapters/sqlite imports it and adds the binary's side.
package sqlitedeploy
