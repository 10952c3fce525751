package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A binding directory's rules (docs/gating.md, "The binding").
const (
	// BindingType is what a memory adapter binding's type file holds.
	BindingType = "memory-adapter"
	// BindingFileLimit bounds each of type, url and token: a URL or a token, never more.
	BindingFileLimit = 4096
	// CABundleLimit bounds ca.crt: a few PEM certificates (the operator's CA, and its
	// successor should one ever be projected beside it), never more than this.
	CABundleLimit = 64 << 10
)

// Binding is an open Service Binding directory of a memory adapter, as the operator's pod
// webhook projects it ($SERVICE_BINDING_ROOT/<adapter>: type, provider, url, token and, when
// the adapter serves TLS, ca.crt). It follows the directory's changes: the kubelet rewrites a
// projected Secret by swapping its ..data symlink within its sync period, so a rotated token
// (spec.token.rotation) or CA reaches a long-running client without a restart. Every read
// stays inside the directory (os.Root), symlinks included. A Binding is safe for concurrent
// use; Close releases the directory.
type Binding struct {
	root  *os.Root
	dir   string
	url   string
	token *watchedFile
	// tokenCache is the token's text for the generation last asked.
	tokenCache atomic.Pointer[tokenCache]
	// ca is nil when the binding carries no ca.crt (a plain-http adapter, or an https one the
	// system's roots verify).
	ca        *watchedFile
	closeOnce sync.Once
}

// Binding implements TokenReloader.
var _ TokenReloader = (*Binding)(nil)

// OpenBinding reads and checks the binding in dir: type must be memory-adapter; url is
// required and must be https when ca.crt is present (a CA with a plain URL would send the
// token in clear while the caller believes it is protected); ca.crt, when present, must hold
// a PEM certificate. type, url and token are at most BindingFileLimit bytes, ca.crt at most
// CABundleLimit. The url is read once: it names the adapter's Service, which the operator
// never changes. Errors name the file and wrap the file system's (fs.ErrNotExist for a
// missing one); they never quote the token.
func OpenBinding(dir string) (*Binding, error) {
	// Absolute, so the per-call stat looks where root does even if the process changes its
	// working directory.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("binding directory: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("binding directory: %w", err)
	}
	b := &Binding{root: root, dir: dir}
	if err := b.load(); err != nil {
		_ = root.Close()
		return nil, err
	}
	return b, nil
}

func (b *Binding) load() error {
	kind, err := b.readTrimmed("type")
	if err != nil {
		return err
	}
	if kind != BindingType {
		return fmt.Errorf("binding type is %q, want %s", kind, BindingType)
	}
	if b.url, err = b.readTrimmed("url"); err != nil {
		return err
	}
	if b.url == "" {
		return errors.New("binding url is empty")
	}
	b.token = b.file("token", BindingFileLimit)
	if _, _, err := b.token.current(true); err != nil {
		return err
	}
	// ca.crt is there when the adapter serves TLS (the default); a plain-http adapter's
	// binding has none, and an https URL without one trusts the system's roots.
	ca := b.file("ca.crt", CABundleLimit)
	pem, _, err := ca.current(true)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	if !strings.HasPrefix(b.url, "https://") {
		return fmt.Errorf("binding url %q is not https although the binding carries ca.crt: refusing to send the token in clear", b.url)
	}
	if _, err := certPool(pem); err != nil {
		return err
	}
	b.ca = ca
	return nil
}

// URL is the adapter's base URL, from the url file.
func (b *Binding) URL() string { return b.url }

// Token implements TokenSource: the token file's content, trimmed, re-read when the file is
// no longer the version last read. The check is one stat (following the ..data symlink)
// and a comparison, so it runs before every call. When the file cannot be looked at or read
// (a writer that is not the kubelet, caught mid-way), the token last read is kept and the
// file is looked at again on the next call: an outdated token is refused by the server with
// 401, which ReloadToken then repairs, whereas no token would fail every call.
func (b *Binding) Token() (string, error) {
	data, gen, err := b.token.current(false)
	return b.tokenText(data, gen), err
}

// tokenText is the token in data, of generation gen, trimmed; the text of the generation
// last asked is kept, so an unchanged token costs a call no allocation.
func (b *Binding) tokenText(data []byte, gen uint64) string {
	if c := b.tokenCache.Load(); c != nil && c.gen == gen {
		return c.token
	}
	c := &tokenCache{gen: gen, token: strings.TrimSpace(string(data))}
	b.tokenCache.Store(c)
	return c.token
}

