package postgres

import (
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
)

// TestCallsRefusedOnAnotherServerVersion: the store pins the version of its first
// connection; on a server of another version every data call is the typed unavailable error
// and the probe still reports the server's own version (storetest.VersionPin). The probe's
// evidence with every probe passing is this adapter's own: the pin is no failed probe.
func TestCallsRefusedOnAnotherServerVersion(t *testing.T) {
	s := newStore(t, newHarness(t))
	real := s.pin.pinned()
	if real == "" {
		t.Fatal("Open pinned no version")
	}
	storetest.VersionPin(t, s, "PostgreSQL", real, func(v string) { s.pin.version.Store(&v) })
}
