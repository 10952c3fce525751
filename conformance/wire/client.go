package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// DefaultTimeout bounds one request of the raw client and of the harness-protocol client.
const DefaultTimeout = 30 * time.Second

// MaxResponseBytes bounds a response body: a search page of 100 of the contract's largest
// items fits, a hostile endless body does not.
const MaxResponseBytes = 128 << 20

// endpoint is one HTTP base URL with its token.
type endpoint struct {
	base    *url.URL
	token   string
	client  *http.Client
	timeout time.Duration
}

func newEndpoint(raw, token string, client *http.Client, timeout time.Duration) (*endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("wire: %q is not an http(s) URL", truncate(raw, 200))
	}
	if u.User != nil {
		return nil, errors.New("wire: the URL must not carry credentials; use a token file")
	}
	if client == nil {
		client = &http.Client{}
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &endpoint{base: u, token: token, client: client, timeout: timeout}, nil
}

// wrongToken is sent by the authentication case; a server that accepts it checks nothing.
var wrongToken = "conformance-wrong-token-" + uuid.NewString()

// do sends one request and returns status, media type and the bounded body. A transport
// failure is MemoryAdapterUnavailable.
func (e *endpoint) do(ctx context.Context, method, path string, body []byte, auth string) (int, string, []byte, error) {
	status, mt, data, _, err := e.doHeader(ctx, method, path, body, auth)
	return status, mt, data, err
}

// doHeader is do that also returns the answer's headers.
func (e *endpoint) doHeader(ctx context.Context, method, path string, body []byte, auth string) (int, string, []byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	u := *e.base
	u.Path = strings.TrimRight(e.base.Path, "/") + path
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return 0, "", nil, nil, memory.NewAdapterError("wire: building the request", err)
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch auth {
	case "none":
	case "wrong":
		req.Header.Set("Authorization", "Bearer "+wrongToken)
	default:
		if e.token != "" {
			req.Header.Set("Authorization", "Bearer "+e.token)
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, "", nil, nil, memory.NewUnavailable(fmt.Sprintf("wire: %s %s", method, path), stripURL(err))
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return 0, "", nil, nil, memory.NewUnavailable(fmt.Sprintf("wire: %s %s: reading the response", method, path), stripURL(err))
	}
	if len(data) > MaxResponseBytes {
		return 0, "", nil, nil, memory.NewAdapterError(fmt.Sprintf("wire: %s %s: response over %d bytes", method, path, MaxResponseBytes), nil)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return resp.StatusCode, mt, data, resp.Header, nil
}

// stripURL drops the request URL from a transport error; a URL may carry user info.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Store is the raw client of one target's data wire. It implements memory.ExternalStore
// without any rule of its own (see the package documentation). Create it with
// Harness.MakeStore.
type Store struct {
	ep *endpoint
	h  *Harness

	mu         sync.Mutex
	lastStatus int
	lastType   memory.ProblemType
}

// LastAnswer is the status and problem type (empty for a body that is not a problem) of the
// server's answer to this store's last store, retrieve or search, so the suite can judge the
// status the OpenAPI document fixes and not only the error derived from it.
func (s *Store) LastAnswer() (int, memory.ProblemType) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastStatus, s.lastType
}

func (s *Store) remember(status int, mt string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastStatus, s.lastType = status, problemType(mt, data)
}

// Manifest reads GET /v1/manifest now. The interface has no error: a failed or undecodable
// read returns the zero manifest, which equals no valid one, so the structural-surface and
// manifest-stable cases report it.
func (s *Store) Manifest() memory.Manifest {
	ctx, cancel := context.WithTimeout(context.Background(), s.ep.timeout)
	defer cancel()
	m, err := s.h.fetchManifest(ctx)
	if err != nil {
		return memory.Manifest{}
	}
	return m
}

// Store posts the item and returns the id the server answered; a success without a usable
// id is (uuid.Nil, nil), exactly what the server said.
func (s *Store) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	body, err := json.Marshal(item)
	if err != nil {
		return uuid.Nil, memory.NewAdapterError("wire: store: the item cannot be encoded", err)
	}
	status, mt, data, header, err := s.ep.doHeader(ctx, http.MethodPost, "/v1/items", body, "token")
	if err != nil {
		return uuid.Nil, err
	}
	s.remember(status, mt, data)
	if status/100 != 2 {
		return uuid.Nil, problemError("POST /v1/items", status, mt, data, header.Get("Retry-After"))
	}
	return ackedID(data), nil
}