// tokenCache is a token file's generation and its text.
type tokenCache struct {
	gen   uint64
	token string
}

// ReloadToken implements TokenReloader: the token file read now, whatever its stamp says (a
// rewrite within the file system's timestamp granularity, or in place by a writer that kept
// size and time, leaves the stamp unchanged).
func (b *Binding) ReloadToken() (string, error) {
	data, gen, err := b.token.current(true)
	return b.tokenText(data, gen), err
}

// Transport returns a RoundTripper for the adapter's URL. With ca.crt it verifies the
// server's certificate against that CA only, as ca.crt is now: it holds a transport built by
// newTransport (nil means NewTransport) trusting the CA last read, and builds another one,
// for new connections, when ca.crt changes (the operator's CA replaced: docs/operator.md,
// "TLS"). Connections opened under the previous CA finish their calls and are then closed.
// A changed ca.crt that holds no PEM certificate keeps the previous CA: it could only refuse
// every server, and it is looked at again when it changes. Without ca.crt the transport is
// newTransport's, which trusts the system's roots for an https URL.
func (b *Binding) Transport(newTransport func() *http.Transport) http.RoundTripper {
	if newTransport == nil {
		newTransport = NewTransport
	}
	if b.ca == nil {
		return newTransport()
	}
	t := &caTransport{ca: b.ca, newTransport: newTransport}
	pem, gen, _ := b.ca.current(false)
	// load checked that this bundle parses.
	pool, _ := certPool(pem)
	t.cur.Store(&caState{gen: gen, tr: t.build(pool)})
	return t
}

// Close releases the binding directory. It is idempotent.
func (b *Binding) Close() error {
	var err error
	b.closeOnce.Do(func() { err = b.root.Close() })
	return err
}

// FromBinding opens the Service Binding in dir (OpenBinding) and connects to its adapter
// (New): the Store sends the binding's token as it is on disk before each call, re-reads it
// after a 401 unauthorized and retries that call once, and verifies the server against the
// binding's ca.crt as it is on disk (Binding.Transport). Closing the Store releases the
// directory. Binding errors are returned as OpenBinding gives them; a failure to connect is
// New's typed error, with the URL in its message.
func FromBinding(ctx context.Context, dir string, opts ...BindingOption) (*Store, error) {
	b, err := OpenBinding(dir)
	if err != nil {
		return nil, err
	}
	o := Options{BaseURL: b.URL(), TokenSource: b, HTTPClient: &http.Client{Transport: b.Transport(nil)}}
	for _, opt := range opts {
		opt(&o)
	}
	st, err := New(ctx, o)
	if err != nil {
		o.HTTPClient.CloseIdleConnections()
		_ = b.Close()
		return nil, fmt.Errorf("connect to %s: %w", b.URL(), err)
	}
	st.closers = append(st.closers, b)
	return st, nil
}

// BindingOption adjusts the Options FromBinding builds from a binding.
type BindingOption func(*Options)

// WithTimeout sets Options.Timeout, the deadline of one call.
func WithTimeout(d time.Duration) BindingOption { return func(o *Options) { o.Timeout = d } }

// WithMaxResponseBytes sets Options.MaxResponseBytes, the bound of a response body.
func WithMaxResponseBytes(n int64) BindingOption {
	return func(o *Options) { o.MaxResponseBytes = n }
}

// file is the binding's file name, bounded by limit.
func (b *Binding) file(name string, limit int64) *watchedFile {
	return &watchedFile{root: b.root, name: name, limit: limit, path: filepath.Join(b.dir, name)}
}

// readTrimmed reads a small binding file whole, surrounding whitespace trimmed.
func (b *Binding) readTrimmed(name string) (string, error) {
	data, _, err := b.file(name, BindingFileLimit).read()
	return strings.TrimSpace(string(data)), err
}

// certPool is the pool of the PEM bundle's certificates.
func certPool(pem []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("binding ca.crt: holds no PEM certificate")
	}
	return pool, nil
}

