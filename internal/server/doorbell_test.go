package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/onsi/gomega"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// recordingDoorbell records each ring with the evidence in force when it rang.
type recordingDoorbell struct {
	srv   func() *server.Server
	mu    sync.Mutex
	rings []bool // ManifestValid at each ring
}

func (d *recordingDoorbell) Ring(ctx context.Context) error {
	ev := d.srv().Refresh(ctx, false)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rings = append(d.rings, ev.ManifestValid)
	return nil
}

func (d *recordingDoorbell) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.rings)
}

// outageStore fails every call with MemoryAdapterUnavailable while down is set, as a backend
// that stopped does.
type outageStore struct {
	memory.ExternalStore
	down atomic.Bool
}

func (o *outageStore) Store(ctx context.Context, it memory.Item) (uuid.UUID, error) {
	if o.down.Load() {
		return uuid.Nil, memory.NewUnavailable("connection refused", nil)
	}
	return o.ExternalStore.Store(ctx, it)
}

// waitFor polls cond until it holds or within passes, and returns how long it took.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	gomega.NewWithT(t).Eventually(cond).WithTimeout(within).WithPolling(5*time.Millisecond).Should(gomega.BeTrue(), what)
	return time.Since(start)
}

// TestDoorbellRingsOnEveryVerdictChangeAndNotOtherwise runs a server with a probe period far
// beyond the test: a failing call alone must make it probe, the recovery probe alone must see
// the backend return, and each change must ring the doorbell once.
func TestDoorbellRingsOnEveryVerdictChangeAndNotOtherwise(t *testing.T) {
	prober := &fakeProber{}
	prober.set(memory.Evidence{ServiceVersion: "1.0", Probes: []memory.ProbeResult{{Name: "write", OK: true}}}, nil)
	backend := &outageStore{ExternalStore: inmemory.New(inmemory.Options{})}
	var srv *server.Server
	bell := &recordingDoorbell{srv: func() *server.Server { return srv }}
	srv, err := server.New(server.Config{Store: backend, Prober: prober, AdapterVersion: "test-1", Token: []byte("t0k3n-abcdefghijklmnop"),
		Doorbell: bell, EvidenceTTL: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	base := serveInBackground(t, srv)
	store := func() int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/items",
			strings.NewReader(`{"id":"`+uuid.NewString()+`","content":"x","created_at":1,"metadata":{},"tags":[]}`))
		req.Header.Set("Authorization", "Bearer t0k3n-abcdefghijklmnop")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}

	waitFor(t, "the first evidence rings (a new instance announces itself)", 5*time.Second, func() bool { return bell.count() == 1 })
	if code := store(); code != http.StatusCreated {
		t.Fatalf("store before the outage: HTTP %d", code)
	}

	// The backend stops: the next call fails, and that failure, not the hour-long period,
	// makes the server probe, find the manifest invalidated, and ring.
	backend.down.Store(true)
	prober.set(memory.Evidence{}, memory.NewUnavailable("connection refused", nil))
	if code := store(); code != http.StatusServiceUnavailable {
		t.Fatalf("store during the outage: HTTP %d, want 503", code)
	}
	took := waitFor(t, "the outage rings", 5*time.Second, func() bool { return bell.count() == 2 })
	t.Logf("outage rang %s after the first failed call", took)
	if ev := srv.Refresh(t.Context(), false); ev.ManifestValid {
		t.Fatalf("evidence after the failed call still valid: %+v", ev)
	}

	// The backend returns: no call reaches it while the manifest is invalidated, so the
	// recovery probe (every RecoveryProbePeriod) must see it.
	backend.down.Store(false)
	prober.set(memory.Evidence{ServiceVersion: "1.0", Probes: []memory.ProbeResult{{Name: "write", OK: true}}}, nil)
	took = waitFor(t, "the recovery rings", server.RecoveryProbePeriod+5*time.Second, func() bool { return bell.count() == 3 })
	t.Logf("recovery rang %s after the backend returned", took)
	if code := store(); code != http.StatusCreated {
		t.Fatalf("store after the recovery: HTTP %d", code)
	}

	// Probes that find the same verdict ring nothing; a new service version does.
	for range 3 {
		srv.Refresh(t.Context(), true)
	}
	prober.set(memory.Evidence{ServiceVersion: "1.1", Probes: []memory.ProbeResult{{Name: "write", OK: true}}}, nil)
	srv.Refresh(t.Context(), true)
	waitFor(t, "the version change rings", 5*time.Second, func() bool { return bell.count() >= 4 })
	bell.mu.Lock()
	defer bell.mu.Unlock()
	if want := []bool{true, false, true, false}; !slices.Equal(bell.rings, want) {
		// The new version invalidates (ServiceVersionChanged); a ring for the steady probes
		// would have come before it and made five.
		t.Fatalf("rings %v, want %v", bell.rings, want)
	}
}

func TestHTTPDoorbell(t *testing.T) {
	var got atomic.Int64
	status := atomic.Int64{}
	status.Store(http.StatusAccepted)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/doorbell/ns/a" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		got.Add(1)
		if status.Load() == http.StatusFound {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer hs.Close()
	d, err := server.NewHTTPDoorbell(hs.URL + "/v1/doorbell/ns/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Ring(t.Context()); err != nil || got.Load() != 1 {
		t.Fatalf("ring: %v after %d requests", err, got.Load())
	}
	for _, code := range []int{http.StatusTooManyRequests, http.StatusFound, http.StatusInternalServerError} {
		status.Store(int64(code))
		if err := d.Ring(t.Context()); err == nil {
			t.Errorf("HTTP %d answered a ring and Ring reported success", code)
		}
	}
	for _, bad := range []string{"", "ftp://x/y", "http://", "http://user:pw@host/x", "http://host/x?q=1", "://"} {
		if _, err := server.NewHTTPDoorbell(bad); err == nil {
			t.Errorf("doorbell URL %q accepted", bad)
		}
	}
	if _, err := server.NewHTTPDoorbell("http://127.0.0.1:1/v1/doorbell/ns/a"); err != nil {
		t.Fatal(err)
	}
	refused, _ := server.NewHTTPDoorbell("http://127.0.0.1:1/v1/doorbell/ns/a")
	if err := refused.Ring(t.Context()); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("a refused ring reported %v", err)
	}
}
