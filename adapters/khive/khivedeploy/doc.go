// Package khivedeploy is the operator's side of the khive backend: its entry in
// adapters/backend's table (API type, documented lifecycle, data volume, the child's flags
// rendered into its pods, the image it needs), registered when the package is imported. It
// links no MCP client, so the operator's manager can import it; adapters/khive imports it and
// adds the binary's side.
package khivedeploy
