// Package wireharness runs the conformance matrix through the wire: each store the suite
// gets is an adapters/remote client talking HTTP to an in-process internal/server over a
// backend store made by another harness. Passing the matrix this way shows that the wire
// loses no fidelity the backend keeps, and that the server and client map every error.
//
// The harness controls the HTTP transport itself: MakeTransportUnavailable cuts it (or,
// with CutBackend, cuts the backend's own transport through the inner harness so that the
// server's error mapping is exercised), it counts requests (conformance.TransportObserver),
// and it can corrupt read responses (conformance.MalformedResponder) or answer a write
// without an identity (conformance.IdentitylessWriter).
package wireharness
