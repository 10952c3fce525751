package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Defaults for Options fields left zero.
const (
	// DefaultTimeout is the deadline of one call: the server's 10 s backend timeout plus
	// network headroom.
	DefaultTimeout = 15 * time.Second
	// DefaultMaxResponseBytes bounds a response body; a search of many large items fits.
	DefaultMaxResponseBytes int64 = 64 << 20
)

// Options configure a Store.
type Options struct {
	// BaseURL is the server's root, for example http://adapter.ns.svc:8080.
	BaseURL string
	// Token is the bearer token; empty sends none. It is never logged or put in errors.
	Token string
	// TokenSource, when set, supplies the bearer token of each call instead of Token (they
	// exclude each other), for a token that changes while the Store lives: a rotated
	// binding (Binding is one). After a 401 unauthorized the Store asks it again
	// (TokenReloader.ReloadToken when it has that method) and retries the call once if the
	// token changed.
	TokenSource TokenSource
	// Timeout is the deadline of one call; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes bounds response bodies; zero means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// HTTPClient overrides the client (tests, custom TLS); nil builds one on NewTransport.
	HTTPClient *http.Client
	// CACert is the PEM bundle an https server's certificate must chain to: a binding's
	// ca.crt. Empty trusts the system's roots. Ignored with HTTPClient.
	CACert []byte
	// ServerName is the name the server's certificate must carry when it is not the URL's
	// host, for a client that reaches a Service by its address. Ignored with HTTPClient.
	ServerName string
}

// Store is a memory.ExternalStore over HTTP. Create it with New.
type Store struct {
	base     *url.URL
	token    string
	timeout  time.Duration
	maxBody  int64
	client   *http.Client
	manifest memory.Manifest
	// prefix is the base URL's text when appending a path to it gives what url.URL would
	// write (no query, fragment or raw path); empty otherwise.
	prefix string
	// itemsURL and searchURL are the store's and search's request URLs, built once.
	itemsURL, searchURL string
	// auth is the request headers of the fixed token (or of none) when there is no
	// TokenSource.
	auth *tokenAuth
	// shareHeaders is set when the client's transport is known to leave request headers as
	// they are (net/http's, this package's): requests then share tokenAuth's headers.
	shareHeaders bool
	// tokens is Options.TokenSource; lastAuth caches the headers of the token it last gave.
	tokens   TokenSource
	lastAuth atomic.Pointer[tokenAuth]
	// closers are released by Close after the client's connections (FromBinding's Binding).
	closers []io.Closer
}

// TokenSource supplies the bearer token of each call, for a token that changes while a Store
// lives. The Store asks before every request, so Token must be cheap and safe for concurrent
// use. It takes no context: a source reads memory or a local file, never the network.
type TokenSource interface {
	// Token returns the token to send now; "" sends none. An error fails the call with
	// MemoryAdapterError before anything is sent.
	Token() (string, error)
}

// TokenReloader is a TokenSource that can read its token afresh whatever its own change
// detection says. A Store calls ReloadToken after the server answered 401 unauthorized.
type TokenReloader interface {
	TokenSource
	// ReloadToken returns the token read now.
	ReloadToken() (string, error)
}

// TokenFunc adapts a function to a TokenSource.
type TokenFunc func() (string, error)

// Token implements TokenSource.
func (f TokenFunc) Token() (string, error) { return f() }

// tokenAuth is a token and the request headers that carry it, built once per token: a
// request without a trace context to add shares them when the transport is one known not to
// write a request's headers (Store.shareHeaders).
type tokenAuth struct {
	token string
	// get and post are the headers of a request without and with a JSON body.
	get, post http.Header
}

// newTokenAuth builds the headers of token ("" sends no Authorization header).
func newTokenAuth(token string) *tokenAuth {
	a := &tokenAuth{
		token: token,
		get:   http.Header{"Accept": acceptHeader},
		post:  http.Header{"Accept": acceptHeader, "Content-Type": jsonContentType},
	}
	if token != "" {
		auth := []string{"Bearer " + token}
		a.get["Authorization"] = auth
		a.post["Authorization"] = auth
	}
	return a
}

var _ memory.ExternalStore = (*Store)(nil)

