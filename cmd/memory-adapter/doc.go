// Command memory-adapter is the memory adapter's one binary: `serve` publishes one adapter
// instance over HTTP (internal/server; with --harness also the conformance harness protocol
// over a disposable scope), `conformance` runs the ADR-0093 matrix live against a backend
// configuration and optionally checks a deployed server through the wire, or with --target
// judges any server over the wire (conformance/wire), and `version` prints the build. The adapter image and the conformance Job image are the same.
//
// Secrets never appear in argv or logs: the backend connection string comes from
// --connection-file or the MEMORY_ADAPTER_CONNECTION environment variable, and the bearer
// token from --token-file.
package main
