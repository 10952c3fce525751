package main

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

func execute(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func TestVersion(t *testing.T) {
	out, _, err := execute(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"adapter version: dev", "suite version:   " + conformance.SuiteVersion, "inmemory"} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"conformance", "--backend", "nope"},
		{"serve", "--backend", "inmemory", "--token-file", filepath.Join(t.TempDir(), "missing")},
		{"serve", "--backend", "inmemory", "--listen", "127.0.0.1:0"},
		{"serve", "--backend", "inmemory", "--listen", "127.0.0.1:0", "--insecure-no-token", "--token-file", filepath.Join(t.TempDir(), "token")},
		{"conformance", "--expected-manifest-file", filepath.Join(t.TempDir(), "missing")},
	} {
		_, _, err := execute(t, args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: got %v, want exit code 2", args, err)
		}
	}
}

// TestRetryFlagsRefuseWhatTheBackendWouldNotRun: the operator passes status.lifecycle.retry
// as these flags, so a policy the backend would not run must stop the server, never be
// ignored.
func TestRetryFlagsRefuseWhatTheBackendWouldNotRun(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "postgres", "--retry-store", "attempts=0"}, "--retry-store: retry policy \"attempts=0\": attempts 0"},
		{[]string{"--backend", "redis", "--retry-retrieve", "backoff=1s"}, "attempts is required"},
		{[]string{"--backend", "redis", "--retry-store", "attempts=2"}, "the redis backend does not repeat store calls"},
		{[]string{"--backend", "sqlite", "--retry-search", "attempts=2"}, "the sqlite backend does not repeat search calls"},
	} {
		_, _, err := execute(t, append([]string{"serve", "--insecure-no-token", "--listen", "127.0.0.1:0"}, tc.args...)...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want a usage error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestConformanceWritesParseableReports runs the command against the inmemory backend and a
// deployed server, then parses both report forms back.
func TestConformanceWritesParseableReports(t *testing.T) {
	for _, backend := range []string{"inmemory", "sqlite"} {
		t.Run(backend, func(t *testing.T) { testConformanceCommand(t, backend) })
	}
}

// inmemoryServer is an adapter server over a fresh in-memory store with the token "tk",
// probed once as serve does at start, listening until the test ends.
func inmemoryServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{}), Token: []byte("tk")})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs
}

func testConformanceCommand(t *testing.T, backend string) {
	dir := t.TempDir()
	hs := inmemoryServer(t)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("tk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	report, term := filepath.Join(dir, "report.json"), filepath.Join(dir, "termination-log")
	out, _, runErr := execute(t, "conformance", "--backend", backend, "--server-url", hs.URL,
		"--server-token-file", tokenFile, "--report-file", report, "--termination-log", term)

	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	r, err := conformance.ParseReport(b)
	if err != nil {
		t.Fatalf("report does not parse back: %v", err)
	}
	if len(r.Cases) != len(conformance.CaseIDs()) || r.AdapterID != backend {
		t.Fatalf("report: adapter %q, %d cases", r.AdapterID, len(r.Cases))
	}
	cb, err := os.ReadFile(term)
	if err != nil {
		t.Fatal(err)
	}
	if len(cb) > conformance.MaxTerminationMessage {
		t.Fatalf("termination message is %d bytes", len(cb))
	}
	c, err := conformance.ParseCompact(cb)
	if err != nil || c.Result != r.Result || c.ManifestHash != r.ManifestHash {
		t.Fatalf("compact report %s (%v) disagrees with the full one", cb, err)
	}
	// The table names every case and the deployed server's checks, all of which pass.
	for _, id := range conformance.CaseIDs() {
		if !strings.Contains(out, string(id)) {
			t.Errorf("table lacks case %s", id)
		}
	}
	for _, check := range []string{"manifest", "evidence", "unknown-id", "unsupported-filter"} {
		if !strings.Contains(out, check+"  ") || (backend == "inmemory" && strings.Contains(r.Error, check+":")) {
			t.Errorf("deployed-server check %s missing or failed: %s\n%s", check, r.Error, out)
		}
	}
	// The deployed server runs the inmemory backend: for the sqlite run its manifest differs,
	// which the wire check must catch and fail the run for.
	if backend == "inmemory" {
		if runErr != nil || r.Result != conformance.Passed {
			t.Fatalf("exit error %v with result %s\n%s", runErr, r.Result, out)
		}
		return
	}
	var ee *exitError
	if !errors.As(runErr, &ee) || ee.code != 1 || r.Result != conformance.Failed || !strings.Contains(r.Error, "manifest: published") {
		t.Fatalf("a mismatched deployed manifest: exit %v, result %s, error %q", runErr, r.Result, r.Error)
	}
	if r.Counts.Failed != 0 || r.Counts.Passed+r.Counts.NotApplicable != len(conformance.CaseIDs()) {
		t.Fatalf("the sqlite matrix itself should pass: %+v", r.Counts)
	}
}

func TestDeployedServerCheckCatchesAManifestMismatch(t *testing.T) {
	srv, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{SupportedFilters: []string{"other"}})})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	want := inmemory.Manifest(memory.DefaultSupportedFilters())
	checks, _ := checkDeployed(context.Background(), remote.Options{BaseURL: hs.URL}, &want, "")
	if len(checks) == 0 || checks[0].Name != "manifest" || checks[0].OK {
		t.Fatalf("checks %+v: the manifest mismatch was not caught", checks)
	}
	// A wrong token makes every authenticated check fail rather than pass vacuously.
	srv2, _ := server.New(server.Config{Store: inmemory.New(inmemory.Options{}), Token: []byte("right")})
	hs2 := httptest.NewServer(srv2.Handler())
	t.Cleanup(hs2.Close)
	checks, _ = checkDeployed(context.Background(), remote.Options{BaseURL: hs2.URL, Token: "wrong"}, &want, "")
	if len(checks) != 1 || checks[0].OK || !strings.Contains(checks[0].Detail, "unauthorized") {
		t.Fatalf("wrong token: %+v", checks)
	}
}