// ProblemError carries the server's problem+json answer; it is chained as the cause of the
// typed error a call returns.
type ProblemError struct {
	// Problem is the decoded body.
	Problem memory.Problem
	// RetryAfter is the answer's Retry-After (a 429 rate_limited carries one); zero when
	// absent.
	RetryAfter time.Duration
}

var _ memory.ServerProblem = (*ProblemError)(nil)

// ServerProblem implements memory.ServerProblem.
func (e *ProblemError) ServerProblem() (memory.Problem, time.Duration) {
	return e.Problem, e.RetryAfter
}

// Error implements error.
func (e *ProblemError) Error() string {
	s := fmt.Sprintf("server answered %d %s", e.Problem.Status, e.Problem.Type)
	if e.Problem.Detail != "" {
		s += ": " + e.Problem.Detail
	}
	return s
}

// New connects to the server and fetches its manifest once. The manifest must decode
// strictly and validate; it is the Store's manifest for its whole lifetime.
func New(ctx context.Context, opts Options) (*Store, error) {
	base, err := url.Parse(strings.TrimRight(opts.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, memory.NewAdapterError("remote: base URL must be an absolute http(s) URL", nil)
	}
	if opts.Token != "" && opts.TokenSource != nil {
		return nil, memory.NewAdapterError("remote: Token and TokenSource exclude each other", nil)
	}
	s := &Store{base: base, token: opts.Token, tokens: opts.TokenSource, timeout: opts.Timeout, maxBody: opts.MaxResponseBytes, client: opts.HTTPClient}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if base.RawQuery == "" && base.Fragment == "" && !base.ForceQuery && base.RawPath == "" {
		u := *base
		u.Path = strings.TrimRight(base.Path, "/")
		s.prefix = u.String()
	}
	s.itemsURL, s.searchURL = s.target("/v1/items"), s.target("/v1/search")
	if s.tokens == nil {
		s.auth = newTokenAuth(s.token)
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxResponseBytes
	}
	if len(opts.CACert) > 0 && base.Scheme != "https" {
		// A CA with a plain URL would send the token in clear while the caller believes it
		// is protected: refused rather than silently downgraded.
		return nil, memory.NewAdapterError("remote: a CA certificate was given for a plain http URL", nil)
	}
	if s.client == nil {
		tr := NewTransport()
		if base.Scheme == "https" {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: opts.ServerName}
			if len(opts.CACert) > 0 {
				pool := x509.NewCertPool()
				if !pool.AppendCertsFromPEM(opts.CACert) {
					return nil, memory.NewAdapterError("remote: the CA certificate holds no PEM certificate", nil)
				}
				tr.TLSClientConfig.RootCAs = pool
			}
		}
		s.client = &http.Client{Transport: tr}
	}
	// A RoundTripper must not modify the request, but one given in Options might; those
	// get a copy of the headers per request, as before they were shared.
	switch s.client.Transport.(type) {
	case nil, *http.Transport, *caTransport:
		s.shareHeaders = true
	}
	m, err := s.FetchManifest(ctx)
	if err != nil {
		return nil, err
	}
	s.manifest = m
	return s, nil
}

// HTTPClient is the client the store speaks through, with its transport and trust, for a
// caller that checks the server's raw answers the way the store reaches it.
func (s *Store) HTTPClient() *http.Client { return s.client }

// Manifest returns the manifest fetched at construction.
func (s *Store) Manifest() memory.Manifest { return s.manifest }

