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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/health"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
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
	ours := &health.HTTPEvidenceReader{RootCAs: pool(ca)}
	ev, err := ours.ReadEvidence(context.Background(), health.EvidenceTarget{URL: hs.URL, Token: "tok", ServerName: "mem.team.svc"})
	if err != nil || !ev.ManifestValid {
		t.Fatalf("the adapter's own name: %+v %v", ev, err)
	}
	for name, tc := range map[string]struct {
		reader *health.HTTPEvidenceReader
		target health.EvidenceTarget
		want   string
	}{
		"another adapter's name": {ours, health.EvidenceTarget{URL: hs.URL, Token: "tok", ServerName: "other.team.svc"}, "certificate is valid for"},
		"no name":                {ours, health.EvidenceTarget{URL: hs.URL, Token: "tok"}, "without the name its certificate must carry"},
		"another CA":             {&health.HTTPEvidenceReader{RootCAs: pool(other)}, health.EvidenceTarget{URL: hs.URL, Token: "tok", ServerName: "mem.team.svc"}, "unknown authority"},
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
		if got := render.RenewAt(issued, issued.Add(lifetime)).Sub(issued); got != want {
			t.Errorf("lifetime %s: renewed after %s, want %s", lifetime, got, want)
		}
	}
}

// TestCertificateLifetime covers which lifetime a new serving certificate gets and when the
// recorded one is replaced: the adapter's own lifetime wins over the manager's, and one that
// outlives what a certificate issued now would get (a shortened lifetime) is replaced at once.
func TestCertificateLifetime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := pki.NewCA("operator", 10*365*24*time.Hour, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	adapter := func(lifetime string) *memoryv1alpha1.MemoryAdapter {
		ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Name: "mem", Namespace: "team"}}
		if lifetime != "" {
			d := memoryv1alpha1.Duration(lifetime)
			ma.Spec.TLS = &memoryv1alpha1.TLSSpec{Mode: memoryv1alpha1.TLSOperator, CertificateLifetime: &d}
		}
		return ma
	}
	// issued describes a certificate of the given lifetime issued at the given time.
	issued := func(ma *memoryv1alpha1.MemoryAdapter, at time.Time, lifetime time.Duration) *memoryv1alpha1.TLSStatus {
		return &memoryv1alpha1.TLSStatus{
			Mode: memoryv1alpha1.TLSOperator, CAFingerprint: ca.Fingerprint(), DNSNames: render.ServiceDNSNames(ma),
			NotAfter:   &metav1.Time{Time: at.Add(lifetime)},
			RenewAfter: &metav1.Time{Time: render.RenewAt(at, at.Add(lifetime))},
		}
	}
	for name, tc := range map[string]struct {
		manager      time.Duration
		spec         string
		st           func(*memoryv1alpha1.MemoryAdapter) *memoryv1alpha1.TLSStatus
		wantLifetime time.Duration
		wantCurrent  bool
	}{
		"the default":                     {0, "", nil, render.DefaultCertLifetime, false},
		"the manager's flag":              {48 * time.Hour, "", nil, 48 * time.Hour, false},
		"the adapter's own over the flag": {48 * time.Hour, "90s", nil, 90 * time.Second, false},
		"an unparsable value falls back":  {48 * time.Hour, "soon", nil, 48 * time.Hour, false},
		"a fresh certificate of that length": {0, "2h", func(ma *memoryv1alpha1.MemoryAdapter) *memoryv1alpha1.TLSStatus {
			return issued(ma, now.Add(-time.Minute), 2*time.Hour)
		}, 2 * time.Hour, true},
		"due for renewal": {0, "2h", func(ma *memoryv1alpha1.MemoryAdapter) *memoryv1alpha1.TLSStatus {
			return issued(ma, now.Add(-90*time.Minute), 2*time.Hour)
		}, 2 * time.Hour, false},
		"the lifetime shortened": {0, "1h", func(ma *memoryv1alpha1.MemoryAdapter) *memoryv1alpha1.TLSStatus {
			return issued(ma, now.Add(-time.Minute), 2*time.Hour)
		}, time.Hour, false},
		"the lifetime lengthened": {0, "4h", func(ma *memoryv1alpha1.MemoryAdapter) *memoryv1alpha1.TLSStatus {
			return issued(ma, now.Add(-time.Minute), 2*time.Hour)
		}, 4 * time.Hour, true},
		"the flag shortened below a default certificate": {24 * time.Hour, "", func(ma *memoryv1alpha1.MemoryAdapter) *memoryv1alpha1.TLSStatus {
			return issued(ma, now.Add(-time.Hour), render.DefaultCertLifetime)
		}, 24 * time.Hour, false},
	} {
		t.Run(name, func(t *testing.T) {
			r := &Reconciler{CA: ca, CertLifetime: tc.manager}
			ma := adapter(tc.spec)
			if got := r.certLifetime(ma); got != tc.wantLifetime {
				t.Errorf("lifetime %s, want %s", got, tc.wantLifetime)
			}
			if tc.st == nil {
				return
			}
			if got := r.tlsStatusCurrent(ma, tc.st(ma), now); got != tc.wantCurrent {
				t.Errorf("current %v, want %v", got, tc.wantCurrent)
			}
		})
	}
}

// TestIssuedRecordLastsUntilTheCacheHasIt: the record of a certificate this process issued
// stands in for status while the cached adapter predates it, and goes once the cache holds
// that status or the name is a new adapter's, so it is not kept per adapter for good.
func TestIssuedRecordLastsUntilTheCacheHasIt(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := pki.NewCA("operator", 10*365*24*time.Hour, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	recorder := events.NewFakeRecorder(10)
	r := &Reconciler{Client: c, CA: ca, Recorder: recorder}
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Name: "mem", Namespace: "team", UID: "u1"}}
	key := client.ObjectKeyFromObject(ma)
	ensure := func(ma *memoryv1alpha1.MemoryAdapter) *memoryv1alpha1.TLSStatus {
		t.Helper()
		s := &scope{ma: ma, now: now}
		if err := r.ensureServingCertificate(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		return s.tls
	}
	issued := ensure(ma)
	if _, ok := r.issued.Load(key); !ok || len(recorder.Events) != 1 {
		t.Fatalf("first certificate: recorded %v, %d Events", ok, len(recorder.Events))
	}
	// A cached copy older than the status patch: the record answers, nothing is issued.
	if got := ensure(ma.DeepCopy()); !got.NotAfter.Equal(issued.NotAfter) || len(recorder.Events) != 1 {
		t.Errorf("a stale copy: %+v, %d Events", got, len(recorder.Events))
	}
	if _, ok := r.issued.Load(key); !ok {
		t.Error("the record went while the cache lacked the status")
	}
	// The cache has the status now: the record goes, and nothing is issued.
	current := ma.DeepCopy()
	current.Status.TLS = issued
	if got := ensure(current); !got.NotAfter.Equal(issued.NotAfter) || len(recorder.Events) != 1 {
		t.Errorf("the cached status: %+v, %d Events", got, len(recorder.Events))
	}
	if _, ok := r.issued.Load(key); ok {
		t.Error("the record outlived the status reaching the cache")
	}
	// A new adapter of the same name neither uses nor keeps the old one's record.
	ensure(ma)
	renamed := ma.DeepCopy()
	renamed.UID = "u2"
	ensure(renamed)
	if v, ok := r.issued.Load(key); !ok || v.(issuedCert).uid != "u2" || len(recorder.Events) != 3 {
		t.Errorf("a new adapter of the name: record %v, %d Events", v, len(recorder.Events))
	}
}
