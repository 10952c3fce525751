package storetest

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// ClosedAddr returns a loopback host:port nothing listens on: a port just released.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// ExpectKind fails t unless err is exactly the contract error want: memory.ErrUnavailable,
// or memory.ErrAdapter and not unavailable (an unavailable error is also an adapter error).
// It also fails when the message contains secret, such as a password in the connection
// string the call was given.
func ExpectKind(t testing.TB, err, want error, secret string) {
	t.Helper()
	if !errors.Is(err, want) || (!errors.Is(want, memory.ErrUnavailable) && errors.Is(err, memory.ErrUnavailable)) {
		t.Fatalf("error %v, want %v", err, want)
	}
	if secret != "" && strings.Contains(err.Error(), secret) {
		t.Fatalf("the error leaks a secret: %v", err)
	}
}