// Close releases idle connections, and the binding directory of a Store from FromBinding.
// It is idempotent.
func (s *Store) Close() error {
	s.client.CloseIdleConnections()
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// FetchManifest reads GET /v1/manifest now, without changing the Store's own manifest; the
// conformance job uses it to compare the published manifest with the expected one.
func (s *Store) FetchManifest(ctx context.Context) (memory.Manifest, error) {
	var m memory.Manifest
	if err := s.do(ctx, http.MethodGet, "/v1/manifest", nil, http.StatusOK, &m); err != nil {
		return memory.Manifest{}, err
	}
	if err := m.Validate(); err != nil {
		return memory.Manifest{}, memory.NewAdapterError("remote: the server published an invalid manifest", err)
	}
	return m.Normalize(), nil
}

// Evidence reads GET /v1/evidence.
func (s *Store) Evidence(ctx context.Context) (memory.EvidenceReport, error) {
	var ev memory.EvidenceReport
	if err := s.do(ctx, http.MethodGet, "/v1/evidence", nil, http.StatusOK, &ev); err != nil {
		return memory.EvidenceReport{}, err
	}
	return ev, nil
}

// Store sends the item and returns its id, which must be the item's own.
func (s *Store) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	body, err := memory.MarshalItem(item)
	if err != nil {
		return uuid.Nil, memory.NewAdapterError("remote: store: the item cannot be encoded", err)
	}
	const path = "/v1/items"
	data, err := s.exchange(ctx, http.MethodPost, s.itemsURL, path, body, http.StatusCreated)
	if err != nil {
		return uuid.Nil, err
	}
	defer putBuffer(data)
	id, ok := storeAnswerID(*data)
	if !ok {
		var res storeAnswer
		if err := res.UnmarshalJSON(*data); err != nil {
			return uuid.Nil, malformed(http.MethodPost, path, err)
		}
		if res.ID == nil {
			return uuid.Nil, memory.NewAdapterError("remote: store: the response has no id", nil)
		}
		if id, err = memory.ParseID(*res.ID); err != nil {
			return uuid.Nil, memory.NewAdapterError("remote: store: the response id is not a UUID", err)
		}
	}
	if id != item.ID {
		return uuid.Nil, memory.NewAdapterError("remote: store: the server acknowledged a different id", nil)
	}
	return id, nil
}

// Retrieve reads one item; a 404 not_found is (nil, nil).
func (s *Store) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	// One string holds the URL, and the path is its tail: no id string of its own.
	var text [36]byte
	target := s.prefix + "/v1/items/" + string(memory.AppendID(text[:0], id))
	path := target[len(s.prefix):]
	if s.prefix == "" {
		target = s.target(path)
	}
	data, err := s.exchange(ctx, http.MethodGet, target, path, nil, http.StatusOK)
	if err != nil {
		if pe := problemOf(err); pe != nil && pe.Problem.Type == memory.ProblemNotFound && pe.Problem.Status == http.StatusNotFound {
			return nil, nil
		}
		return nil, err
	}
	defer putBuffer(data)
	it := new(memory.Item)
	if err := it.UnmarshalJSON(*data); err != nil {
		return nil, malformed(http.MethodGet, path, err)
	}
	if it.ID != id {
		return nil, memory.NewAdapterError("remote: retrieve: the server returned an item with a different id", nil)
	}
	return it, nil
}

// problemOf is the server's problem answer err carries, or nil.
func problemOf(err error) *ProblemError {
	var pe *ProblemError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// Search checks the query against the manifest locally, then asks the server.
func (s *Store) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	if err := memory.CheckQuery(s.manifest, q); err != nil {
		return nil, err
	}
	if q.Limit == 0 {
		return []memory.Item{}, nil
	}
	// Query.MarshalJSON's output is json.Marshal's (compact, HTML-escaped), so json.Marshal
	// would only copy it once more.
	body, err := q.MarshalJSON()
	if err != nil {
		return nil, memory.NewAdapterError("remote: search: the query cannot be encoded", err)
	}
	const path = "/v1/search"
	data, err := s.exchange(ctx, http.MethodPost, s.searchURL, path, body, http.StatusOK)
	if err != nil {
		return nil, err
	}
	defer putBuffer(data)
	items, ok := searchItems(*data)
	if !ok {
		var res searchFields
		if err := decodeFields(*data, &res); err != nil {
			return nil, malformed(http.MethodPost, path, err)
		}
		if res.Items == nil {
			return nil, memory.NewAdapterError("remote: search: the response has no items", nil)
		}
		items = *res.Items
	}
	if len(items) > q.Limit {
		return nil, memory.NewAdapterError(fmt.Sprintf("remote: search: the server returned %d items for limit %d", len(items), q.Limit), nil)
	}
	return items, nil
}

// malformed is the error of an answer with the expected status whose body does not decode.
func malformed(method, path string, err error) error {
	return memory.NewAdapterError(fmt.Sprintf("remote: %s %s: malformed response", method, path), err)
}

// target is the request URL of path.
func (s *Store) target(path string) string {
	// Every path this client sends is letters, digits, '/' and '-', which url.URL writes
	// unescaped, so the prefix and the path concatenate to the same URL.
	if s.prefix != "" {
		return s.prefix + path
	}
	u := *s.base
	u.Path = strings.TrimRight(s.base.Path, "/") + path
	return u.String()
}

