// Package pyclient runs the Python client's tests (clients/python) from `go test`, so that
// `make test` covers them on a machine with Go and Python 3 only: the package's unit tests
// under every Python 3 found (python3 on PATH, and Debian's /usr/bin/python3 when it is
// another interpreter), and the 17-case matrix from Python, through the client, against
// `memory-adapter serve --harness` on SQLite, PostgreSQL and Redis, compared case by case
// with the Go suite's outcome over the wire on the same server. Python 3 is a requirement:
// without python3 on PATH these tests fail, they never skip.
package pyclient

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/conformance/wire"
	"github.com/agentmem/memory-adapter-operator/conformance/wire/wiretest"
	"github.com/agentmem/memory-adapter-operator/internal/testservers"
)

// root is the repository root.
func root(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// pythons is python3 on PATH, and /usr/bin/python3 when that is another interpreter (on
// the project's machines: pyenv's with pydantic 2, and Debian's without).
func pythons(t *testing.T) []string {
	t.Helper()
	out := []string{wiretest.Interpreter(t)}
	first, _ := filepath.EvalSymlinks(out[0])
	exe := func(p string) string {
		cmd := exec.Command(p, "-c", "import sys; print(sys.executable, sys.prefix)")
		b, err := cmd.Output()
		if err != nil {
			return p
		}
		return strings.TrimSpace(string(b))
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil && first != "/usr/bin/python3" && exe(out[0]) != exe("/usr/bin/python3") {
		out = append(out, "/usr/bin/python3")
	}
	return out
}

func pyEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	src := filepath.Join(root(t), "clients", "python", "src")
	tests := filepath.Join(root(t), "clients", "python", "tests")
	return append(os.Environ(), append([]string{"PYTHONPATH=" + src + string(os.PathListSeparator) + tests, "PYTHONDONTWRITEBYTECODE=1"}, extra...)...)
}

// TestPythonClientUnits runs clients/python/tests (python -m unittest) under every Python.
func TestPythonClientUnits(t *testing.T) {
	for _, py := range pythons(t) {
		t.Run(strings.ReplaceAll(py, "/", "_"), func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), py, "-m", "unittest", "discover", "-s", filepath.Join(root(t), "clients", "python", "tests"), "-t", filepath.Join(root(t), "clients", "python", "tests"))
			cmd.Env = pyEnv(t)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s -m unittest: %v\n%s", py, err, out)
			}
			t.Logf("%s", out)
		})
	}
}

// binDir holds the memory-adapter binary buildAdapter builds; TestMain makes it and
// removes it when the tests end, so a run leaves no 60 MB binary in the temporary directory.
var binDir string

// TestMain makes binDir around the package's tests.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pyclient-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// buildAdapter builds cmd/memory-adapter once per test binary.
var buildAdapter = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "memory-adapter")
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/memory-adapter")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/memory-adapter: %w\n%s", err, out)
	}
	return bin, nil
})

// target is a `serve --harness` process.
type target struct {
	url, harnessURL, token, harnessToken, tokenFile, harnessTokenFile string
}

// serveHarness starts `memory-adapter serve --harness` on backend (with connection, if any)
// and waits for /readyz; the process is stopped when the test ends.
func serveHarness(t *testing.T, backend, connection string) target {
	t.Helper()
	bin, err := buildAdapter()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tg := target{token: rand.Text(), harnessToken: rand.Text()}
	tg.tokenFile, tg.harnessTokenFile = filepath.Join(dir, "token"), filepath.Join(dir, "harness-token")
	for p, v := range map[string]string{tg.tokenFile: tg.token, tg.harnessTokenFile: tg.harnessToken} {
		if err := os.WriteFile(p, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr, haddr := storetest.ClosedAddr(t), storetest.ClosedAddr(t)
	tg.url, tg.harnessURL = "http://"+addr, "http://"+haddr
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "--backend", backend, "--listen", addr, "--token-file", tg.tokenFile,
		"--harness", "--harness-listen", haddr, "--harness-token-file", tg.harnessTokenFile, "--log-level", "warn",
		// Governed as an adapter with spec.access, spec.retention and spec.quota: both suites
		// run the governance profiles against this build's server.
		"--access-control", "--retention-max-age", "720h", "--retention-max-items", "5",
		"--quota-max-items", "60", "--quota-write-rate", "50", "--quota-write-burst", "20")
	cmd.Env = os.Environ()
	if connection != "" {
		cmd.Env = append(cmd.Env, "MEMORY_ADAPTER_CONNECTION="+connection)
	}
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cancel()
			<-done
		}
		cancel()
		_ = logf.Close()
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(tg.url + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return tg
			}
		}
		select {
		case err := <-done:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("serve --harness --backend %s exited: %v\n%s", backend, err, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("serve --harness --backend %s not ready after 90s\n%s", backend, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pyReport is the part of the Python suite's JSON report the tests read.
type pyReport struct {
	Result string `json:"result"`
	Claim  string `json:"claim"`
	Error  string `json:"error"`
	Cases  []struct {
		ID      string `json:"id"`
		Outcome string `json:"outcome"`
		Message string `json:"message"`
	} `json:"cases"`
	Profiles []struct {
		ID      string `json:"id"`
		Outcome string `json:"outcome"`
	} `json:"profiles"`
}

// runPython runs the Python matrix through the client against tg; factory, when set, is
// the module:callable making the store under test. It returns the report and the exit code.
func runPython(t *testing.T, py string, tg target, factory string) (pyReport, int, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	args := []string{"-m", "memory_adapter_client.conformance", "--target", tg.url, "--token-file", tg.tokenFile,
		"--harness-url", tg.harnessURL, "--harness-token-file", tg.harnessTokenFile, "--json", out, "--require-full-claim"}
	if factory != "" {
		args = append(args, "--store-factory", factory)
	}
	cmd := exec.CommandContext(t.Context(), py, args...)
	cmd.Env = pyEnv(t)
	text, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("python suite: %v\n%s", err, text)
		}
		code = ee.ExitCode()
	}
	var r pyReport
	data, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatalf("python suite wrote no report (exit %d): %v\n%s", code, rerr, text)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("python report: %v\n%s", err, data)
	}
	return r, code, string(text)
}

