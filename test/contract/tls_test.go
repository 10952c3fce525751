package contract

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance/wire/wiretest"
	"github.com/agentmem/memory-adapter-operator/internal/pki"
)

// writePair writes a serving pair the way the kubelet updates a mounted Secret: each file
// replaced by a rename.
func writePair(t *testing.T, dir string, s *pki.Serving) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, b := range map[string][]byte{certFile: s.CertPEM, keyFile: s.KeyPEM} {
		if err := os.WriteFile(f+".new", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f+".new", f); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// TestPythonExampleServesTheOperatorsCertificate runs the example Python adapter the way the
// operator runs an External server with TLS (the certificate files it mounts): a client
// trusting the binding's CA stores and retrieves through it, and a renewed pair written over
// the files is served to the next connection without a restart.
func TestPythonExampleServesTheOperatorsCertificate(t *testing.T) {
	now := time.Now()
	ca, err := pki.NewCA("operator", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := ca.Issue([]string{"localhost"}, 10*time.Minute, now)
	dir := t.TempDir()
	certFile, keyFile := writePair(t, dir, first)
	py := wiretest.StartPythonTLS(t, "", certFile, keyFile)
	u, err := url.Parse(py.URL)
	if err != nil {
		t.Fatal(err)
	}
	base := "https://localhost:" + u.Port()

	ctx := context.Background()
	st, err := remote.New(ctx, remote.Options{BaseURL: base, Token: py.Token, CACert: ca.CertPEM})
	if err != nil {
		t.Fatalf("connect over TLS with the binding's CA: %v", err)
	}
	it := memory.NewItem([]byte(`"over tls from python"`), "t")
	if _, err := st.Store(ctx, it); err != nil {
		t.Fatalf("store: %v", err)
	}
	if got, err := st.Retrieve(ctx, it.ID); err != nil || got == nil {
		t.Fatalf("retrieve: %v %v", got, err)
	}
	other, _ := pki.NewCA("someone else", time.Hour, now)
	if _, err := remote.New(ctx, remote.Options{BaseURL: base, Token: py.Token, CACert: other.CertPEM}); err == nil {
		t.Fatal("a client trusting another CA connected")
	}

	served := func() time.Time {
		t.Helper()
		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		c, err := tls.Dial("tcp", "localhost:"+u.Port(), &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		defer func() { _ = c.Close() }()
		return c.ConnectionState().PeerCertificates[0].NotAfter
	}
	if got := served(); !got.Equal(first.NotAfter) {
		t.Fatalf("serves a certificate until %v, want %v", got, first.NotAfter)
	}
	second, _ := ca.Issue([]string{"localhost"}, 20*time.Minute, now)
	writePair(t, dir, second)
	deadline := time.Now().Add(10 * time.Second)
	for !served().Equal(second.NotAfter) {
		if time.Now().After(deadline) {
			t.Fatalf("the renewed certificate was not served within 10s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The connection the store opened before the renewal may be reused; a call still works.
	if _, err := st.Retrieve(ctx, it.ID); err != nil {
		t.Fatalf("retrieve after the renewal: %v", err)
	}
}
