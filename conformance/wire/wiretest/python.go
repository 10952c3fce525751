// Package wiretest starts the Python example adapter (examples/python-adapter/server.py) for
// tests: the truthful server that must pass the whole matrix over the wire, and the same
// server with one planted lie that the matrix must catch.
package wiretest

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Python is one running example server.
type Python struct {
	// URL is the data listener's base URL.
	URL string
	// HarnessURL is the harness listener's base URL.
	HarnessURL string
	// Token and HarnessToken are the two listeners' bearer tokens.
	Token, HarnessToken string
	// TokenFile and HarnessTokenFile hold them, for command-line tests.
	TokenFile, HarnessTokenFile string
}

// ServerPath returns the example server's path in this checkout.
func ServerPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "examples", "python-adapter", "server.py")
}

var interpreter = sync.OnceValues(func() (string, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return "", err
	}
	// pyenv and similar shims cost about a second per start; ask once for the real binary.
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		return "", fmt.Errorf("%s does not run: %w", py, err)
	}
	if p := strings.TrimSpace(string(out)); p != "" {
		return p, nil
	}
	return py, nil
})

// Interpreter returns the python3 interpreter, failing t (never skipping) when there is none.
func Interpreter(t testing.TB) string {
	t.Helper()
	py, err := interpreter()
	if err != nil {
		t.Fatalf("python3 is required to run the Python example adapter (examples/python-adapter); install Python 3 and put python3 on PATH: %v", err)
	}
	return py
}

// StartPython starts the example server on free loopback ports, with lie planted unless it
// is empty, and stops it when the test ends. Python 3 is a requirement of the test command:
// without python3 on PATH the test fails, it never skips.
func StartPython(t testing.TB, lie string) *Python {
	t.Helper()
	return startPython(t, lie, "http")
}

// PythonOptions are the example server's optional settings (StartPythonWith).
type PythonOptions struct {
	// Governance, when set, is the governance/v1 extension object the server claims and
	// enforces (server.py --governance), for example
	// `{"read_only":true,"isolation":true,"quota":{"max_items":6,"max_bytes":0,"writes_per_second":0,"write_burst":0}}`.
	Governance string
}

// StartPythonWith is StartPython with the options set (a governance/v1 claim).
func StartPythonWith(t testing.TB, lie string, opts PythonOptions) *Python {
	t.Helper()
	var extra []string
	if opts.Governance != "" {
		extra = append(extra, "--governance", opts.Governance)
	}
	return startPython(t, lie, "http", extra...)
}

// StartPythonTLS is StartPython with the data listener on HTTPS, serving the PEM pair in
// certFile and keyFile (and picking up a pair rewritten there); the harness listener stays
// plain, on loopback, as the operator runs it.
func StartPythonTLS(t testing.TB, lie, certFile, keyFile string) *Python {
	t.Helper()
	return startPython(t, lie, "https", "--tls-cert-file", certFile, "--tls-key-file", keyFile)
}

func startPython(t testing.TB, lie, scheme string, extra ...string) *Python {
	t.Helper()
	py := Interpreter(t)
	dir := t.TempDir()
	p := &Python{
		Token: rand.Text(), HarnessToken: rand.Text(),
		TokenFile: filepath.Join(dir, "token"), HarnessTokenFile: filepath.Join(dir, "harness-token"),
	}
	for f, v := range map[string]string{p.TokenFile: p.Token, p.HarnessTokenFile: p.HarnessToken} {
		if err := os.WriteFile(f, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{ServerPath(), "--listen", "127.0.0.1:0", "--token-file", p.TokenFile,
		"--harness-listen", "127.0.0.1:0", "--harness-token-file", p.HarnessTokenFile}
	if lie != "" {
		args = append(args, "--lie", lie)
	}
	args = append(args, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, py, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start the Python example: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(30 * time.Second)
	for p.URL == "" || p.HarnessURL == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the Python example exited before listening: %s", stderr.String())
			}
			if v, ok := strings.CutPrefix(l, "LISTEN="); ok {
				p.URL = scheme + "://" + v
			}
			if v, ok := strings.CutPrefix(l, "HARNESS_LISTEN="); ok {
				p.HarnessURL = "http://" + v
			}
		case <-timeout:
			t.Fatalf("the Python example printed no listen addresses in 30s: %s", stderr.String())
		}
	}
	go func() {
		for range lines {
		}
	}()
	return p
}
