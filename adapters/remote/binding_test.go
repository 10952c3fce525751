package remote_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/pki"
)

// projected is a directory written the way the kubelet's atomic writer writes a Secret
// volume: each version's files in a new timestamped directory, the ..data symlink swapped
// to it with a rename (atomic), each key a symlink to ..data/<key> made once, and the
// previous version's directory removed.
type projected struct {
	dir     string
	version int
	current string
}

func newProjected(t testing.TB, files map[string][]byte) *projected {
	t.Helper()
	p := &projected{dir: filepath.Join(t.TempDir(), "mem")}
	if err := os.Mkdir(p.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p.write(t, files)
	return p
}

// write publishes files as the binding's new version.
func (p *projected) write(t testing.TB, files map[string][]byte) {
	t.Helper()
	p.version++
	ts := fmt.Sprintf("..2026_12_04_10_00_00.%09d", p.version)
	if err := os.Mkdir(filepath.Join(p.dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(p.dir, ts, name), b, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(p.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(p.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		link := filepath.Join(p.dir, name)
		if _, err := os.Lstat(link); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	if p.current != "" {
		if err := os.RemoveAll(filepath.Join(p.dir, p.current)); err != nil {
			t.Fatal(err)
		}
	}
	p.current = ts
}

// bindingFiles is a binding's files for url and token, with ca.crt when caPEM is set.
func bindingFiles(url, token string, caPEM []byte) map[string][]byte {
	f := map[string][]byte{"type": []byte("memory-adapter\n"), "provider": []byte("agentmem"), "url": []byte(url), "token": []byte(token + "\n")}
	if caPEM != nil {
		f["ca.crt"] = caPEM
	}
	return f
}

func TestOpenBindingRules(t *testing.T) {
	ca, err := pki.NewCA("operator", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("memory-adapter"), 0o444); err != nil {
		t.Fatal(err)
	}
	const httpsURL, httpURL = "https://mem.team.svc:8080", "http://mem.team.svc:8080"
	tests := []struct {
		name string
		// files are written as plain files into the binding directory; edit then changes
		// it (symlinks, removals). No directory at all when files is nil.
		files   map[string][]byte
		edit    func(t *testing.T, dir string)
		wantErr string
		// wantNotExist: the error wraps fs.ErrNotExist.
		wantNotExist bool
		wantToken    string
	}{
		{name: "https with ca.crt", files: bindingFiles(httpsURL, "tk", ca.CertPEM), wantToken: "tk"},
		{name: "http without ca.crt", files: bindingFiles(httpURL, "tk", nil), wantToken: "tk"},
		{name: "https without ca.crt trusts the system's roots", files: bindingFiles(httpsURL, "tk", nil), wantToken: "tk"},
		{name: "no directory", wantErr: "binding directory:", wantNotExist: true},
		{name: "no type", files: bindingFiles(httpURL, "tk", nil), edit: remove("type"), wantErr: "binding type:", wantNotExist: true},
		{name: "no url", files: bindingFiles(httpURL, "tk", nil), edit: remove("url"), wantErr: "binding url:", wantNotExist: true},
		{name: "no token", files: bindingFiles(httpURL, "tk", nil), edit: remove("token"), wantErr: "binding token:", wantNotExist: true},
		{name: "empty url", files: bindingFiles(" \n", "tk", nil), wantErr: "binding url is empty"},
		{name: "another type", files: map[string][]byte{"type": []byte("postgresql"), "url": []byte(httpURL), "token": []byte("tk")},
			wantErr: `binding type is "postgresql", want memory-adapter`},
		{name: "oversize token", files: bindingFiles(httpURL, strings.Repeat("t", remote.BindingFileLimit+1), nil),
			wantErr: "binding token: longer than 4096 bytes"},
		{name: "oversize ca.crt", files: bindingFiles(httpsURL, "tk", []byte(strings.Repeat("c", remote.CABundleLimit+1))),
			wantErr: "binding ca.crt: longer than 65536 bytes"},
		{name: "ca.crt with an http url", files: bindingFiles(httpURL, "tk", ca.CertPEM),
			wantErr: "refusing to send the token in clear"},
		{name: "ca.crt without a certificate", files: bindingFiles(httpsURL, "tk", []byte("nothing")),
			wantErr: "binding ca.crt: holds no PEM certificate"},
		{name: "token a relative symlink out of the directory", files: bindingFiles(httpURL, "tk", nil),
			edit: symlink("token", "../../"+filepath.Base(filepath.Dir(outside))+"/secret"), wantErr: "binding token:"},
		{name: "type an absolute symlink out of the directory", files: bindingFiles(httpURL, "tk", nil),
			edit: symlink("type", outside), wantErr: "binding type:"},
		{name: "..data a symlink out of the directory", files: map[string][]byte{"url": []byte(httpURL), "token": []byte("tk")},
			edit: func(t *testing.T, dir string) {
				symlink("..data", filepath.Dir(outside))(t, dir)
				symlink("type", "..data/secret")(t, dir)
			}, wantErr: "binding type:"},
		{name: "symlinks within the directory are followed", files: map[string][]byte{"url": []byte(httpURL), "real-type": []byte("memory-adapter"), "real-token": []byte(" tk\n")},
			edit: func(t *testing.T, dir string) {
				symlink("type", "real-type")(t, dir)
				symlink("token", "./sub/../real-token")(t, dir)
				if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
					t.Fatal(err)
				}
			}, wantToken: "tk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "mem")
			if tt.files != nil {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for name, b := range tt.files {
					if err := os.WriteFile(filepath.Join(dir, name), b, 0o444); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tt.edit != nil {
				tt.edit(t, dir)
			}
			b, err := remote.OpenBinding(dir)
			if tt.wantErr != "" {
				if b != nil || err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("OpenBinding: %v, want an error containing %q", err, tt.wantErr)
				}
				if tt.wantNotExist != errors.Is(err, fs.ErrNotExist) {
					t.Errorf("errors.Is(%v, fs.ErrNotExist) = %t", err, !tt.wantNotExist)
				}
				if strings.Contains(err.Error(), "tttt") {
					t.Errorf("the error quotes the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenBinding: %v", err)
			}
			defer func() { _ = b.Close() }()
			if tok, err := b.Token(); err != nil || tok != tt.wantToken {
				t.Errorf("Token() = %q, %v; want %q", tok, err, tt.wantToken)
			}
			if b.URL() != string(tt.files["url"]) {
				t.Errorf("URL() = %q", b.URL())
			}
		})
	}
}

func remove(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(name, target string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		_ = os.Remove(filepath.Join(dir, name))
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// serveCA starts ts over TLS with a certificate for "localhost" from ca, which setCA
// replaces for later handshakes.
func serveCA(t *testing.T, ca *pki.CA) (start func(*httptest.Server), setCA func(*pki.CA)) {
	t.Helper()
	var cert atomic.Pointer[tls.Certificate]
	setCA = func(ca *pki.CA) {
		t.Helper()
		s, err := ca.Issue([]string{"localhost"}, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.X509KeyPair(s.CertPEM, s.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cert.Store(&c)
	}
	setCA(ca)
	start = func(hs *httptest.Server) {
		// The refused handshakes this test causes on purpose are not news.
		hs.Config.ErrorLog = log.New(io.Discard, "", 0)
		hs.TLS = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return cert.Load(), nil
		}}
		hs.StartTLS()
	}
	return start, setCA
}

// localhostURL is hs's URL with the name its certificate carries.
func localhostURL(hs *httptest.Server) string {
	return strings.Replace(hs.URL, "127.0.0.1", "localhost", 1)
}

// TestFromBindingFollowsAKubeletTokenRotation rotates the token the way the operator and the
// kubelet do (docs/operator.md, "Rotating the token") under agents storing in a loop over
// TLS: the server accepts the old and the new token, the binding's ..data is swapped to the
// new one, and the server refuses the old token as soon as every agent has made a call that
// began after the swap (a grace period of zero, for a token known to be leaked). No call
// may be refused, and the server may not even answer 401 once: the token file is re-read
// before each call, so the 401 retry is never needed (without the re-read, the first calls
// after the old token's end are refused, and only the retry saves them).
func TestFromBindingFollowsAKubeletTokenRotation(t *testing.T) {
	ca, err := pki.NewCA("operator", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	start, _ := serveCA(t, ca)
	ts := newTokenServer(t, start, "old")
	p := newProjected(t, bindingFiles(localhostURL(ts.hs), "old", ca.CertPEM))
	ctx := context.Background()
	st, err := remote.FromBinding(ctx, p.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()

	const agents = 4
	var (
		swapped  atomic.Bool
		stop     atomic.Bool
		failures atomic.Int64
		firstErr atomic.Pointer[error]
		wg       sync.WaitGroup
		// after counts, per agent, the calls that succeeded having begun after the swap.
		after [agents]atomic.Int64
		total atomic.Int64
	)
	for a := range agents {
		wg.Go(func() {
			for !stop.Load() {
				began := swapped.Load()
				if _, err := st.Store(ctx, memory.NewItem([]byte(`"across the rotation"`), "t")); err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				total.Add(1)
				if began {
					after[a].Add(1)
				}
			}
		})
	}
	// waitFor polls cond to a deadline, failing the test if it never holds.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	callsSoFar := func(n int64) func() bool {
		from := total.Load()
		return func() bool { return total.Load() >= from+n }
	}
	waitFor("calls with the first token", callsSoFar(50))
	ts.accept("old", "new") // step 1: the pods accept the next token
	waitFor("calls while both are accepted", callsSoFar(50))
	p.write(t, bindingFiles(localhostURL(ts.hs), "new", ca.CertPEM)) // step 2: the binding switches
	swapped.Store(true)
	waitFor("a call begun after the swap by every agent", func() bool {
		for a := range agents {
			if after[a].Load() == 0 {
				return false
			}
		}
		return true
	})
	ts.accept("new") // step 3: the old token's grace is over
	waitFor("calls with the new token alone", callsSoFar(200))
	stop.Store(true)
	wg.Wait()

	if n := failures.Load(); n > 0 {
		t.Fatalf("%d of %d calls failed across the rotation, the first: %v", n, n+total.Load(), *firstErr.Load())
	}
	if n := ts.refused.Load(); n > 0 {
		t.Fatalf("the server answered 401 %d times: the client kept the old token after the binding switched", n)
	}
	if ts.seen("new") < 200 || ts.seen("old") < 50 {
		t.Fatalf("the server saw %d calls with the old token and %d with the new one", ts.seen("old"), ts.seen("new"))
	}
}

// TestBindingRereadsTheTokenAfterA401: a token rewritten in place with the same size and
// modification time (no kubelet does this; a hand-made binding might) escapes the file's
// change detection; the server's 401 makes the Store read the file afresh and send the call
// again, once, and later calls use the new token directly.
func TestBindingRereadsTheTokenAfterA401(t *testing.T) {
	ts := newTokenServer(t, nil, "old1")
	dir := filepath.Join(t.TempDir(), "mem")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range bindingFiles(ts.hs.URL, "old1", nil) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	st, err := remote.FromBinding(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	tokenFile := filepath.Join(dir, "token")
	before, err := os.Stat(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(tokenFile, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("new1\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tokenFile, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	ts.accept("new1")

	it := memory.NewItem([]byte(`"after an unseen rewrite"`), "t")
	if _, err := st.Store(ctx, it); err != nil {
		t.Fatalf("store after the rewrite: %v", err)
	}
	if got, err := st.Retrieve(ctx, it.ID); err != nil || got == nil {
		t.Fatalf("retrieve: %v %v", got, err)
	}
	if ts.refused.Load() != 1 || ts.data.Load() != 3 {
		t.Fatalf("the server refused %d of %d data calls, want 1 of 3 (the store's first attempt only)", ts.refused.Load(), ts.data.Load())
	}
}

// TestBindingTransportFollowsTheCA replaces the operator's CA the way docs/operator.md's TLS
// section describes (a new CA, a new serving certificate from it, and the binding's ca.crt
// re-projected): once the kubelet swapped ca.crt, new connections verify against the new CA
// only, and a ca.crt that holds no certificate keeps the one in force.
func TestBindingTransportFollowsTheCA(t *testing.T) {
	now := time.Now()
	ca1, err := pki.NewCA("operator", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	ca2, err := pki.NewCA("operator, next", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	start, setCA := serveCA(t, ca1)
	ts := newTokenServer(t, start, "tk")
	url := localhostURL(ts.hs)
	p := newProjected(t, bindingFiles(url, "tk", ca1.CertPEM))
	ctx := context.Background()
	st, err := remote.FromBinding(ctx, p.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	// store makes a call on a new connection, whose handshake sees the server's certificate
	// as it is now.
	store := func() error {
		ts.hs.CloseClientConnections()
		st.HTTPClient().CloseIdleConnections()
		_, err := st.Store(ctx, memory.NewItem([]byte(`"x"`), "t"))
		return err
	}
	if err := store(); err != nil {
		t.Fatalf("with the first CA: %v", err)
	}

	// The server presents a certificate from the new CA on new connections.
	setCA(ca2)
	if err := store(); err == nil || !errors.Is(err, memory.ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("the new CA's certificate before ca.crt changed: %v, want a verification failure", err)
	}
	p.write(t, bindingFiles(url, "tk", ca2.CertPEM))
	if err := store(); err != nil {
		t.Fatalf("after ca.crt changed to the new CA: %v", err)
	}
	// Only the new CA: a server still presenting the old one's certificate is refused.
	setCA(ca1)
	if err := store(); err == nil {
		t.Fatal("the old CA's certificate was accepted after ca.crt changed")
	}
	setCA(ca2)
	p.write(t, bindingFiles(url, "tk", []byte("not a certificate")))
	if err := store(); err != nil {
		t.Fatalf("a ca.crt without a certificate replaced the CA in force: %v", err)
	}
}

// TestBindingKeepsTheTokenItCannotReread: a token file that turns into a symlink out of the
// directory (or any version that cannot be read) is never read; the token last read stays in
// use, and ReloadToken says why it could not read.
func TestBindingKeepsTheTokenItCannotReread(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "stolen")
	if err := os.WriteFile(outside, []byte("someone else's"), 0o444); err != nil {
		t.Fatal(err)
	}
	p := newProjected(t, bindingFiles("http://mem.team.svc:8080", "tk", nil))
	b, err := remote.OpenBinding(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	symlink("token", outside)(t, p.dir)
	for range 2 {
		if tok, err := b.Token(); tok != "tk" || err != nil {
			t.Fatalf("Token() = %q, %v; want the token last read", tok, err)
		}
	}
	if tok, err := b.ReloadToken(); err == nil || tok == "someone else's" {
		t.Fatalf("ReloadToken() = %q, %v; want an error", tok, err)
	}
}
