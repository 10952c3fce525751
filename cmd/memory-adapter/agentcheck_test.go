package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// bindingDir writes a binding as the pod webhook projects it: $root/<adapter>/{type,provider,url,token}.
func bindingDir(t *testing.T, adapter, url, token string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, adapter)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"type": "memory-adapter", "provider": "agentmem", "url": url, "token": token} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestAgentCheck(t *testing.T) {
	srv, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{SupportedFilters: []string{"source"}}), Token: []byte("tk")})
	if err != nil {
		t.Fatal(err)
	}
	// One probe, as serve runs at start, so the server answers calls.
	srv.Refresh(context.Background(), true)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	tests := []struct {
		name    string
		root    string
		args    []string
		wantOut string
		wantErr string
	}{
		{"met requirements, item round-trips", bindingDir(t, "mem", hs.URL, "tk"),
			[]string{"--adapter", "mem", "--requires", "searchConsistency=immediate, supportedFilters=source"}, "stored and retrieved item", ""},
		{"unmet requirement named", bindingDir(t, "mem", hs.URL, "tk"),
			[]string{"--adapter", "mem", "--requires", "supportedFilters=branch_id"}, "", "does not meet: supportedFilters=branch_id (not supported: branch_id)"},
		{"wrong token", bindingDir(t, "mem", hs.URL, "nope"), []string{"--adapter", "mem"}, "", "connect to"},
		{"no binding for that adapter", bindingDir(t, "mem", hs.URL, "tk"), []string{"--adapter", "other"}, "", "binding directory:"},
		{"adapter name outside the binding root", bindingDir(t, "mem", hs.URL, "tk"), []string{"--adapter", "../mem"}, "", "is not a MemoryAdapter name"},
		{"no binding root", "", []string{"--adapter", "mem"}, "", "SERVICE_BINDING_ROOT is not set"},
		{"malformed requirements", bindingDir(t, "mem", hs.URL, "tk"), []string{"--adapter", "mem", "--requires", "tags"}, "", `token "tags"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SERVICE_BINDING_ROOT", tt.root)
			out, _, err := execute(t, append([]string{"agent-check"}, tt.args...)...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("agent-check: %v", err)
				}
				if !strings.Contains(out, tt.wantOut) {
					t.Fatalf("output %q lacks %q", out, tt.wantOut)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestAgentWatch checks the line each call of --watch prints: a stored item, the typed 503
// of an adapter that refuses data calls, and a refused connection, which no answer carries.
func TestAgentWatch(t *testing.T) {
	srv, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{}), Token: []byte("tk")})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	up := httptest.NewServer(srv.Handler())
	defer up.Close()
	// A server that answers as an adapter with an invalidated manifest does.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"type":"unavailable","title":"Unavailable","status":503,"detail":"backend unreachable"}`))
	}))
	defer down.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	for _, tt := range []struct{ name, url, want string }{
		{"stored", up.URL, " store 201 application/json -"},
		{"typed unavailable", down.URL, " store 503 application/problem+json unavailable"},
		{"refused", gone.URL, " store error: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SERVICE_BINDING_ROOT", bindingDir(t, "mem", tt.url, "tk"))
			out, _, err := execute(t, "agent-check", "--adapter", "mem", "--watch", "--interval", "100ms", "--timeout", "250ms")
			if err != nil {
				t.Fatalf("agent-check --watch: %v", err)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) < 2 {
				t.Fatalf("want a line per call, got %q", out)
			}
			for _, l := range lines {
				if !strings.HasPrefix(l, "agent-check watch: ") || !strings.Contains(l, tt.want) {
					t.Fatalf("line %q lacks %q", l, tt.want)
				}
			}
		})
	}
}

