package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

type metrics struct {
	requests      *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	errors        *prometheus.CounterVec
	backendCalls  *prometheus.CounterVec
	manifestValid prometheus.Gauge
	evidenceTime  prometheus.Gauge
	probeFailures prometheus.Counter
	rings         *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memory_adapter_requests_total",
			Help: "HTTP requests by route (OpenAPI operation id), method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "memory_adapter_request_duration_seconds",
			Help:    "HTTP request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"route"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memory_adapter_errors_total",
			Help: "Error responses by route and problem type.",
		}, []string{"route", "type"}),
		backendCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memory_adapter_backend_calls_total",
			Help: "Calls the server made to its backend store, by operation.",
		}, []string{"op"}),
		manifestValid: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "memory_adapter_manifest_valid",
			Help: "1 while the adapter's evidence supports its published manifest, else 0.",
		}),
		// A timestamp rather than an age: Prometheus computes the age at query time
		// (time() - it), so a server that stopped probing shows a growing age instead of
		// the last age it reported.
		evidenceTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "memory_adapter_evidence_timestamp_seconds",
			Help: "Unix time of the adapter's last evidence (its last probe of the backend); 0 before the first.",
		}),
		probeFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memory_adapter_probe_failures_total",
			Help: "Probes of the backend that failed (the backend unreachable or refusing), each one evidence against the manifest.",
		}),
		rings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memory_adapter_doorbell_rings_total",
			Help: "Announcements to the operator that the evidence changed, by result: accepted, or failed after every retry (the operator then sees the change at its next periodic read).",
		}, []string{"result"}),
	}
	reg.MustRegister(m.requests, m.latency, m.errors, m.backendCalls, m.manifestValid, m.evidenceTime, m.probeFailures, m.rings)
	return m
}

// recorder captures the status and problem type of a response for the metrics.
type recorder struct {
	http.ResponseWriter
	status      int
	problemType string
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController and http.MaxBytesReader reach the real writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// instrument counts and times every request and turns a panic anywhere below it (for
// example in a backend) into a 502 adapter_error instead of a dropped connection.
func (s *Server) instrument(route string, next http.Handler) http.Handler {
	// The route's histogram is resolved once, not looked up by label on every request.
	latency := s.metrics.latency.WithLabelValues(route)
	requests := newRequestCounters(s.metrics.requests, route)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := recorders.Get().(*recorder)
		rec.ResponseWriter = w
		defer func() {
			if p := recover(); p != nil {
				if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(p)
				}
				s.log.Error("Handler panicked", "route", route, "panic", p)
				if rec.status == 0 {
					s.problem(rec, http.StatusBadGateway, memory.ProblemAdapterError, "the backend failed unexpectedly", nil)
				}
			}
			code := rec.status
			if code == 0 {
				code = http.StatusOK
			}
			requests.get(methodLabel(r.Method), code).Inc()
			latency.Observe(time.Since(start).Seconds())
			if rec.problemType != "" {
				s.metrics.errors.WithLabelValues(route, rec.problemType).Inc()
			}
			// Nothing below keeps the writer past ServeHTTP (traced reads it before this).
			*rec = recorder{}
			recorders.Put(rec)
		}()
		next.ServeHTTP(rec, r)
	})
}

// methodLabel bounds label cardinality: arbitrary method tokens collapse to "other".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// BackendCalls returns the counter of backend calls for op ("store", "retrieve" or
// "search"); tests and dashboards use it to prove that a rejected request reached no
// backend.
func (s *Server) BackendCalls(op string) prometheus.Counter {
	return s.metrics.backendCalls.WithLabelValues(op)
}
