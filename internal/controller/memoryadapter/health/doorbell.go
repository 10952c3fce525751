package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// RingSpacing is the least time between two reads of one adapter that its rings cause: a
// ring asks for a read within RingSpacing of the last one, never sooner, so neither a flapping
// backend nor a forged ring makes the operator read an adapter more than once a second.
const RingSpacing = time.Second

// DoorbellPath is where adapters ring: POST DoorbellPath/{namespace}/{name}.
const DoorbellPath = "/v1/doorbell"

// Ring asks for an early read of the adapter named key, within RingSpacing of its last read.
// It reports whether the prober reads that adapter at all.
func (p *Prober) Ring(key types.NamespacedName) bool {
	p.init()
	p.mu.Lock()
	uid, ok := p.byName[key]
	t := p.targets[uid]
	p.mu.Unlock()
	if !ok || t == nil {
		return false
	}
	t.mu.Lock()
	t.rung = true
	t.mu.Unlock()
	p.mu.Lock()
	p.wakeLocked(t)
	p.mu.Unlock()
	return true
}

// Ringer is what the doorbell needs of the prober.
type Ringer interface {
	Ring(key types.NamespacedName) bool
}

var doorbellRings = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "memory_adapter_operator_doorbell_rings_total",
	Help: "Rings of the evidence doorbell by result: read (an early read was asked for), unknown (no adapter the prober reads has that name), throttled (over the doorbell's rate), invalid (not a ring).",
}, []string{"result"})

func init() { metrics.Registry.MustRegister(doorbellRings) }

// DoorbellHandler answers rings. A ring carries no evidence and no credential: it names the
// adapter whose evidence changed, and the prober reads that evidence through its usual
// authenticated, certificate-checked channel. So what a forged ring can do is bounded by
// what it triggers: one early read of a known adapter, spaced RingSpacing apart, within the
// handler's overall rate. Every ring of a well-formed adapter name is answered 202 whether
// or not the adapter exists, so the endpoint tells a caller nothing about the cluster.
type DoorbellHandler struct {
	// Prober is told which adapter to read.
	Prober Ringer
	// Limit bounds the rings accepted across all adapters; nil accepts every ring
	// (DoorbellServer sets DefaultDoorbellRate).
	Limit *rate.Limiter
}

// DefaultDoorbellRate is the doorbell's overall rate (rings a second) and burst: a shared
// backend's outage makes every adapter on it ring at once, and the prober's pool reads about
// this many adapters a second at its default concurrency.
const (
	DefaultDoorbellRate  = 500
	DefaultDoorbellBurst = 2000
)

// ServeHTTP implements http.Handler.
func (h *DoorbellHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		doorbellRings.WithLabelValues("invalid").Inc()
		http.Error(w, "POST a ring", http.StatusMethodNotAllowed)
		return
	}
	key, err := parseRing(r.URL.Path)
	if err != nil {
		doorbellRings.WithLabelValues("invalid").Inc()
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if h.Limit != nil && !h.Limit.Allow() {
		doorbellRings.WithLabelValues("throttled").Inc()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many rings", http.StatusTooManyRequests)
		return
	}
	if h.Prober.Ring(key) {
		doorbellRings.WithLabelValues("read").Inc()
	} else {
		doorbellRings.WithLabelValues("unknown").Inc()
	}
	w.WriteHeader(http.StatusAccepted)
}

// parseRing reads the adapter's namespace and name from a ring's path.
func parseRing(path string) (types.NamespacedName, error) {
	rest, ok := strings.CutPrefix(path, DoorbellPath+"/")
	ns, name, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return types.NamespacedName{}, fmt.Errorf("want POST %s/{namespace}/{name}", DoorbellPath)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// DoorbellServer serves the doorbell on Addr. It is a manager Runnable that runs on the
// elected leader only, where the prober runs: the other replicas do not listen, so a ring
// that the Service sends to one of them is refused at once and the adapter tries again.
type DoorbellServer struct {
	// Addr is the listen address, e.g. ":8082".
	Addr string
	// Handler answers the rings.
	Handler *DoorbellHandler
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (d *DoorbellServer) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable: it serves until ctx ends.
func (d *DoorbellServer) Start(ctx context.Context) error {
	if d.Handler.Limit == nil {
		d.Handler.Limit = rate.NewLimiter(DefaultDoorbellRate, DefaultDoorbellBurst)
	}
	mux := http.NewServeMux()
	mux.Handle(DoorbellPath+"/", d.Handler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second,
		WriteTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 4 << 10}
	l, err := net.Listen("tcp", d.Addr)
	if err != nil {
		return fmt.Errorf("doorbell: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("doorbell: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("doorbell shutdown: %w", err)
	}
	return nil
}
