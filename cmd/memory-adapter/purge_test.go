package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/postgres"
	"github.com/agentmem/memory-adapter-operator/adapters/redis"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/testservers"
)

// purgeCmd runs the purge command with the connection in a file and returns its parsed
// result line, the termination message and the error.
func purgeCmd(t *testing.T, conn string, args ...string) (PurgeResult, string, error) {
	t.Helper()
	dir := t.TempDir()
	connFile, term := filepath.Join(dir, "dsn"), filepath.Join(dir, "termination-log")
	if err := os.WriteFile(connFile, []byte(conn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := execute(t, append([]string{"purge", "--connection-file", connFile, "--termination-log", term}, args...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res PurgeResult
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &res) != nil {
		t.Fatalf("stdout is not one JSON line: %q", out)
	}
	msg, rerr := os.ReadFile(term)
	if rerr != nil || string(msg) != lines[0] {
		t.Fatalf("termination message %q (%v), want the stdout line %q", msg, rerr, lines[0])
	}
	if strings.Contains(out, "hunter2") {
		t.Fatalf("the result leaks the password: %s", out)
	}
	return res, lines[0], err
}

// liveBackend opens stores on the real server of one backend.
type liveBackend struct {
	conn string
	open func(t *testing.T, scope string) memory.ExternalStore
}

// TestPurgeCommandDeletesOneScope stores items in two scopes of a real PostgreSQL and a real
// Redis server, purges one scope through the command, and checks that scope is empty and
// the other untouched.
func TestPurgeCommandDeletesOneScope(t *testing.T) {
	pgURL, redisAddr := testservers.Postgres(t), testservers.Redis(t)
	for name, b := range map[string]liveBackend{
		"postgres": {conn: pgURL, open: func(t *testing.T, scope string) memory.ExternalStore {
			s, err := postgres.Open(context.Background(), postgres.Options{URL: pgURL, Scope: scope})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		"redis": {conn: "redis://" + redisAddr, open: func(t *testing.T, scope string) memory.ExternalStore {
			s, err := redis.Open(context.Background(), redis.Options{Addr: redisAddr, Scope: scope})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	} {
		t.Run(name, func(t *testing.T) {
			doomed, kept := "purge-"+uuid.NewString()[:8], "keep-"+uuid.NewString()[:8]
			ids := map[string][]uuid.UUID{}
			for scope, n := range map[string]int{doomed: 2, kept: 1} {
				s := b.open(t, scope)
				for range n {
					it := memory.NewItem(json.RawMessage(`"x"`), "purge-test")
					storetest.MustStore(t, s, it)
					ids[scope] = append(ids[scope], it.ID)
				}
				// The adapter is stopped before a purge, as the operator does.
				if err := closeStore(s); err != nil {
					t.Fatal(err)
				}
			}
			res, line, err := purgeCmd(t, b.conn, "--backend", name, "--scope", doomed)
			if err != nil || res.Deleted != 2 || res.Scope != doomed || res.Backend != name || res.Error != "" {
				t.Fatalf("purge: %v; result %s, want 2 deleted", err, line)
			}
			for scope, want := range map[string]bool{doomed: false, kept: true} {
				s := b.open(t, scope)
				for _, id := range ids[scope] {
					got, err := s.Retrieve(context.Background(), id)
					if err != nil || (got != nil) != want {
						t.Errorf("scope %s item %s after the purge: %v, %v; want present=%t", scope, id, got, err, want)
					}
				}
				_ = closeStore(s)
			}
		})
	}
}

// TestPurgeCommandFailures: a backend that does not answer exits 1 with
// MemoryAdapterUnavailable; a bad command line exits 2 with UsageError. Each writes its JSON
// result, and none leaks the password.
func TestPurgeCommandFailures(t *testing.T) {
	closed := storetest.ClosedAddr(t)
	for _, tc := range []struct {
		name     string
		conn     string
		args     []string
		code     int
		wantType string
	}{
		{"postgres down", "postgres://u:hunter2@" + closed + "/db", []string{"--backend", "postgres", "--scope", "s"}, 1, "MemoryAdapterUnavailable"},
		{"redis down", "redis://u:hunter2@" + closed, []string{"--backend", "redis", "--scope", "s"}, 1, "MemoryAdapterUnavailable"},
		{"sqlite", "x", []string{"--backend", "sqlite", "--scope", "s"}, 2, "UsageError"},
		{"no scope", "postgres://u:hunter2@" + closed + "/db", []string{"--backend", "postgres"}, 2, "UsageError"},
		{"bad scope", "postgres://u:hunter2@" + closed + "/db", []string{"--backend", "postgres", "--scope", "A*"}, 2, "UsageError"},
		{"bad redis URL", "redis://u:hunter2@[::1", []string{"--backend", "redis", "--scope", "s"}, 2, "UsageError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, line, err := purgeCmd(t, tc.conn, tc.args...)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != tc.code {
				t.Fatalf("exit %v, want code %d", err, tc.code)
			}
			if res.ErrorType != tc.wantType || res.Error == "" || res.Deleted != 0 {
				t.Fatalf("result %s, want error_type %s with a reason", line, tc.wantType)
			}
		})
	}
}
