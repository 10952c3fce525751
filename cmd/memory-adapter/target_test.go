package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/conformance/wire/wiretest"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

func executeCtx(ctx context.Context, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return out.String() + errb.String(), err
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startServe runs `serve --listen addr` with args until the test ends (an error it exits with
// fails the test) and returns once it listens.
func startServe(t *testing.T, addr string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() {
		_, err := executeCtx(ctx, append([]string{"serve", "--listen", addr}, args...)...)
		served <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	// The command's own readiness wait (--target-wait), polling to a deadline.
	if err := waitForTarget(context.Background(), targetFlags{url: "http://" + addr, wait: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
}

// runTargetCommand runs `conformance --target` and parses the report it wrote.
func runTargetCommand(t *testing.T, args ...string) (*conformance.Report, string, error) {
	t.Helper()
	report := filepath.Join(t.TempDir(), "report.json")
	out, runErr := executeCtx(t.Context(), append([]string{"conformance", "--report-file", report, "--termination-log", ""}, args...)...)
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report (%v): %s", runErr, out)
	}
	r, err := conformance.ParseReport(b)
	if err != nil {
		t.Fatalf("report does not parse back: %v", err)
	}
	return r, out, runErr
}

// TestTargetCommandAgainstServeHarness runs both commands as a user would: `serve --harness`
// on two listeners, then `conformance --target --harness-url`. The inmemory backend has no
// other native record kind, so the run passes without the full claim, and the command says so
// with exit code 1.
func TestTargetCommandAgainstServeHarness(t *testing.T) {
	dir := t.TempDir()
	tok, htok := writeFile(t, dir, "token", "data\n"), writeFile(t, dir, "harness-token", "harness\n")
	data, harness := storetest.ClosedAddr(t), storetest.ClosedAddr(t)
	startServe(t, data, "--backend", "inmemory", "--token-file", tok,
		"--harness", "--harness-listen", harness, "--harness-token-file", htok, "--log-level", "error")

	r, out, err := runTargetCommand(t, "--target", "http://"+data, "--token-file", tok,
		"--harness-url", "http://"+harness, "--harness-token-file", htok)
	var ee *exitError
	if r.Result != conformance.Passed || !slices.Equal(r.MissingCapabilities, []string{"wrong_kind_record"}) || !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("exit %v, %s\n%s", err, r.Summary(), out)
	}
	if r.AdapterID != "inmemory" || r.AdapterVersion != adapterVersion() || r.Target != "http://"+data || !strings.Contains(out, "partial claim") {
		t.Errorf("report names adapter %q version %q target %q\n%s", r.AdapterID, r.AdapterVersion, r.Target, out)
	}

	// --adapter-id is never ignored: naming another adapter fails the run.
	r, _, err = runTargetCommand(t, "--target", "http://"+data, "--token-file", tok, "--adapter-id", "sqlite",
		"--harness-url", "http://"+harness, "--harness-token-file", htok)
	if r.Result != conformance.Failed || !strings.Contains(r.Error, `--adapter-id "sqlite"`) || !errors.As(err, &ee) || ee.code != 1 {
		t.Errorf("a conflicting --adapter-id: exit %v, result %s, error %q", err, r.Result, r.Error)
	}
}

// TestTargetCommandAgainstThePythonExample: the independent Python server
// (examples/python-adapter) passes the whole matrix and the wire-rule cases through
// --target with the full claim. It needs python3 and fails loudly without it.
func TestTargetCommandAgainstThePythonExample(t *testing.T) {
	py := wiretest.StartPython(t, "")
	term := filepath.Join(t.TempDir(), "termination-log")
	r, out, err := runTargetCommand(t, "--target", py.URL, "--token-file", py.TokenFile,
		"--harness-url", py.HarnessURL, "--harness-token-file", py.HarnessTokenFile, "--termination-log", term)
	if err != nil || !r.FullClaim() {
		t.Fatalf("exit %v, %s\n%s", err, r.Summary(), out)
	}
	// The compact form of a wire report (21 cases) fits a termination message and agrees.
	cb, err := os.ReadFile(term)
	if err != nil {
		t.Fatal(err)
	}
	c, err := conformance.ParseCompact(cb)
	if err != nil || len(cb) > conformance.MaxTerminationMessage || c.Claim != conformance.ClaimFull || c.Target != py.URL || len(c.Cases) != len(r.Cases) {
		t.Fatalf("compact report %s (%v) disagrees with the full one", cb, err)
	}
	if r.AdapterID != "python-example" || !strings.HasPrefix(r.AdapterVersion, "python-example") || !strings.HasPrefix(r.ServiceVersion, "python ") {
		t.Errorf("the report does not name what the target reported: adapter %q version %q service %q", r.AdapterID, r.AdapterVersion, r.ServiceVersion)
	}
	// --server-url with --target: the production instance (here the same server) gets the
	// read-only checks against the target's manifest; another adapter there fails the run.
	r, out, err = runTargetCommand(t, "--target", py.URL, "--token-file", py.TokenFile,
		"--harness-url", py.HarnessURL, "--harness-token-file", py.HarnessTokenFile,
		"--server-url", py.URL, "--server-token-file", py.TokenFile)
	if err != nil || !r.FullClaim() || !strings.Contains(out, "published manifest equals the expected one") {
		t.Fatalf("with --server-url: exit %v, %s\n%s", err, r.Summary(), out)
	}
	r, _, err = runTargetCommand(t, "--target", py.URL, "--token-file", py.TokenFile,
		"--harness-url", py.HarnessURL, "--harness-token-file", py.HarnessTokenFile,
		"--server-url", startOtherAdapter(t, py.Token), "--server-token-file", py.TokenFile)
	if err == nil || r.Result != conformance.Failed || !strings.Contains(r.Error, "manifest: published") {
		t.Fatalf("a production instance of another adapter: exit %v, result %s, error %q", err, r.Result, r.Error)
	}

	// Without the harness URL the same server gets a partial report naming reset.
	r, out, err = runTargetCommand(t, "--target", py.URL, "--token-file", py.TokenFile)
	if err == nil || r.FullClaim() || !slices.Contains(r.MissingCapabilities, "reset") {
		t.Fatalf("without a harness: exit %v, %s\n%s", err, r.Summary(), out)
	}
}

func TestTargetAndHarnessUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tok, htok := writeFile(t, dir, "token", "same\n"), writeFile(t, dir, "harness-token", "same\n")
	other := writeFile(t, dir, "other", "other\n")
	for _, args := range [][]string{
		{"conformance", "--target", "http://127.0.0.1:1", "--backend", "sqlite"},
		{"conformance", "--harness-url", "http://127.0.0.1:1"},
		{"conformance", "--target", "http://127.0.0.1:1", "--duplicate-id-behaviour", "Sometimes"},
		{"serve", "--harness", "--token-file", tok, "--harness-listen", "127.0.0.1:0"},
		{"serve", "--harness", "--token-file", tok, "--harness-token-file", other},
		{"serve", "--harness", "--token-file", tok, "--harness-listen", "127.0.0.1:0", "--harness-token-file", htok},
		{"serve", "--harness", "--token-file", tok, "--harness-listen", "127.0.0.1:0", "--harness-token-file", other, "--scope", "prod"},
		{"serve", "--token-file", tok, "--harness-listen", "127.0.0.1:0"},
	} {
		_, err := executeCtx(t.Context(), args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: got %v, want exit code 2", args, err)
		}
	}
}

// startOtherAdapter serves the inmemory backend, another adapter than the Python example,
// with the given token.
func startOtherAdapter(t *testing.T, token string) string {
	t.Helper()
	srv, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{}), Token: []byte(token)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(t.Context(), true)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestTargetWaitOutlastsAServerStartingLate: --target-wait lets the run start before its
// target listens (the operator's External Job starts both together), and a target that never
// comes up is a failed run naming the wait.
func TestTargetWaitOutlastsAServerStartingLate(t *testing.T) {
	dir := t.TempDir()
	tok, htok := writeFile(t, dir, "token", "data\n"), writeFile(t, dir, "harness-token", "harness\n")
	data, harness := storetest.ClosedAddr(t), storetest.ClosedAddr(t)
	type result struct {
		r   *conformance.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		report := filepath.Join(dir, "report.json")
		_, err := executeCtx(t.Context(), "conformance", "--report-file", report, "--termination-log", "",
			"--target", "http://"+data, "--token-file", tok, "--harness-url", "http://"+harness,
			"--harness-token-file", htok, "--target-wait", "60s")
		b, rerr := os.ReadFile(report)
		var r *conformance.Report
		if rerr == nil {
			r, rerr = conformance.ParseReport(b)
		}
		done <- result{r, errors.Join(err, rerr)}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() {
		_, err := executeCtx(ctx, "serve", "--backend", "inmemory", "--listen", data, "--token-file", tok,
			"--harness", "--harness-listen", harness, "--harness-token-file", htok, "--log-level", "error")
		served <- err
	}()
	res := <-done
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	// The inmemory backend has no other record kind: a passed partial claim, exit code 1.
	if res.r == nil || res.r.Result != conformance.Passed || len(res.r.Cases) == 0 {
		t.Fatalf("the run did not wait for its target: %v %+v", res.err, res.r)
	}

	r, _, err := runTargetCommand(t, "--target", "http://"+storetest.ClosedAddr(t), "--token-file", tok, "--target-wait", "1s")
	if err == nil || r.Result != conformance.Failed || !strings.Contains(r.Error, "not ready within --target-wait 1s") {
		t.Errorf("a target that never listens: exit %v, result %s, error %q", err, r.Result, r.Error)
	}
}

// TestTargetCommandAgainstAGovernedServeHarness: `serve --harness` with the governance flags
// publishes the governance/v1 claim and offers the profiles' capabilities, and
// `conformance --target` proves every claim against it over the wire on SQLite.
func TestTargetCommandAgainstAGovernedServeHarness(t *testing.T) {
	dir := t.TempDir()
	tok, htok := writeFile(t, dir, "token", "data\n"), writeFile(t, dir, "harness-token", "harness\n")
	data, harness := storetest.ClosedAddr(t), storetest.ClosedAddr(t)
	startServe(t, data, "--backend", "sqlite", "--token-file", tok,
		"--harness", "--harness-listen", harness, "--harness-token-file", htok, "--log-level", "error",
		"--access-control", "--retention-max-age", "720h", "--retention-max-items", "5",
		"--quota-max-items", "60", "--quota-write-rate", "50", "--quota-write-burst", "20")

	r, out, _ := runTargetCommand(t, "--target", "http://"+data, "--token-file", tok,
		"--harness-url", "http://"+harness, "--harness-token-file", htok)
	if r.Result != conformance.Passed {
		t.Fatalf("%s\n%s", r.Summary(), out)
	}
	g := r.Manifest.Governance()
	if g == nil || !g.ReadOnly || !g.Isolation || g.Retention == nil || g.Quota == nil {
		t.Fatalf("the published manifest claims %+v", g)
	}
	for _, id := range conformance.ProfileIDs() {
		if p, _ := r.Profile(id); p.Outcome != conformance.Passed {
			t.Errorf("profile %s is %s: %s", id, p.Outcome, p.Message)
		}
	}
	if !strings.Contains(out, "PROFILE") {
		t.Errorf("the table shows no profiles:\n%s", out)
	}

	// The sweep's clock is the harness's to move, within bounds, and only with its token.
	for body, want := range map[string]int{
		`{"after_seconds": 60}`:           http.StatusNoContent,
		`{"after_seconds": -1}`:           http.StatusBadRequest,
		`{"after_seconds": 1e12}`:         http.StatusBadRequest,
		`{"after_seconds": 1.5}`:          http.StatusBadRequest,
		`{}`:                              http.StatusBadRequest,
		`{"after_seconds": 1, "x": true}`: http.StatusBadRequest,
		`[`:                               http.StatusBadRequest,
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+harness+"/harness/v1/retention-sweep", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer harness")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("retention-sweep %s: HTTP %d, want %d", body, resp.StatusCode, want)
		}
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+harness+"/harness/v1/governance-tokens", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer data")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("governance-tokens with the data token: HTTP %d, want 401", resp.StatusCode)
	}
}
