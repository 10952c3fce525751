package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/internal/pki"
)

func writePair(t *testing.T, dir string, s *pki.Serving) {
	t.Helper()
	// The kubelet swaps a Secret volume's files by renaming; so does this.
	for name, b := range map[string][]byte{"tls.crt": s.CertPEM, "tls.key": s.KeyPEM} {
		tmp := filepath.Join(dir, "."+name)
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCertificateFilesPickUpARenewedPair(t *testing.T) {
	now := time.Now()
	ca, err := pki.NewCA("test", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := ca.Issue([]string{"a.ns.svc"}, time.Hour, now)
	second, _ := ca.Issue([]string{"a.ns.svc"}, 2*time.Hour, now)
	dir := t.TempDir()
	writePair(t, dir, first)
	cf, err := LoadCertificateFiles(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := now
	cf.now = func() time.Time { return clock }
	serving := func() time.Time {
		t.Helper()
		c, err := cf.GetCertificate(nil)
		if err != nil || c == nil || c.Leaf == nil {
			t.Fatalf("GetCertificate: %v %v", c, err)
		}
		return c.Leaf.NotAfter
	}
	if got := serving(); !got.Equal(first.NotAfter) {
		t.Fatalf("serves the certificate until %v, want the first (%v)", got, first.NotAfter)
	}
	writePair(t, dir, second)
	// A file system with coarse timestamps could give both writes one mtime; the sizes may
	// match too. Set the time apart so the test checks the reload, not the file system.
	later := now.Add(time.Minute)
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.Chtimes(filepath.Join(dir, f), later, later); err != nil {
			t.Fatal(err)
		}
	}
	if got := serving(); !got.Equal(first.NotAfter) {
		t.Fatalf("re-read the files within a second of the last look (serves %v)", got)
	}
	clock = clock.Add(2 * time.Second)
	if got := serving(); !got.Equal(second.NotAfter) {
		t.Fatalf("serves the certificate until %v after the renewal, want the second (%v)", got, second.NotAfter)
	}
	// A pair caught half-written does not take the server down: the last good one stays.
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), []byte("half a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * time.Second)
	if got := serving(); !got.Equal(second.NotAfter) {
		t.Fatalf("a broken pair replaced the good one (serves %v)", got)
	}
}

func TestLoadCertificateFilesRefusesWhatDoesNotLoad(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadCertificateFiles(filepath.Join(dir, "missing.crt"), filepath.Join(dir, "missing.key"), nil); err == nil {
		t.Error("loaded a pair from files that do not exist")
	}
	if _, err := LoadCertificateFiles("", "", nil); err == nil {
		t.Error("loaded a pair from no files")
	}
}
