package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestMetricsPortAndEvidenceSeries: the metrics handler serves /metrics and nothing else (no
// data route is reachable on the metrics port), and the evidence series follow the probes: the
// timestamp of the last evidence, and a failure count that rises with each failed probe only.
func TestMetricsPortAndEvidenceSeries(t *testing.T) {
	p := &fakeProber{}
	p.set(memory.Evidence{ServiceVersion: "15.8"}, nil)
	f := newFixture(t, fixtureOpts{prober: p, token: "tok"})
	ms := httptest.NewServer(f.srv.MetricsHandler())
	t.Cleanup(ms.Close)

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(ms.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/metrics")
	if code != 200 || !strings.Contains(body, "memory_adapter_evidence_timestamp_seconds") || !strings.Contains(body, "memory_adapter_probe_failures_total 0") {
		t.Fatalf("GET /metrics on the metrics port: %d\n%s", code, body)
	}
	for _, path := range []string{"/v1/manifest", "/v1/items/x", "/healthz", "/"} {
		if code, body := get(path); code != 404 || !strings.Contains(body, string(memory.ProblemNotFound)) {
			t.Errorf("GET %s on the metrics port: %d %s, want 404 not_found", path, code, body)
		}
	}
	resp, err := http.Post(ms.URL+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Error("POST /metrics answered 200")
	}

	stamp := func() float64 {
		t.Helper()
		v, err := testutil.GatherAndCount(f.srv.Registry(), "memory_adapter_evidence_timestamp_seconds")
		if err != nil || v != 1 {
			t.Fatalf("evidence timestamp series: %d, %v", v, err)
		}
		mfs, _ := f.srv.Registry().Gather()
		for _, mf := range mfs {
			if mf.GetName() == "memory_adapter_evidence_timestamp_seconds" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return 0
	}
	first := stamp()
	if age := float64(time.Now().UnixNano())/1e9 - first; first == 0 || age < 0 || age > 60 {
		t.Fatalf("evidence timestamp %v is not the last probe's time (age %vs)", first, age)
	}
	failures := func() float64 {
		t.Helper()
		mfs, err := f.srv.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "memory_adapter_probe_failures_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatal("no memory_adapter_probe_failures_total")
		return 0
	}
	p.set(memory.Evidence{}, errors.New("connection refused"))
	f.srv.Refresh(context.Background(), true)
	f.srv.Refresh(context.Background(), true)
	if got := failures(); got != 2 {
		t.Errorf("two failed probes counted %v", got)
	}
	// A failed probe is evidence too: refreshed until the clock has moved past the first
	// stamp (a deadline, not a fixed sleep), the timestamp follows it.
	moved := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		f.srv.Refresh(context.Background(), true)
		if stamp() > first {
			moved = true
			break
		}
	}
	if !moved {
		t.Error("a failed probe is evidence too: the timestamp did not move")
	}
	if got := failures(); got < 3 {
		t.Errorf("failed probes counted %v, want every refresh's", got)
	}
	before := failures()
	p.set(memory.Evidence{ServiceVersion: "15.8"}, nil)
	f.srv.Refresh(context.Background(), true)
	if got := failures(); got != before {
		t.Errorf("a successful probe changed the failure count from %v to %v", before, got)
	}
}
