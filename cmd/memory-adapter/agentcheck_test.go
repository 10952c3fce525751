package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