// ackedID is the id a store acknowledgement names, or uuid.Nil when it names no usable one:
// the raw client reports what the server said and leaves judging it to the cases.
func ackedID(data []byte) uuid.UUID {
	var res struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(data, &res) != nil {
		return uuid.Nil
	}
	id, err := uuid.Parse(res.ID)
	if err != nil {
		return uuid.Nil
	}
	return id
}

// Retrieve reads one item; 404 not_found is (nil, nil). The item is returned as the server
// sent it, whatever its id.
func (s *Store) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	path := "/v1/items/" + id.String()
	status, mt, data, err := s.ep.do(ctx, http.MethodGet, path, nil, "token")
	if err != nil {
		return nil, err
	}
	s.remember(status, mt, data)
	if status == http.StatusNotFound && problemType(mt, data) == memory.ProblemNotFound {
		return nil, nil
	}
	if status != http.StatusOK {
		return nil, problemError("GET "+path, status, mt, data, "")
	}
	var it memory.Item
	if err := json.Unmarshal(data, &it); err != nil {
		return nil, memory.NewAdapterError("wire: GET "+path+": the server answered a malformed item", err)
	}
	return &it, nil
}

// Search posts the query as it is (limit 0 and negative limits included) and returns the
// server's items as they are (however many).
func (s *Store) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	body, err := json.Marshal(q)
	if err != nil {
		return nil, memory.NewAdapterError("wire: search: the query cannot be encoded", err)
	}
	status, mt, data, err := s.ep.do(ctx, http.MethodPost, "/v1/search", body, "token")
	if err != nil {
		return nil, err
	}
	s.remember(status, mt, data)
	if status != http.StatusOK {
		return nil, problemError("POST /v1/search", status, mt, data, "")
	}
	var res struct {
		Items []memory.Item `json:"items"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, memory.NewAdapterError("wire: POST /v1/search: the server answered a malformed page", err)
	}
	if res.Items == nil {
		return nil, memory.NewAdapterError("wire: POST /v1/search: the page has no items", nil)
	}
	return res.Items, nil
}

// Close releases idle connections.
func (s *Store) Close() error {
	s.ep.client.CloseIdleConnections()
	return nil
}

func problemType(mt string, data []byte) memory.ProblemType {
	if mt != "application/problem+json" {
		return ""
	}
	var p memory.Problem
	if json.Unmarshal(data, &p) != nil {
		return ""
	}
	return p.Type
}

// problemError maps the server's answer to the contract's errors by problem type, keeping
// rejected_keys exactly as the server sent them; without a problem body 503 is unavailable
// and anything else an adapter error.
func problemError(op string, status int, mt string, data []byte, retryAfter string) error {
	var p memory.Problem
	if mt == "application/problem+json" && json.Unmarshal(data, &p) == nil && p.Type != "" {
		msg := fmt.Sprintf("wire: %s: server answered %d %s", op, status, p.Type)
		if p.Detail != "" {
			msg += ": " + truncate(p.Detail, 512)
		}
		// The problem rides along as the cause, with the status the server really sent (the
		// body's status field is the server's word, not the answer's).
		p.Status = status
		cause := &answeredProblem{p: p, retryAfter: memory.RetryAfterHeader(retryAfter)}
		switch p.Type {
		case memory.ProblemUnsupportedQuery:
			return &memory.UnsupportedMemoryQuery{RejectedKeys: p.RejectedKeys}
		case memory.ProblemUnavailable:
			return memory.NewUnavailable(msg, cause)
		default:
			return memory.NewAdapterError(msg, cause)
		}
	}
	if status == http.StatusServiceUnavailable {
		return memory.NewUnavailable(fmt.Sprintf("wire: %s: HTTP 503 without a problem body", op), nil)
	}
	return memory.NewAdapterError(fmt.Sprintf("wire: %s: HTTP %d without a problem body", op, status), nil)
}

// answeredProblem is the memory.ServerProblem a raw client chains under its typed errors.
type answeredProblem struct {
	p          memory.Problem
	retryAfter time.Duration
}

func (a *answeredProblem) Error() string {
	return fmt.Sprintf("server answered %d %s", a.p.Status, a.p.Type)
}

// ServerProblem implements memory.ServerProblem.
func (a *answeredProblem) ServerProblem() (memory.Problem, time.Duration) { return a.p, a.retryAfter }
