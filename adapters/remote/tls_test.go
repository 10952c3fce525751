package remote_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/pki"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// serveTLS is the real server behind HTTPS with a certificate for name from ca, loaded the
// way `serve --tls-cert-file` loads it.
func serveTLS(t *testing.T, ca *pki.CA, name string) *httptest.Server {
	t.Helper()
	srv, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{}), Token: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	cert, err := ca.Issue([]string{name}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for f, b := range map[string][]byte{"tls.crt": cert.CertPEM, "tls.key": cert.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files, err := server.LoadCertificateFiles(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.TLS = files.TLSConfig()
	hs.StartTLS()
	t.Cleanup(hs.Close)
	return hs
}

func TestTLSVerifiesTheBindingsCA(t *testing.T) {
	ca, err := pki.NewCA("operator", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, _ := pki.NewCA("someone else", time.Hour, time.Now())
	const name = "adapter.team.svc"
	hs := serveTLS(t, ca, name)
	ctx := context.Background()

	rs, err := remote.New(ctx, remote.Options{BaseURL: hs.URL, Token: "k", CACert: ca.CertPEM, ServerName: name})
	if err != nil {
		t.Fatalf("the server's own CA and name: %v", err)
	}
	it := memory.NewItem([]byte(`"over tls"`), "t")
	if _, err := rs.Store(ctx, it); err != nil {
		t.Fatalf("store over TLS: %v", err)
	}
	if got, err := rs.Retrieve(ctx, it.ID); err != nil || got == nil {
		t.Fatalf("retrieve over TLS: %v %v", got, err)
	}

	for what, opts := range map[string]remote.Options{
		"another CA":             {BaseURL: hs.URL, Token: "k", CACert: other.CertPEM, ServerName: name},
		"another adapter's name": {BaseURL: hs.URL, Token: "k", CACert: ca.CertPEM, ServerName: "other.team.svc"},
		"the system roots":       {BaseURL: hs.URL, Token: "k", ServerName: name},
		"a CA with a plain URL":  {BaseURL: strings.Replace(hs.URL, "https://", "http://", 1), Token: "k", CACert: ca.CertPEM},
		"a CA that is not PEM":   {BaseURL: hs.URL, Token: "k", CACert: []byte("not a certificate"), ServerName: name},
	} {
		t.Run(what, func(t *testing.T) {
			st, err := remote.New(ctx, opts)
			if st != nil || err == nil {
				t.Fatalf("connected: %v", err)
			}
			// Whatever refuses, it is the typed error a caller can act on.
			if !errors.Is(err, memory.ErrAdapter) && !errors.Is(err, memory.ErrUnavailable) {
				t.Fatalf("untyped error: %v", err)
			}
		})
	}
}