// do performs one call (exchange) and decodes the body into out strictly.
func (s *Store) do(ctx context.Context, method, path string, body []byte, want int, out any) error {
	data, err := s.exchange(ctx, method, s.target(path), path, body, want)
	if err != nil {
		return err
	}
	defer putBuffer(data)
	if err := decodeStrict(*data, out); err != nil {
		return malformed(method, path, err)
	}
	return nil
}

// exchange performs one call to target (path is its path, for errors) and returns the body
// of an answer with status want in a pooled buffer, which the caller gives back with
// putBuffer once it has decoded it: every decoder here copies what it keeps (encoding/json's
// contract for UnmarshalJSON). A call is sent again only on a new connection while nothing of
// it was written (DoUnsentRetry) and, with a TokenSource, once after a 401 unauthorized when
// the source then gives another token: the server's token check runs before any route
// (internal/server), so a 401 says the call was not acted on and sending it again, a store
// included, cannot duplicate anything. It repairs the window in which the server already
// refuses the token the source gave (a rotation's grace period over, or the source's change
// detection blind to an in-place rewrite) while the new one is on disk.
func (s *Store) exchange(ctx context.Context, method, target, path string, body []byte, want int) (*[]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	auth, err := s.authorization(false)
	if err != nil {
		return nil, err
	}
	data, err := s.send(ctx, method, target, path, body, want, auth)
	if s.tokens == nil || !unauthorized(err) {
		return data, err
	}
	again, rerr := s.authorization(true)
	if rerr != nil || again.token == auth.token {
		// The same token would be refused again: the first answer is the call's.
		return nil, err
	}
	return s.send(ctx, method, target, path, body, want, again)
}

// noToken is the headers of a TokenSource's empty token.
var noToken = newTokenAuth("")

// authorization is the request headers for the next request's token; reload asks a
// TokenReloader to read its token afresh.
func (s *Store) authorization(reload bool) (*tokenAuth, error) {
	if s.tokens == nil {
		return s.auth, nil
	}
	var tok string
	var err error
	if r, ok := s.tokens.(TokenReloader); ok && reload {
		tok, err = r.ReloadToken()
	} else {
		tok, err = s.tokens.Token()
	}
	if err != nil {
		return nil, memory.NewAdapterError("remote: the token source failed", err)
	}
	if tok == "" {
		return noToken, nil
	}
	// The headers of an unchanged token are reused: a call allocates nothing for them.
	if last := s.lastAuth.Load(); last != nil && last.token == tok {
		return last, nil
	}
	a := newTokenAuth(tok)
	s.lastAuth.Store(a)
	return a, nil
}

// unauthorized reports whether err is the adapter server's own 401 unauthorized (a problem
// document), not a proxy's.
func unauthorized(err error) bool {
	var pe *ProblemError
	return errors.As(err, &pe) && pe.Problem.Type == memory.ProblemUnauthorized && pe.Problem.Status == http.StatusUnauthorized
}

// send performs one request to target with auth's headers and returns the body as exchange
// does.
func (s *Store) send(ctx context.Context, method, target, path string, body []byte, want int, auth *tokenAuth) (*[]byte, error) {
	header := auth.get
	if body != nil {
		header = auth.post
	}
	resp, err := DoUnsentRetry(ctx, s.client, func(ctx context.Context) (*http.Request, error) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, target, rd)
		if err != nil {
			return nil, memory.NewAdapterError("remote: building the request", err)
		}
		req.Header = header
		if traced := trace.SpanContextFromContext(ctx).IsValid(); traced || !s.shareHeaders {
			// A trace context is the request's own: the shared headers are copied first.
			req.Header = header.Clone()
			if traced {
				injectTraceContext(ctx, req.Header)
			}
		}
		return req, nil
	})
	if err != nil {
		if isAdapterError(err) {
			return nil, err
		}
		return nil, memory.NewUnavailable(fmt.Sprintf("remote: %s %s", method, path), stripURL(err))
	}
	defer func() { _ = resp.Body.Close() }()
	data := getBuffer(resp.ContentLength, s.maxBody)
	*data, err = readLimited(*data, resp.Body, s.maxBody)
	if err != nil {
		putBuffer(data)
		return nil, memory.NewUnavailable(fmt.Sprintf("remote: %s %s: reading the response", method, path), stripURL(err))
	}
	if int64(len(*data)) > s.maxBody {
		putBuffer(data)
		return nil, memory.NewAdapterError(fmt.Sprintf("remote: %s %s: response over %d bytes", method, path, s.maxBody), nil)
	}
	if resp.StatusCode != want {
		defer putBuffer(data)
		if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "application/problem+json" {
			// No problem body: not the adapter server. A pooled connection that reached the
			// wrong peer (a gateway that answered while a Service had no route, say) would
			// keep reaching it; the next call dials afresh. The body is read, so closing it
			// first returns the connection to the pool, from which this evicts it.
			_ = resp.Body.Close()
			s.client.CloseIdleConnections()
		}
		return nil, mapProblem(method, path, resp, *data)
	}
	return data, nil
}

