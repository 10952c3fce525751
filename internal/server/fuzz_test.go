package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// documented lists the statuses each route may answer with, from the OpenAPI document.
var documented = map[string]map[int]memory.ProblemType{
	"/v1/items": {201: "", 400: memory.ProblemInvalidRequest, 413: memory.ProblemPayloadTooLarge, 415: memory.ProblemUnsupportedMediaType,
		502: memory.ProblemAdapterError, 503: memory.ProblemUnavailable},
	"/v1/search": {200: "", 400: memory.ProblemInvalidRequest, 413: memory.ProblemPayloadTooLarge, 415: memory.ProblemUnsupportedMediaType,
		422: memory.ProblemUnsupportedQuery, 502: memory.ProblemAdapterError, 503: memory.ProblemUnavailable},
}

func fuzzServer(f *testing.F) http.Handler {
	s, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{}), MaxBodyBytes: 8 << 10})
	if err != nil {
		f.Fatal(err)
	}
	return s.Handler()
}

// fuzzRoute posts body as application/json (so that the decoder, not the media type check, is
// what gets fuzzed) and checks that the answer is documented: never a 500, a problem body
// whose type matches the status, and a successful store returns the decoded item's id.
func fuzzRoute(t *testing.T, h http.Handler, path string, body []byte) {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	want, ok := documented[path][rec.Code]
	if !ok {
		t.Fatalf("undocumented status %d for %q: %s", rec.Code, body, rec.Body.Bytes())
	}
	if want != "" {
		var p memory.Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Type != want || p.Status != rec.Code {
			t.Fatalf("status %d with problem %s (%v)", rec.Code, rec.Body.Bytes(), err)
		}
		return
	}
	switch path {
	case "/v1/items":
		it, err := server.DecodeItem(body)
		if err != nil {
			t.Fatalf("stored a body DecodeItem rejects: %v", err)
		}
		var res struct{ ID string }
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || res.ID != it.ID.String() {
			t.Fatalf("store answered %s for item %s", rec.Body.Bytes(), it.ID)
		}
	case "/v1/search":
		q, err := server.DecodeQuery(body)
		if err != nil {
			t.Fatalf("searched with a body DecodeQuery rejects: %v", err)
		}
		var res struct{ Items []json.RawMessage }
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || len(res.Items) > q.Limit {
			t.Fatalf("search answered %s for limit %d (%v)", rec.Body.Bytes(), q.Limit, err)
		}
	}
}

func FuzzStoreRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f","created_at":1700000000.123456,"metadata":{"k":[1,{"a":null}]},"content":{"n":1e400},"tags":["a","a"]}`,
		`{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f","created_at":"1"}`,
		`{"id":"00000000-0000-0000-0000-000000000000","created_at":-1e3}`,
		`{"id":1}`, `null`, `[]`, `{`, ``, `{"id":"x","created_at":1,"extra":true}`,
	} {
		f.Add([]byte(s))
	}
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) { fuzzRoute(t, h, "/v1/items", body) })
}

func FuzzSearchRequest(f *testing.F) {
	for _, s := range []string{
		`{"text":"a","tags":["x"],"filters":{"branch_id":"b","zz":1},"limit":5}`,
		`{"limit":-3}`, `{"limit":1e3}`, `{"limit":99999999999999999999}`, `{"limit":"2"}`,
		`{"text":null,"tags":null,"filters":null}`, `{}`, `"x"`, `{"filters":{"":1}}`,
	} {
		f.Add([]byte(s))
	}
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) { fuzzRoute(t, h, "/v1/search", body) })
}
