package memoryadapter

import (
	"context"
	"crypto/x509"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/internal/pki"
	adapterserver "github.com/agentmem/memory-adapter-operator/internal/server"
)

// TestEvidenceReadsCheckTheServiceName reads a real server's evidence over TLS at its
// address, as the manager reads a pod: the certificate must chain to the operator's CA and
// carry the adapter's Service name; another adapter's name, no name, or another CA fail.
func TestEvidenceReadsCheckTheServiceName(t *testing.T) {
	now := time.Now()
	ca, err := pki.NewCA("operator", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := pki.NewCA("another", time.Hour, now)
	cert, err := ca.Issue([]string{"mem.team.svc"}, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for f, b := range map[string][]byte{"tls.crt": cert.CertPEM, "tls.key": cert.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files, err := adapterserver.LoadCertificateFiles(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := adapterserver.New(adapterserver.Config{Store: inmemory.New(inmemory.Options{}), Token: []byte("tok")})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.TLS = files.TLSConfig()
	hs.StartTLS()
	defer hs.Close()

	pool := func(c *pki.CA) *x509.CertPool {
		p := x509.NewCertPool()
		p.AddCert(c.Cert)
		return p
	}
	ours := &HTTPEvidenceReader{RootCAs: pool(ca)}
	ev, err := ours.ReadEvidence(context.Background(), EvidenceTarget{URL: hs.URL, Token: "tok", ServerName: "mem.team.svc"})
	if err != nil || !ev.ManifestValid {
		t.Fatalf("the adapter's own name: %+v %v", ev, err)
	}
	for name, tc := range map[string]struct {
		reader *HTTPEvidenceReader
		target EvidenceTarget
		want   string
	}{
		"another adapter's name": {ours, EvidenceTarget{URL: hs.URL, Token: "tok", ServerName: "other.team.svc"}, "certificate is valid for"},
		"no name":                {ours, EvidenceTarget{URL: hs.URL, Token: "tok"}, "without the name its certificate must carry"},
		"another CA":             {&HTTPEvidenceReader{RootCAs: pool(other)}, EvidenceTarget{URL: hs.URL, Token: "tok", ServerName: "mem.team.svc"}, "unknown authority"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := tc.reader.ReadEvidence(context.Background(), tc.target); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("read: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestRenewalLeavesAThird(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for lifetime, want := range map[time.Duration]time.Duration{
		90 * time.Second:    60 * time.Second,
		90 * 24 * time.Hour: 60 * 24 * time.Hour,
	} {
		if got := renewAt(issued, issued.Add(lifetime)).Sub(issued); got != want {
			t.Errorf("lifetime %s: renewed after %s, want %s", lifetime, got, want)
		}
	}
}