// isAdapterError reports whether err is a MemoryAdapterError, as the request builder's are.
func isAdapterError(err error) bool {
	var ae *memory.MemoryAdapterError
	return errors.As(err, &ae)
}

// readLimited appends r's bytes to dst up to its end or limit+1 bytes, whichever comes first,
// so that a body over limit shows as longer than limit; io.EOF is not an error.
func readLimited(dst []byte, r io.Reader, limit int64) ([]byte, error) {
	for int64(len(dst)) <= limit {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, max(bytes.MinRead, len(dst)))
		}
		room := dst[len(dst):min(int64(cap(dst)), limit+1)]
		n, err := r.Read(room)
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

var (
	acceptHeader    = []string{"application/json, application/problem+json"}
	jsonContentType = []string{"application/json"}
)

// stripURL drops the request URL from a transport error: it is noise in a typed error, and
// a URL may carry user info.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func mapProblem(method, path string, resp *http.Response, data []byte) error {
	op := fmt.Sprintf("remote: %s %s", method, path)
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var p memory.Problem
	if ct == "application/problem+json" && json.Unmarshal(data, &p) == nil && p.Type != "" {
		pe := &ProblemError{Problem: p, RetryAfter: memory.RetryAfterHeader(resp.Header.Get("Retry-After"))}
		switch p.Type {
		case memory.ProblemUnsupportedQuery:
			if len(p.RejectedKeys) == 0 {
				return memory.NewAdapterError(op+": unsupported_query without rejected_keys", pe)
			}
			return memory.NewUnsupportedQuery(p.RejectedKeys...)
		case memory.ProblemUnavailable:
			return memory.NewUnavailable(op, pe)
		default:
			return memory.NewAdapterError(op, pe)
		}
	}
	// No problem body: something between us and the server answered (a proxy, a load
	// balancer). A gateway failure means the service is unreachable.
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return memory.NewUnavailable(fmt.Sprintf("%s: HTTP %d without a problem body", op, resp.StatusCode), nil)
	}
	return memory.NewAdapterError(fmt.Sprintf("%s: unexpected HTTP %d (%s)", op, resp.StatusCode, describeBody(resp.Header.Get("Content-Type"), data)), nil)
}

// describeBody names what answered when it was not the adapter server: its content type and
// the start of its body, printable ASCII only and bounded, since the body is not trusted.
func describeBody(contentType string, data []byte) string {
	const max = 80
	var b strings.Builder
	for _, c := range data {
		if b.Len() >= max {
			b.WriteString("…")
			break
		}
		if c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
		} else {
			b.WriteByte('.')
		}
	}
	if contentType == "" {
		contentType = "no content type"
	}
	return fmt.Sprintf("%.64s: %q", contentType, b.String())
}

// searchFields is a search answer's envelope as encoding/json decodes it.
type searchFields struct {
	Items *[]memory.Item `json:"items"`
}

// searchAnswer decodes a search answer: the shape the server writes, {"items":[…]} with any
// whitespace, has its array decoded by memory.UnmarshalItems, which validates it once and
// decodes each item in one pass; anything else, and any error, takes the strict envelope
// decoder, which decides duplicate and unknown keys and gives the errors. When the array
// between that prefix and suffix is one valid JSON value, the body is exactly an object
// with the one member "items", so both paths give the same items.
type searchAnswer searchFields

