package postgres

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// versionPin holds the server version an instance started on: the version of its first
// connection, which its first probe reported and the operator's conformance run verified.
// Every later connection is checked against it before a call uses it (pgxpool's PrepareConn,
// which runs on every acquire and costs a map lookup: the server reports server_version in
// its start-up parameters). A connection to a server of another version (an in-place
// upgrade, a failover onto a replica of another minor) serves no data call: the call answers
// the typed unavailable error and kicks the probe, whose connection is let through so that it
// reports the new version, which makes the evidence invalidate the manifest until a run has
// verified that version and the instance restarted on it (docs/operator.md, "Health
// evidence"). Without the check, the calls made between the server's restart and the next
// probe were acknowledged by a version no run had verified.
type versionPin struct {
	version atomic.Pointer[string]
}

// probeKey marks a probe's context: its calls may use a connection of another version.
type probeKey struct{}

// probing marks ctx as the probe's.
func probing(ctx context.Context) context.Context { return context.WithValue(ctx, probeKey{}, true) }

// prepare is the pool's PrepareConn. It pins the first version it sees and then keeps the
// pooled connection either way (true), failing only the data call that would use a
// connection of another version.
func (p *versionPin) prepare(ctx context.Context, conn *pgx.Conn) (bool, error) {
	got := conn.PgConn().ParameterStatus("server_version")
	if p.version.CompareAndSwap(nil, &got) {
		return true, nil
	}
	want := *p.version.Load()
	if got == want || ctx.Value(probeKey{}) != nil {
		return true, nil
	}
	return true, memory.NewUnavailable("postgres: connection", fmt.Errorf(
		"the server now runs PostgreSQL %s, not PostgreSQL %s, the version this instance started on and was verified against; "+
			"calls are refused until the instance restarts on a verified version", got, want))
}

// pinned is the version the instance started on, or "" before its first connection.
func (p *versionPin) pinned() string {
	if v := p.version.Load(); v != nil {
		return *v
	}
	return ""
}
