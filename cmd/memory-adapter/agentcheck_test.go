package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
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
		{"no binding for that adapter", bindingDir(t, "mem", hs.URL, "tk"), []string{"--adapter", "other"}, "", "binding type:"},
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
