package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/internal/pki"
)

// TestServeOverTLSAndAgentCheckVerifiesTheCA starts `serve` with the certificate files the
// operator mounts, then runs agent-check against it through a binding that carries ca.crt:
// the binding's CA verifies, another CA does not, and a binding whose URL is plain http
// while it carries a CA is refused before any token is sent.
func TestServeOverTLSAndAgentCheckVerifiesTheCA(t *testing.T) {
	now := time.Now()
	ca, err := pki.NewCA("operator", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := pki.NewCA("someone else", time.Hour, now)
	cert, err := ca.Issue([]string{"localhost"}, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{"tls.crt": cert.CertPEM, "tls.key": cert.KeyPEM, "token": []byte("tk")}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := storetest.ClosedAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := executeCtx(ctx, "serve", "--backend", "inmemory", "--listen", addr, "--token-file", filepath.Join(dir, "token"),
			"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-key-file", filepath.Join(dir, "tls.key"))
		done <- err
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, port, _ := net.SplitHostPort(addr)
	httpsURL := "https://localhost:" + port

	// Plain HTTP to the TLS listener gets no adapter answer.
	if resp, err := http.Get("http://" + addr + "/v1/manifest"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the TLS listener: HTTP %d", resp.StatusCode)
		}
	}

	withCA := func(url string, caPEM []byte) string {
		root := bindingDir(t, "mem", url, "tk")
		if err := os.WriteFile(filepath.Join(root, "mem", "ca.crt"), caPEM, 0o444); err != nil {
			t.Fatal(err)
		}
		return root
	}
	for name, tc := range map[string]struct {
		root, wantErr string
	}{
		"the binding's CA":             {withCA(httpsURL, ca.CertPEM), ""},
		"another CA":                   {withCA(httpsURL, other.CertPEM), "certificate signed by unknown authority"},
		"no ca.crt: the system roots":  {bindingDir(t, "mem", httpsURL, "tk"), "certificate signed by unknown authority"},
		"a CA with a plain URL":        {withCA("http://"+addr, ca.CertPEM), "refusing to send the token in clear"},
		"a ca.crt with no certificate": {withCA(httpsURL, []byte("nothing")), "holds no PEM certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("SERVICE_BINDING_ROOT", tc.root)
			out, _, err := execute(t, "agent-check", "--adapter", "mem")
			if tc.wantErr == "" {
				if err != nil || !strings.Contains(out, "stored and retrieved item") {
					t.Fatalf("agent-check over TLS: %v\n%s", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("agent-check: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestServeRefusesCertificateFilesThatDoNotLoad(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"unreadable pair":   {"--tls-cert-file", bad, "--tls-key-file", bad},
		"a cert and no key": {"--tls-cert-file", bad},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := execute(t, append([]string{"serve", "--backend", "inmemory", "--insecure-no-token", "--listen", "127.0.0.1:0"}, args...)...)
			if err == nil || !strings.Contains(err.Error(), "--tls-cert-file/--tls-key-file") {
				t.Fatalf("serve started with %v: %v", args, err)
			}
		})
	}
}
