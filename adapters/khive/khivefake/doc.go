// Package khivefake is a deterministic stand-in for khive's `kkernel mcp`: an MCP server
// (the official MCP Go SDK over stdio) with khive's single request tool, answering the verbs
// the khive adapter uses (memory.remember, memory.recall, kg get and list) with the shapes
// cited in docs/adapters/khive.md, including the ones an adapter must survive: records of
// other kinds under a key, shortened ids when the verbose presentation is not asked for,
// ok:false entries, identityless acknowledgements, malformed payloads, and a server that
// hangs or exits mid-call.
//
// It runs in-process over pipes (Pipe) or as a child process (cmd/khivefake), sharing its
// state with a test harness through a Backing (memory, or a JSON file for the child).
package khivefake
