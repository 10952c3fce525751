package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestFailoverErrorsAreUnavailable: what a server says while a failover moves the primary
// (demoted to a standby, shutting down, starting up) and a connection cut under a call are the
// typed unavailable error (503), never the adapter error (500); and exactly those, not a
// timeout nor a refused connection, make the store drop its pool.
func TestFailoverErrorsAreUnavailable(t *testing.T) {
	pg := func(code, msg string) error { return &pgconn.PgError{Severity: "ERROR", Code: code, Message: msg} }
	for _, tc := range []struct {
		name        string
		err         error
		unavailable bool
		gone        bool
	}{
		{"read-only transaction (a demoted primary)", pg("25006", "cannot execute INSERT in a read-only transaction"), true, true},
		{"admin shutdown", pg("57P01", "terminating connection due to administrator command"), true, true},
		{"crash shutdown", pg("57P02", "terminating connection because of crash of another server process"), true, true},
		{"starting up", pg("57P03", "the database system is starting up"), true, true},
		{"shutting down", pg("57P03", "the database system is shutting down"), true, true},
		{"connection reset", fmt.Errorf("failed to receive message: %w", syscall.ECONNRESET), true, true},
		{"broken pipe", fmt.Errorf("write failed: %w", syscall.EPIPE), true, true},
		{"end of stream", fmt.Errorf("unexpected EOF: %w", io.ErrUnexpectedEOF), true, true},
		{"statement timeout", pg("57014", "canceling statement due to statement timeout"), true, false},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), true, false},
		{"refused connection", &pgconn.ConnectError{}, true, false},
		{"unique violation", pg("23505", "duplicate key value violates unique constraint"), false, false},
		{"syntax error", pg("42601", "syntax error"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := classify("store", tc.err)
			if got := errors.Is(err, memory.ErrUnavailable); got != tc.unavailable {
				t.Errorf("classify: %v, unavailable %v, want %v", err, got, tc.unavailable)
			}
			if !errors.Is(err, memory.ErrAdapter) {
				t.Errorf("classify: %v is not a MemoryAdapterError", err)
			}
			if got := serverGone(tc.err); got != tc.gone {
				t.Errorf("serverGone(%v) = %v, want %v", tc.err, got, tc.gone)
			}
		})
	}
}

// TestFollowsADemotionWithoutARestart runs a store against a real server whose connections
// turn read-only the way a demoted primary's do (default_transaction_read_only for the
// role in this test's own database, applied to new sessions only): the call on such a
// connection answers the typed unavailable error, and once new connections reach a writable
// server again (a promoted one, behind the same address) the very next store succeeds,
// because the pool dropped the read-only connection instead of handing it out again.
func TestFollowsADemotionWithoutARestart(t *testing.T) {
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, testURL)
	if err != nil {
		t.Fatalf("admin pool: %v", err)
	}
	t.Cleanup(admin.Close)
	db := "mao_demote_" + relstore.RandomHex(6)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatalf("CREATE DATABASE: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
			t.Errorf("DROP DATABASE: %v", err)
		}
	})
	u, err := url.Parse(testURL)
	if err != nil {
		t.Fatalf("test URL: %v", err)
	}
	u.Path = "/" + db
	s := newStore(t, newHarnessWith(t, HarnessOptions{URL: u.String()}))
	if _, err := s.Store(ctx, memory.NewItem([]byte(`"on the primary"`))); err != nil {
		t.Fatalf("Store before the demotion: %v", err)
	}

	readOnly := func(on bool) {
		t.Helper()
		stmt := "ALTER ROLE CURRENT_USER IN DATABASE " + db + " RESET default_transaction_read_only"
		if on {
			stmt = "ALTER ROLE CURRENT_USER IN DATABASE " + db + " SET default_transaction_read_only = on"
		}
		if _, err := admin.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	readOnly(true)
	t.Cleanup(func() { readOnly(false) })
	// The pool's next connections reach the server as it is now: a standby.
	s.pool.Reset()
	_, err = s.Store(ctx, memory.NewItem([]byte(`"on the demoted server"`)))
	if !errors.Is(err, memory.ErrUnavailable) || !strings.Contains(err.Error(), "25006") {
		t.Fatalf("Store on a read-only server: %v, want ErrUnavailable with SQLSTATE 25006", err)
	}
	ev, err := s.Probe(ctx)
	if err != nil {
		t.Fatalf("Probe on a read-only server: %v", err)
	}
	if w := probeNamed(ev, "write"); w.OK || !strings.Contains(w.Detail, "25006") {
		t.Fatalf("write probe on a read-only server: %+v, want a failure naming SQLSTATE 25006", w)
	}

	// New connections are writable again; the read-only one must not serve the next call.
	readOnly(false)
	item := memory.NewItem([]byte(`"on the new primary"`))
	if _, err := s.Store(ctx, item); err != nil {
		t.Fatalf("the first Store once new connections are writable: %v (the pool kept the read-only connection)", err)
	}
	got, err := s.Retrieve(ctx, item.ID)
	if err != nil || got == nil || got.ID != item.ID {
		t.Fatalf("Retrieve after the promotion: %v, %v", got, err)
	}
	ev, err = s.Probe(ctx)
	if err != nil || !ev.AllOK() {
		t.Fatalf("Probe after the promotion: %+v, %v", ev.Probes, err)
	}
}

// probeNamed is ev's probe called name, or a zero result naming what is missing.
func probeNamed(ev memory.Evidence, name string) memory.ProbeResult {
	for _, p := range ev.Probes {
		if p.Name == name {
			return p
		}
	}
	return memory.ProbeResult{Name: name, Detail: "no such probe in " + fmt.Sprint(ev.Probes)}
}