// TestAgentWatchWaitsOutTheServersBudget: a typed 503 that takes longer than the old 5 s wait
// (the PostgreSQL adapter's own request budget, spent during an outage under load) is printed
// as the answer it is, not as a client timeout: the watch waits as long as the Go client does.
func TestAgentWatchWaitsOutTheServersBudget(t *testing.T) {
	const slow = 5500 * time.Millisecond
	late := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(slow):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"type":"unavailable","title":"Unavailable","status":503,"detail":"backend unreachable"}`))
	}))
	defer late.Close()
	t.Setenv("SERVICE_BINDING_ROOT", bindingDir(t, "mem", late.URL, "tk"))
	// The watch ends at --timeout; one call sent at once answers after 5.5 s, within it.
	out, _, err := execute(t, "agent-check", "--adapter", "mem", "--watch", "--interval", "100ms", "--timeout", "7s")
	if err != nil {
		t.Fatalf("agent-check --watch: %v", err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if !strings.Contains(first, " store 503 application/problem+json unavailable") {
		t.Fatalf("the first call's line is %q, want the late typed 503 (all output: %q)", first, out)
	}
}

// TestAgentWatchReadBackKeepAlive: --read-back retrieves every stored item and says whether it
// came back equal; --keep-alive makes every call share the pooled connection.
func TestAgentWatchReadBackKeepAlive(t *testing.T) {
	srv, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{}), Token: []byte("tk")})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(srv.Handler())
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	defer up.Close()
	// An adapter that acknowledges a store and then answers another item.
	other, err := memory.MarshalItem(memory.NewItem([]byte(`"someone else's"`)))
	if err != nil {
		t.Fatal(err)
	}
	lying := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(other)
			return
		}
		srv.Handler().ServeHTTP(w, r)
	}))
	defer lying.Close()

	for _, tt := range []struct {
		name, url, want string
		keepAlive       bool
	}{
		{"equal, one connection", up.URL, " retrieve 200 application/json -", true},
		{"different", lying.URL, " retrieve 200 application/json mismatch", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conns.Store(0)
			t.Setenv("SERVICE_BINDING_ROOT", bindingDir(t, "mem", tt.url, "tk"))
			args := []string{"agent-check", "--adapter", "mem", "--watch", "--read-back", "--interval", "50ms", "--timeout", "300ms"}
			if tt.keepAlive {
				args = append(args, "--keep-alive")
			}
			out, _, err := execute(t, args...)
			if err != nil {
				t.Fatalf("agent-check --watch: %v", err)
			}
			var stores, retrieves int
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				switch {
				case strings.Contains(l, " store 201 application/json -"):
					stores++
				case strings.Contains(l, tt.want):
					retrieves++
				default:
					t.Fatalf("unexpected line %q", l)
				}
			}
			if stores < 2 || retrieves != stores {
				t.Fatalf("%d stores and %d retrieves matching %q:\n%s", stores, retrieves, tt.want, out)
			}
			if tt.keepAlive && conns.Load() != 1 {
				t.Fatalf("%d calls opened %d connections, want 1 with --keep-alive", 2*stores, conns.Load())
			}
		})
	}
	if _, _, err := execute(t, "agent-check", "--adapter", "mem", "--read-back"); err == nil {
		t.Fatal("--read-back without --watch was accepted")
	}
}

// TestAgentRetrieveIDs: the ids a watch acknowledged read back as found from the adapter that
// stored them, as missing from one that lost them (a fresh store), as mismatched from one that
// answers other content, and as errors from one that answers 503; only the first exits 0.
func TestAgentRetrieveIDs(t *testing.T) {
	stored, lost := inmemoryServer(t), inmemoryServer(t)
	t.Setenv("SERVICE_BINDING_ROOT", bindingDir(t, "mem", stored.URL, "tk"))
	out, _, err := execute(t, "agent-check", "--adapter", "mem", "--watch", "--interval", "20ms", "--timeout", "200ms")
	if err != nil {
		t.Fatalf("agent-check --watch: %v", err)
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		_, id, ok := strings.Cut(l, " store 201 application/json - | id=")
		if !ok {
			t.Fatalf("a store line without its id: %q", l)
		}
		ids = append(ids, id)
	}
	if len(ids) < 2 {
		t.Fatalf("the watch stored %d items, want at least 2:\n%s", len(ids), out)
	}
	// The item asked for, with other content.
	lying := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := strings.CutPrefix(r.URL.Path, "/v1/items/"); ok && r.Method == http.MethodGet {
			it := memory.NewItem([]byte(`"someone else's"`))
			it.ID = uuid.MustParse(id)
			body, err := memory.MarshalItem(it)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
			return
		}
		stored.Config.Handler.ServeHTTP(w, r)
	}))
	defer lying.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/items/") {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"type":"unavailable","title":"down","status":503}`))
			return
		}
		stored.Config.Handler.ServeHTTP(w, r)
	}))
	defer down.Close()

	n := len(ids)
	for _, tt := range []struct {
		name, url, perID, summary string
		ok                        bool
	}{
		{"the adapter that stored them", stored.URL, "found", fmt.Sprintf("%d ids, %d found, 0 missing, 0 mismatched, 0 errors", n, n), true},
		{"an adapter that lost them", lost.URL, "missing", fmt.Sprintf("%d ids, 0 found, %d missing, 0 mismatched, 0 errors", n, n), false},
		{"an adapter answering other content", lying.URL, "mismatch", fmt.Sprintf("%d ids, 0 found, 0 missing, %d mismatched, 0 errors", n, n), false},
		{"an adapter answering 503", down.URL, "error: ", fmt.Sprintf("%d ids, 0 found, 0 missing, 0 mismatched, %d errors", n, n), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SERVICE_BINDING_ROOT", bindingDir(t, "mem", tt.url, "tk"))
			out, _, err := execute(t, "agent-check", "--adapter", "mem", "--retrieve-ids", strings.Join(ids, ","))
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want success %t\n%s", err, tt.ok, out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != n+1 || lines[n] != "agent-check retrieve: "+tt.summary {
				t.Fatalf("want %d id lines and the summary %q, got:\n%s", n, tt.summary, out)
			}
			for i, id := range ids {
				if !strings.HasPrefix(lines[i], "agent-check retrieve: "+id+" "+tt.perID) {
					t.Fatalf("line %d is %q, want %s %s", i, lines[i], id, tt.perID)
				}
			}
		})
	}
	for _, args := range [][]string{
		{"--retrieve-ids", "not-an-id"},
		{"--retrieve-ids", ids[0] + "," + ids[0]},
		{"--retrieve-ids", ids[0], "--watch"},
	} {
		if _, _, err := execute(t, append([]string{"agent-check", "--adapter", "mem"}, args...)...); err == nil {
			t.Fatalf("agent-check %v was accepted", args)
		}
	}
}
