package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

var defineFormats sync.Once

// Load parses and validates the embedded OpenAPI document. The "uuid" string format is
// defined as the server defines it: memory.ParseID's canonical 36-character form.
func Load() (*openapi3.T, routers.Router, error) {
	defineFormats.Do(func() {
		openapi3.DefineStringFormatValidator("uuid", openapi3.NewCallbackValidator(func(s string) error {
			_, err := memory.ParseID(s)
			return err
		}))
	})
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(memory.OpenAPI)
	if err != nil {
		return nil, nil, fmt.Errorf("load openapi: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, nil, fmt.Errorf("openapi document is invalid: %w", err)
	}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("openapi router: %w", err)
	}
	return doc, r, nil
}

type hostileKey struct{}

// Hostile marks a request as deliberately invalid: its request is not validated, but the
// server's answer still is.
func Hostile(ctx context.Context) context.Context {
	return context.WithValue(ctx, hostileKey{}, true)
}

// Transport is an http.RoundTripper that validates every request (unless marked Hostile)
// and every response against the document, reporting violations to T.
type Transport struct {
	// T receives violations as test errors.
	T testing.TB
	// Base performs the requests; nil means http.DefaultTransport.
	Base http.RoundTripper

	router routers.Router
}

// NewTransport loads the document and returns a validating transport; it fails t when the
// document does not load.
func NewTransport(t testing.TB, base http.RoundTripper) *Transport {
	t.Helper()
	_, r, err := Load()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return &Transport{T: t, Base: base, router: r}
}

// Client returns an http.Client using the transport.
func (tr *Transport) Client() *http.Client { return &http.Client{Transport: tr} }

// RoundTrip implements http.RoundTripper.
func (tr *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := tr.Base
	if base == nil {
		base = http.DefaultTransport
	}
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	hostile, _ := req.Context().Value(hostileKey{}).(bool)
	route, params, routeErr := tr.router.FindRoute(req)
	var in *openapi3filter.RequestValidationInput
	if routeErr == nil {
		vreq := req.Clone(req.Context())
		vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
		in = &openapi3filter.RequestValidationInput{
			Request: vreq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
		}
		if !hostile {
			if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
				tr.T.Errorf("request %s %s violates the OpenAPI document: %v", req.Method, req.URL.Path, err)
			}
		}
	} else if !hostile {
		tr.T.Errorf("request %s %s is not in the OpenAPI document: %v", req.Method, req.URL.Path, routeErr)
	}
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if verr := CheckResponse(in, resp, body); verr != nil {
		tr.T.Errorf("response %d to %s %s violates the OpenAPI document: %v", resp.StatusCode, req.Method, req.URL.Path, verr)
	}
	return resp, nil
}

// CheckResponse validates one response. in is nil for a route outside the document, whose
// answer must then be a not_found or method_not_allowed problem.
func CheckResponse(in *openapi3filter.RequestValidationInput, resp *http.Response, body []byte) error {
	if resp.StatusCode >= 500 && resp.StatusCode != http.StatusBadGateway && resp.StatusCode != http.StatusServiceUnavailable &&
		resp.StatusCode != http.StatusInsufficientStorage {
		return fmt.Errorf("status %d is never a documented answer", resp.StatusCode)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		if err := checkProblem(resp.StatusCode, body); err != nil {
			return err
		}
	}
	if in == nil {
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			return fmt.Errorf("a route outside the document answered %d", resp.StatusCode)
		}
		return checkProblem(resp.StatusCode, body)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	return openapi3filter.ValidateResponse(context.Background(), out)
}

var statusOf = map[memory.ProblemType]int{
	memory.ProblemInvalidRequest:       400,
	memory.ProblemUnauthorized:         401,
	memory.ProblemForbidden:            403,
	memory.ProblemNotFound:             404,
	memory.ProblemMethodNotAllowed:     405,
	memory.ProblemPayloadTooLarge:      413,
	memory.ProblemUnsupportedMediaType: 415,
	memory.ProblemUnsupportedQuery:     422,
	memory.ProblemAdapterError:         502,
	memory.ProblemUnavailable:          503,
	memory.ProblemQuotaExceeded:        507,
	memory.ProblemRateLimited:          429,
}

// checkProblem enforces what a schema cannot say: each type has exactly one status, the
// body repeats it, and rejected_keys is sorted and unique and only on unsupported_query.
func checkProblem(status int, body []byte) error {
	var p memory.Problem
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("problem body: %w", err)
	}
	want, ok := statusOf[p.Type]
	if !ok {
		return fmt.Errorf("unknown problem type %q", p.Type)
	}
	if want != status || p.Status != status {
		return fmt.Errorf("problem %q with HTTP %d and body status %d, want %d", p.Type, status, p.Status, want)
	}
	if p.Title == "" {
		return errors.New("problem without a title")
	}
	if p.Type == memory.ProblemUnsupportedQuery {
		if len(p.RejectedKeys) == 0 {
			return errors.New("unsupported_query without rejected_keys")
		}
		for i := 1; i < len(p.RejectedKeys); i++ {
			if p.RejectedKeys[i-1] >= p.RejectedKeys[i] {
				return fmt.Errorf("rejected_keys not sorted and unique: %q", p.RejectedKeys)
			}
		}
	} else if len(p.RejectedKeys) > 0 {
		return fmt.Errorf("rejected_keys on a %q problem", p.Type)
	}
	return nil
}