// TestServeWithoutTokenNeedsTheFlag checks both sides of the rule: without a token the server
// refuses to start (exit 2, saying why), and with --insecure-no-token it starts and its log
// says /v1 is open.
func TestServeWithoutTokenNeedsTheFlag(t *testing.T) {
	_, _, err := execute(t, "serve", "--backend", "inmemory", "--listen", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "--insecure-no-token") {
		t.Fatalf("serve without a token: %v, want a refusal naming --insecure-no-token", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the server starts, logs, and shuts down at once
	var serveErr error
	logs := captureStderr(t, func() {
		f := serveFlags{listen: "127.0.0.1:0", insecureNoToken: true, logLevel: "info", openTimeout: 5 * time.Second, shutdownTimeout: time.Second}
		f.backend.Backend = "inmemory"
		serveErr = runServe(ctx, &f)
	})
	if serveErr != nil {
		t.Fatalf("serve --insecure-no-token: %v", serveErr)
	}
	for _, want := range []string{`"level":"warn"`, "--insecure-no-token: /v1 routes are open", `"auth":false`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q:\n%s", want, logs)
		}
	}
}

// switchingProber is a backend whose version moves, as a server upgraded in place does.
type switchingProber struct{ version atomic.Value }

func (p *switchingProber) Probe(context.Context) (memory.Evidence, error) {
	return memory.Evidence{ServiceVersion: p.version.Load().(string)}, nil
}

// TestDeployedServerCheckAfterAnUpgrade: an instance that started on the old version refuses
// data calls (sticky invalidation) once its backend moved; a run that verified the new version
// must not fail on that refusal (the operator then restarts the instance), while a run of
// any other version still fails.
func TestDeployedServerCheckAfterAnUpgrade(t *testing.T) {
	prober := &switchingProber{}
	prober.version.Store("17.9")
	m := inmemory.Manifest(memory.DefaultSupportedFilters())
	srv, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{}), Prober: prober})
	if err != nil {
		t.Fatal(err)
	}
	if ev := srv.Refresh(context.Background(), true); !ev.ManifestValid {
		t.Fatalf("before the upgrade: %+v", ev)
	}
	prober.version.Store("17.10")
	if ev := srv.Refresh(context.Background(), true); ev.ManifestValid || ev.InitialServiceVersion != "17.9" {
		t.Fatalf("after the upgrade the instance must invalidate itself: %+v", ev)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)

	checks, sv := checkDeployed(context.Background(), remote.Options{BaseURL: hs.URL}, &m, "17.10")
	for _, c := range checks {
		if !c.OK {
			t.Errorf("a run that verified 17.10 failed check %s: %s", c.Name, c.Detail)
		}
	}
	if sv != "17.10" {
		t.Errorf("service version %q, want 17.10", sv)
	}
	var unknown string
	for _, c := range checks {
		if c.Name == "unknown-id" {
			unknown = c.Detail
		}
	}
	if !strings.Contains(unknown, "stale instance") {
		t.Errorf("unknown-id should say the stale instance refused it, got %q", unknown)
	}

	checks, _ = checkDeployed(context.Background(), remote.Options{BaseURL: hs.URL}, &m, "18.0")
	failed := 0
	for _, c := range checks {
		if !c.OK {
			failed++
		}
	}
	if failed == 0 {
		t.Errorf("a run of another version passed every check against the invalidated instance: %+v", checks)
	}
}
