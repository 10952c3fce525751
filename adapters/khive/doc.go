// Package khive is a memory.ExternalStore backed by khive, reached the only way khive ships:
// MCP (JSON-RPC 2.0, one JSON object per line) over the stdin and stdout of a `kkernel mcp`
// child process that the store starts and owns. The protocol is the official MCP Go SDK's
// (github.com/modelcontextprotocol/go-sdk); the package owns the child, the bounds and the
// mapping of failures to the contract's errors.
//
// Every wire shape the adapter relies on is cited to the khive source file it came from in
// docs/adapters/khive.md (the ADR-0093 D4 companion documentation); the research behind it is
// ../shared/research/khive-wire.md. The package's khivefake subpackage is a deterministic MCP
// server replaying those shapes, so the whole conformance matrix runs without khive.
package khive