// watchedFile is one binding file and the version of it last read. A version is the
// identity of the file the name resolves to (device and inode, so a kubelet swap of ..data
// to a new directory is seen even when size and time agree) with its size and modification
// time (a rewrite in place).
type watchedFile struct {
	root  *os.Root
	name  string
	limit int64
	// path is name under the directory's path, for the per-call stat: os.Stat is one system
	// call, where os.Root's Stat walks the path itself a component and a symlink at a time
	// (30 µs and 20 allocations through the kubelet's ..data, against 1 µs). Only the
	// comparison uses it; every read goes through root, so a name that resolves outside the
	// directory is never read, only seen to differ.
	path string

	mu      sync.Mutex
	version os.FileInfo
	// refused is the version a read last failed on, so that it is not read again per call.
	refused os.FileInfo
	data    []byte
	// gen counts the contents read: it changes exactly when data does, so a user of the
	// content (a transport built on a CA) can tell whether it is outdated without comparing
	// bytes, and without depending on which caller happened to do the read.
	gen uint64
}

// current returns the file's content and its generation, reading the file again when force
// is set or the file the name resolves to is not the version last read. Once a version was
// read, a failure to look at or read the file keeps it, and the error is returned only when
// force is set; before that, every error is returned.
func (w *watchedFile) current(force bool) ([]byte, uint64, error) {
	// The stat runs outside the lock: concurrent calls do not queue behind a system call.
	fi, statErr := os.Stat(w.path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !force && w.version != nil && (statErr != nil || sameVersion(fi, w.version) || sameVersion(fi, w.refused)) {
		return w.data, w.gen, nil
	}
	data, version, err := w.read()
	switch {
	case err != nil && (force || w.version == nil):
		return w.data, w.gen, err
	case err != nil:
		w.refused = fi
		return w.data, w.gen, nil
	}
	if w.version == nil || string(data) != string(w.data) {
		w.data = data
		w.gen++
	}
	w.version = version
	return w.data, w.gen, nil
}

// read opens the file and returns its content with the version of the very file it read:
// the kubelet may swap the name to another file between a stat and an open.
func (w *watchedFile) read() ([]byte, os.FileInfo, error) {
	f, err := w.root.Open(w.name)
	if err != nil {
		return nil, nil, fmt.Errorf("binding %s: %w", w.name, err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("binding %s: %w", w.name, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, w.limit+1))
	if err != nil {
		return nil, nil, fmt.Errorf("binding %s: %w", w.name, err)
	}
	if int64(len(data)) > w.limit {
		return nil, nil, fmt.Errorf("binding %s: longer than %d bytes", w.name, w.limit)
	}
	return data, fi, nil
}

// sameVersion reports whether a and b describe the same version of a file.
func sameVersion(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// caTransport is Binding.Transport with a ca.crt: it sends each request through a transport
// that trusts the CA as ca.crt is now.
type caTransport struct {
	ca           *watchedFile
	newTransport func() *http.Transport
	cur          atomic.Pointer[caState]
	// mu serializes rebuilds, so a changed CA builds one transport, not one per caller.
	mu sync.Mutex
}

// caState is a transport and the generation of ca.crt it trusts.
type caState struct {
	gen uint64
	tr  *http.Transport
}

// RoundTrip implements http.RoundTripper.
func (t *caTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.transport().RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the current transport.
func (t *caTransport) CloseIdleConnections() { t.cur.Load().tr.CloseIdleConnections() }

// transport returns the transport for the CA as it is now, building it when ca.crt changed.
func (t *caTransport) transport() *http.Transport {
	pem, gen, _ := t.ca.current(false)
	if st := t.cur.Load(); st.gen >= gen {
		return st.tr
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.cur.Load()
	if st.gen >= gen {
		// Another call rebuilt it meanwhile (or for a newer ca.crt still: never go back).
		return st.tr
	}
	pool, err := certPool(pem)
	if err != nil {
		// Kept, with this generation recorded so that it is not parsed on every call: see
		// Binding.Transport.
		t.cur.Store(&caState{gen: gen, tr: st.tr})
		return st.tr
	}
	next := &caState{gen: gen, tr: t.build(pool)}
	t.cur.Store(next)
	// The previous transport's idle connections are closed; those in use return to its pool
	// when their call ends and close after its idle timeout, as nothing takes them again.
	st.tr.CloseIdleConnections()
	return next.tr
}

// build is a transport that verifies servers against pool only.
func (t *caTransport) build(pool *x509.CertPool) *http.Transport {
	tr := t.newTransport()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if tr.TLSClientConfig != nil {
		cfg = tr.TLSClientConfig.Clone()
	}
	cfg.RootCAs = pool
	tr.TLSClientConfig = cfg
	return tr
}
