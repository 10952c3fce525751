package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestServeNeverLeaksConnectionSecrets starts serve against unreachable servers with a password
// in the connection file: opening fails, and neither the returned error nor anything the
// process writes to stderr (its structured log) may carry the password.
func TestServeNeverLeaksConnectionSecrets(t *testing.T) {
	const secret = "s3cr3t-Pa55w0rd-do-not-log"
	for _, tc := range []struct{ backend, conn string }{
		// Port 1 on loopback refuses connections, so the open fails fast.
		{"postgres", "postgres://memory:" + secret + "@127.0.0.1:1/memory?sslmode=disable&connect_timeout=2"},
		{"redis", "redis://default:" + secret + "@127.0.0.1:1/0"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			dir := t.TempDir()
			connFile := filepath.Join(dir, "connection")
			if err := os.WriteFile(connFile, []byte(tc.conn+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			tokenFile := filepath.Join(dir, "token")
			if err := os.WriteFile(tokenFile, []byte(secret+"-token\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			logs := captureStderr(t, func() {
				out, errOut, err := execute(t, "serve", "--backend", tc.backend,
					"--connection-file", connFile, "--token-file", tokenFile,
					"--listen", "127.0.0.1:0", "--open-timeout", "5s")
				if err == nil {
					t.Fatalf("serve against an unreachable %s server succeeded", tc.backend)
				}
				t.Logf("serve failed as expected: %v", err)
				for name, text := range map[string]string{"error": err.Error(), "stdout": out, "cobra stderr": errOut} {
					if strings.Contains(text, secret) {
						t.Errorf("%s carries the secret: %s", name, text)
					}
				}
			})
			if strings.Contains(logs, secret) {
				t.Errorf("the log carries the secret:\n%s", logs)
			}
		})
	}
}

// captureStderr runs f with the process's file descriptor 2 redirected to a pipe and returns
// what was written. Redirecting the descriptor, not just os.Stderr, also catches libraries
// that captured the original stderr at init (go-redis's logger does).
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup2(int(w.Fd()), 2); err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, r)
		done <- b.String()
	}()
	restore := func() {
		_ = syscall.Dup2(saved, 2)
		_ = syscall.Close(saved)
		_ = w.Close()
	}
	defer func() {
		if saved >= 0 {
			restore()
		}
	}()
	f()
	restore()
	saved = -1
	return <-done
}
