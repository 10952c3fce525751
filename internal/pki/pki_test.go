package pki

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

func TestIssuedCertificateVerifiesForItsNamesOnly(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("test-ca", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue([]string{"adapter.team.svc", "adapter.team.svc.cluster.local"}, 10*time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(srv.CertPEM, srv.KeyPEM)
	if err != nil {
		t.Fatalf("the issued pair does not load: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	for name, tc := range map[string]struct {
		dns     string
		at      time.Time
		wantErr string
	}{
		"service name":            {"adapter.team.svc", now, ""},
		"cluster-local name":      {"adapter.team.svc.cluster.local", now, ""},
		"another adapter's name":  {"other.team.svc", now, "certificate is valid for"},
		"after it expired":        {"adapter.team.svc", now.Add(11 * time.Minute), "expired"},
		"a clock a little behind": {"adapter.team.svc", now.Add(-time.Minute), ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := leaf.Verify(x509.VerifyOptions{DNSName: tc.dns, Roots: pool, CurrentTime: tc.at})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("verify: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("verify: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
	if !srv.NotAfter.Equal(leaf.NotAfter) || srv.NotAfter.Sub(now) > 10*time.Minute {
		t.Errorf("NotAfter %v, certificate %v", srv.NotAfter, leaf.NotAfter)
	}
}

func TestAnotherCADoesNotVerify(t *testing.T) {
	now := time.Now()
	ca, _ := NewCA("a", time.Hour, now)
	other, _ := NewCA("b", time.Hour, now)
	srv, err := ca.Issue([]string{"x.y.svc"}, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := ParseCertificate(srv.CertPEM)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(other.CertPEM)
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "x.y.svc", Roots: pool}); err == nil {
		t.Fatal("a certificate verified against a CA that did not sign it")
	}
}

func TestIssueNeverOutlivesTheCA(t *testing.T) {
	now := time.Now()
	ca, _ := NewCA("short", time.Hour, now)
	srv, err := ca.Issue([]string{"x.y.svc"}, 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if srv.NotAfter.After(ca.Cert.NotAfter) {
		t.Fatalf("serving certificate until %v outlives its CA (%v)", srv.NotAfter, ca.Cert.NotAfter)
	}
}

func TestLoadCARoundTripAndRefusals(t *testing.T) {
	now := time.Now()
	ca, _ := NewCA("a", time.Hour, now)
	other, _ := NewCA("b", time.Hour, now)
	again, err := LoadCA(ca.CertPEM, ca.KeyPEM)
	if err != nil || again.Fingerprint() != ca.Fingerprint() {
		t.Fatalf("round trip: %v", err)
	}
	srv, _ := ca.Issue([]string{"x.y.svc"}, time.Minute, now)
	for name, tc := range map[string]struct {
		cert, key []byte
		want      string
	}{
		"mismatched key": {ca.CertPEM, other.KeyPEM, "does not match"},
		"a serving cert": {srv.CertPEM, srv.KeyPEM, "not a CA"},
		"garbage cert":   {[]byte("not pem"), ca.KeyPEM, "not a PEM CERTIFICATE"},
		"garbage key":    {ca.CertPEM, []byte("-----BEGIN RSA KEY-----\nAA==\n-----END RSA KEY-----\n"), "not a PEM PRIVATE KEY"},
		"empty":          {nil, nil, "not a PEM CERTIFICATE"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := LoadCA(tc.cert, tc.key); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadCA: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestIssueRefusesNoNamesAndNoLifetime(t *testing.T) {
	ca, _ := NewCA("a", time.Hour, time.Now())
	if _, err := ca.Issue(nil, time.Minute, time.Now()); err == nil {
		t.Error("issued a certificate for no name")
	}
	if _, err := ca.Issue([]string{"x"}, 0, time.Now()); err == nil {
		t.Error("issued a certificate with no lifetime")
	}
	if _, err := NewCA("a", 0, time.Now()); err == nil {
		t.Error("made a CA with no lifetime")
	}
}
