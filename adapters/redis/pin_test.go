package redis

import (
	"context"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
)

// TestCallsRefusedOnAnotherServerVersion: the store pins the version it opened against; on a
// server of another version every data call is the typed unavailable error and the probe
// still runs and reports the server's own version (storetest.VersionPin).
func TestCallsRefusedOnAnotherServerVersion(t *testing.T) {
	_, s := openStore(t)
	storetest.VersionPin(t, s, "Redis", *s.pin.pinned.Load(), func(v string) { s.pin.pinned.Store(&v) })
}

// TestNewConnectionsReportTheirVersion: a new connection records its server's version, so a
// pool that reconnects after an upgrade finds out before its first command runs.
func TestNewConnectionsReportTheirVersion(t *testing.T) {
	ctx := context.Background()
	_, s := openStore(t)
	real := *s.pin.pinned.Load()
	stale := "0.0.1"
	s.pin.saw(stale)
	if err := s.pin.refusal(ctx); err == nil {
		t.Fatal("a seen version other than the pinned one refused nothing")
	}
	// Drop every pooled connection: the next command dials, and OnConnect reports.
	if err := s.client.Close(); err != nil {
		t.Fatal(err)
	}
	s.client = newClient(s.cfg, 0, s.pin.onConnect)
	s.client.AddHook(pinHook{s.pin})
	if err := s.client.Ping(probing(ctx)).Err(); err != nil {
		t.Fatalf("ping on a new connection: %v", err)
	}
	if seen := *s.pin.seen.Load(); seen != real {
		t.Fatalf("after a new connection the version seen is %q, want the server's %q", seen, real)
	}
	if err := s.pin.refusal(ctx); err != nil {
		t.Fatalf("back on the pinned version: %v", err)
	}
}
