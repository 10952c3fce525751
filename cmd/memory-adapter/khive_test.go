package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func buildKhiveFake(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "khivefake")
	out, err := exec.Command("go", "build", "-o", bin, "../../adapters/khive/khivefake/cmd/khivefake").CombinedOutput()
	if err != nil {
		t.Fatalf("go build khivefake: %v\n%s", err, out)
	}
	return bin
}

// TestKhiveConformanceAgainstFake runs `conformance --backend khive` through this build's
// HTTP server against the fake MCP server started as the adapter's child.
func TestKhiveConformanceAgainstFake(t *testing.T) {
	bin := buildKhiveFake(t)
	report := filepath.Join(t.TempDir(), "report.json")
	out, _, err := execute(t, "conformance", "--backend", "khive", "--khive-command", bin, "--report-file", report, "--termination-log", "")
	if err != nil {
		t.Fatalf("conformance: %v\n%s", err, out)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result         string `json:"result"`
		ServiceVersion string `json:"service_version"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Result != "Passed" || !strings.HasPrefix(r.ServiceVersion, "khivefake ") {
		t.Fatalf("report: result %q, service %q\n%s", r.Result, r.ServiceVersion, out)
	}
}

// TestKhiveServeBackend opens the store serve publishes, with the flags the controller sets.
func TestKhiveServeBackend(t *testing.T) {
	bin := buildKhiveFake(t)
	db := filepath.Join(t.TempDir(), "khive.db")
	cfg, fs := parseBackendFlags(t, "--backend", "khive", "--scope", "agents", "--khive-command", bin, "--khive-arg=mcp", "--khive-arg=--db="+db)
	if err := cfg.resolve(fs); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := cfg.chosen().Open(ctx, cfg.config())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeStore(s) }()
	it := memory.NewItem(json.RawMessage(`{"served":true}`), "t")
	if _, err := s.Store(ctx, it); err != nil {
		t.Fatal(err)
	}
	got, err := s.Retrieve(ctx, it.ID)
	if err != nil || got == nil || string(got.Content) != `{"served":true}` {
		t.Fatalf("retrieve: %v, %v", got, err)
	}
	cfg.filtersSet, cfg.SupportedFilters = true, []string{"branch_id"}
	if _, err := cfg.chosen().Open(ctx, cfg.config()); err == nil {
		t.Fatal("khive accepted supported filters it cannot apply")
	}
}