func (r pyReport) outcomes() map[string]string {
	m := map[string]string{}
	for _, c := range r.Cases {
		m[c.ID] = c.Outcome
	}
	return m
}

// TestPythonMatrixMatchesGoOverTheWire is the cross-language check: on each backend, the
// Python suite through the client must pass with the full claim, the Go suite over the
// wire on the same server must give the same outcome for each of the 17 cases, and the
// live client checks (numbers, strings, created_at) must hold. On SQLite, planted client
// bugs must make the Python run fail on the case meant to catch them.
func TestPythonMatrixMatchesGoOverTheWire(t *testing.T) {
	py := wiretest.Interpreter(t)
	pgURL, redisAddr := testservers.Postgres(t), testservers.Redis(t)
	for _, b := range []struct{ backend, connection string }{
		{"sqlite", ""}, {"postgres", pgURL}, {"redis", "redis://" + redisAddr},
	} {
		t.Run(b.backend, func(t *testing.T) {
			tg := serveHarness(t, b.backend, b.connection)
			r, code, text := runPython(t, py, tg, "")
			if code != 0 || r.Result != string(conformance.Passed) || r.Claim != conformance.ClaimFull {
				t.Errorf("python suite through the client: exit %d, %s (%s) %s\n%s", code, r.Result, r.Claim, r.Error, text)
			}
			h, err := wire.New(t.Context(), wire.Options{TargetURL: tg.url, Token: tg.token, HarnessURL: tg.harnessURL, HarnessToken: tg.harnessToken})
			if err != nil {
				t.Fatal(err)
			}
			gr := conformance.Execute(t.Context(), h, conformance.Options{})
			pyOut := r.outcomes()
			for _, c := range gr.Cases {
				if !slices.Contains(conformance.CaseIDs(), c.ID) {
					continue // the four wire-rule cases have no Python counterpart
				}
				if got := pyOut[string(c.ID)]; got != string(c.Outcome) {
					t.Errorf("case %s: Go over the wire %s (%s), Python through the client %s", c.ID, c.Outcome, c.Message, got)
				}
			}
			if len(pyOut) != len(conformance.CaseIDs()) {
				t.Errorf("python report has %d cases, want %d", len(pyOut), len(conformance.CaseIDs()))
			}
			// The governance profiles: both suites prove every claim of this build's server.
			pyProfiles := map[string]string{}
			for _, p := range r.Profiles {
				pyProfiles[p.ID] = p.Outcome
			}
			for _, id := range conformance.ProfileIDs() {
				g, _ := gr.Profile(id)
				if g.Outcome != conformance.Passed || pyProfiles[string(id)] != string(conformance.Passed) {
					t.Errorf("profile %s: Go over the wire %s (%s), Python %s", id, g.Outcome, g.Message, pyProfiles[string(id)])
				}
			}
			t.Logf("%s: Go %s, Python %s (%s)", b.backend, gr.Summary(), r.Result, r.Claim)

			cmd := exec.CommandContext(t.Context(), py, "-m", "unittest", "-v", "live_checks")
			cmd.Env = pyEnv(t, "MAC_TARGET_URL="+tg.url, "MAC_TOKEN="+tg.token, "MAC_BACKEND="+b.backend)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("live client checks on %s: %v\n%s", b.backend, err, out)
			}

			if b.backend != "sqlite" {
				return
			}
			// Planted client bugs (tests/planted.py, test-only subclasses): each must fail
			// the Python run on its case.
			for factory, want := range map[string]string{
				"planted:not_found_raises":           "unknown-id",
				"planted:drops_last_tag":             "tag-projection",
				"planted:strips_unsupported_filters": "unsupported-filter",
			} {
				r, code, text := runPython(t, py, tg, factory)
				if code == 0 || r.Result != string(conformance.Failed) || r.outcomes()[want] != string(conformance.Failed) {
					t.Errorf("planted bug %s: exit %d, result %s, %s %s; want the run and that case Failed\n%s", factory, code, r.Result, want, r.outcomes()[want], text)
				}
			}
		})
	}
}
