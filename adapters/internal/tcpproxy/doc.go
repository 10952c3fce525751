// Package tcpproxy is a small toggleable TCP proxy for live adapter tests.
//
// A conformance harness puts it between an adapter and its real backend server so that the
// transport-outage case exercises the real driver's error path: Cut closes every live
// connection and refuses new ones until Restore. It listens on loopback only and is not meant
// for production traffic.
package tcpproxy
