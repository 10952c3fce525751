package health

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestRingReadsWithinRingSpacing tracks an adapter whose period is an hour: only rings can
// make the prober read it again, each within RingSpacing of the read before.
func TestRingReadsWithinRingSpacing(t *testing.T) {
	var mu sync.Mutex
	valid := true
	reader := &scriptedReader{answers: map[string]func() (*memory.EvidenceReport, error){
		"http://a": func() (*memory.EvidenceReport, error) {
			mu.Lock()
			defer mu.Unlock()
			return &memory.EvidenceReport{ServiceVersion: "1", AdapterVersion: "v1", ManifestValid: valid}, nil
		},
	}, reads: map[string][]time.Time{}, deadline: time.Second}
	p := &Prober{Reader: reader}
	startProber(t, p)
	ma := adapterNamed(0)
	p.Track(ma, specAt(ma, "http://a", time.Hour))
	<-p.Events() // the first read
	key := types.NamespacedName{Namespace: "ns", Name: "a0"}

	mu.Lock()
	valid = false
	mu.Unlock()
	rung := time.Now()
	if !p.Ring(key) {
		t.Fatal("Ring does not know a tracked adapter")
	}
	select {
	case e := <-p.Events():
		if e.Object.Name != "a0" {
			t.Fatalf("the ring woke %q", e.Object.Name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a ring did not lead to a read that woke the controller")
	}
	if took := time.Since(rung); took > RingSpacing+2*time.Second {
		t.Errorf("the ring's read came %s after it, want within about %s", took, RingSpacing)
	}
	reader.mu.Lock()
	reads := append([]time.Time(nil), reader.reads["http://a"]...)
	reader.mu.Unlock()
	if len(reads) != 2 || reads[1].Sub(reads[0]) < RingSpacing-50*time.Millisecond {
		t.Errorf("reads at %v: want two, at least %s apart", reads, RingSpacing)
	}

	// A burst of rings is one read, not one each.
	for range 20 {
		p.Ring(key)
	}
	waitFor(t, 10*time.Second, "the burst's read", func() bool { return reader.count("http://a") == 3 })
	if p.Ring(types.NamespacedName{Namespace: "ns", Name: "nobody"}) {
		t.Error("Ring knows an adapter nobody tracks")
	}
}

type ringRecorder struct {
	mu    sync.Mutex
	rings []types.NamespacedName
}

func (r *ringRecorder) Ring(key types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rings = append(r.rings, key)
	return key.Name != "unknown"
}

func TestDoorbellHandler(t *testing.T) {
	rec := &ringRecorder{}
	h := &DoorbellHandler{Prober: rec, Limit: rate.NewLimiter(0, 3)}
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{http.MethodPost, "/v1/doorbell/ns/adapter-1", http.StatusAccepted},
		// Unknown adapters are answered like known ones: the endpoint is no oracle.
		{http.MethodPost, "/v1/doorbell/ns/unknown", http.StatusAccepted},
		{http.MethodGet, "/v1/doorbell/ns/adapter-1", http.StatusMethodNotAllowed},
		{http.MethodPost, "/v1/doorbell/ns", http.StatusNotFound},
		{http.MethodPost, "/v1/doorbell/ns/a/b", http.StatusNotFound},
		{http.MethodPost, "/v1/doorbell/NS/a", http.StatusNotFound},
		{http.MethodPost, "/v1/doorbell/ns/" + strings.Repeat("a", 254), http.StatusNotFound},
		{http.MethodPost, "/v1/doorbell//a", http.StatusNotFound},
		{http.MethodPost, "/v1/doorbell/ns/adapter-2", http.StatusAccepted},
		// The burst of 3 is spent and the rate is 0: throttled, and the prober is not asked.
		{http.MethodPost, "/v1/doorbell/ns/adapter-3", http.StatusTooManyRequests},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequestWithContext(context.Background(), tc.method, tc.path, nil))
		if w.Code != tc.code {
			t.Errorf("%s %s: HTTP %d, want %d", tc.method, tc.path, w.Code, tc.code)
		}
	}
	want := []types.NamespacedName{{Namespace: "ns", Name: "adapter-1"}, {Namespace: "ns", Name: "unknown"}, {Namespace: "ns", Name: "adapter-2"}}
	if len(rec.rings) != len(want) {
		t.Fatalf("rings passed on %v, want %v", rec.rings, want)
	}
	for i := range want {
		if rec.rings[i] != want[i] {
			t.Errorf("ring %d passed on %v, want %v", i, rec.rings[i], want[i])
		}
	}
}

// TestDoorbellServerListensOnlyWhileRunning checks the runnable end to end: it serves rings
// while started (the leader) and releases its port when stopped.
func TestDoorbellServerListensOnlyWhileRunning(t *testing.T) {
	rec := &ringRecorder{}
	d := &DoorbellServer{Addr: "127.0.0.1:0", Handler: &DoorbellHandler{Prober: rec}}
	if !d.NeedLeaderElection() {
		t.Fatal("the doorbell must run on the leader only, where the prober runs")
	}
	// A fixed port would collide with other suites; find a free one first.
	l := httptest.NewUnstartedServer(nil)
	addr := l.Listener.Addr().String()
	l.Close()
	d.Addr = addr
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Start(ctx) }()
	waitFor(t, 5*time.Second, "the doorbell answers", func() bool {
		resp, err := http.Post("http://"+addr+"/v1/doorbell/ns/a", "", nil)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusAccepted
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start returned %v", err)
	}
	if d.Handler.Limit == nil || d.Handler.Limit.Limit() != DefaultDoorbellRate {
		t.Errorf("the server did not set the default rate")
	}
	if resp, err := http.Post("http://"+addr+"/v1/doorbell/ns/a", "", nil); err == nil {
		_ = resp.Body.Close()
		t.Error("the doorbell still answers after its runnable stopped")
	}
}
