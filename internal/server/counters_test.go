package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestRequestCountsByRouteMethodAndCode: every request is counted under its route, method
// and status, however many times a route's counter was resolved before, and a media type
// with parameters is still JSON.
func TestRequestCountsByRouteMethodAndCode(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: "tok"})
	it := memory.NewItem(json.RawMessage(`{"a":1}`), "x")
	for range 3 {
		if r := f.do("POST", "/v1/items", itemJSON(t, it), false, nil); r.status != 201 {
			t.Fatalf("store: %d %s", r.status, r.body)
		}
	}
	for range 2 {
		if r := f.do("POST", "/v1/items", itemJSON(t, it), true, map[string]string{"Content-Type": "application/json; charset=utf-8"}); r.status != 201 {
			t.Fatalf("store with charset: %d %s", r.status, r.body)
		}
	}
	if r := f.do("POST", "/v1/items", "{", true, nil); r.status != 400 {
		t.Fatalf("malformed store: %d", r.status)
	}
	if r := f.do("POST", "/v1/items", itemJSON(t, it), true, map[string]string{"Content-Type": "text/plain"}); r.status != 415 {
		t.Fatalf("text/plain store: %d", r.status)
	}
	if r := f.do("GET", "/v1/items/"+it.ID.String(), "", false, nil); r.status != 200 {
		t.Fatalf("retrieve: %d", r.status)
	}
	out, err := testutil.CollectAndLint(f.srv.Registry(), "memory_adapter_requests_total")
	if err != nil || len(out) != 0 {
		t.Fatalf("lint: %v %v", err, out)
	}
	want := `
# HELP memory_adapter_requests_total HTTP requests by route (OpenAPI operation id), method and status code.
# TYPE memory_adapter_requests_total counter
memory_adapter_requests_total{code="200",method="GET",route="retrieveItem"} 1
memory_adapter_requests_total{code="201",method="POST",route="storeItem"} 5
memory_adapter_requests_total{code="400",method="POST",route="storeItem"} 1
memory_adapter_requests_total{code="415",method="POST",route="storeItem"} 1
`
	if err := testutil.CollectAndCompare(f.srv.Registry(), strings.NewReader(want), "memory_adapter_requests_total"); err != nil {
		t.Fatal(err)
	}
}