// UnmarshalJSON implements json.Unmarshaler.
func (a *searchAnswer) UnmarshalJSON(data []byte) error {
	if items, ok := searchItems(data); ok {
		a.Items = &items
		return nil
	}
	return decodeFields(data, (*searchFields)(a))
}

// searchItems is searchAnswer's direct path: the items of an answer of the server's shape,
// or false for the strict envelope decoder to decide.
func searchItems(data []byte) ([]memory.Item, bool) {
	if arr, ok := itemsArray(data); ok {
		if items, err := memory.UnmarshalItems(arr); err == nil {
			return items, true
		}
	}
	return nil, false
}

// itemsArray returns the text between `{"items":` and `}`, whitespace allowed around each
// token, when it starts an array.
func itemsArray(data []byte) ([]byte, bool) {
	const ws = " \t\r\n"
	rest, ok := bytes.CutSuffix(bytes.TrimRight(data, ws), []byte("}"))
	for _, tok := range []string{"{", `"items"`, ":"} {
		if !ok {
			return nil, false
		}
		rest, ok = bytes.CutPrefix(bytes.TrimLeft(rest, ws), []byte(tok))
	}
	rest = bytes.TrimLeft(rest, ws)
	return rest, ok && len(rest) > 0 && rest[0] == '['
}

// storeFields is a store answer as encoding/json decodes it.
type storeFields struct {
	ID *string `json:"id"`
}

// storeAnswer decodes a store answer: exactly {"id":"…"} with 36 hex digits and dashes
// between the quotes, as the server writes it, is read directly; anything else takes the
// strict decoder.
type storeAnswer storeFields

// UnmarshalJSON implements json.Unmarshaler.
func (a *storeAnswer) UnmarshalJSON(data []byte) error {
	const prefix, suffix, idLen = `{"id":"`, `"}`, 36
	if len(data) == len(prefix)+idLen+len(suffix) && string(data[:len(prefix)]) == prefix && string(data[len(data)-len(suffix):]) == suffix {
		id := data[len(prefix) : len(prefix)+idLen]
		plain := true
		for _, c := range id {
			plain = plain && (c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')
		}
		if plain {
			s := string(id)
			a.ID = &s
			return nil
		}
	}
	return decodeFields(data, (*storeFields)(a))
}

// bodies recycles response buffers; one over maxPooled is left to the collector, so a rare
// large answer does not stay pinned in the pool.
var bodies = sync.Pool{New: func() any { return new([]byte) }}

const maxPooled = 1 << 20

// getBuffer returns an empty pooled buffer with room for a body of the announced length
// (when known and within the bound).
func getBuffer(length, limit int64) *[]byte {
	buf := bodies.Get().(*[]byte)
	*buf = (*buf)[:0]
	if length > 0 && length <= limit {
		// The final read wants room past the body to see its end; an announcement is not
		// yet bytes received, so what it reserves is bounded.
		*buf = slices.Grow(*buf, int(min(length, maxPooled))+bytes.MinRead)
	}
	return buf
}

func putBuffer(buf *[]byte) {
	if cap(*buf) <= maxPooled {
		bodies.Put(buf)
	}
}

// storeAnswerID reads a store answer of exactly the server's shape, {"id":"<canonical
// UUID>"}; false leaves anything else to storeAnswer's strict decoder, which gives the same
// id for what this accepts.
func storeAnswerID(data []byte) (uuid.UUID, bool) {
	const prefix, suffix, idLen = `{"id":"`, `"}`, 36
	if len(data) != len(prefix)+idLen+len(suffix) || string(data[:len(prefix)]) != prefix || string(data[len(data)-len(suffix):]) != suffix {
		return uuid.Nil, false
	}
	id, err := uuid.ParseBytes(data[len(prefix) : len(prefix)+idLen])
	return id, err == nil
}

func decodeStrict(data []byte, v any) error {
	// A type with its own strict decoder (memory.Item) checks unknown fields and trailing
	// data itself; a json.Decoder around it would only scan the body twice more first.
	if u, ok := v.(json.Unmarshaler); ok {
		return u.UnmarshalJSON(data)
	}
	return decodeFields(data, v)
}

// decodeFields is encoding/json's strict decoding: unknown fields and trailing data refused.
func decodeFields(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the value")
	}
	return nil
}
