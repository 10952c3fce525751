package health

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// evidenceReadFailures counts the prober's failed reads, of every adapter together: a series
// per adapter would grow with the cluster, and the adapter's Healthy condition already names
// its own failures.
var evidenceReadFailures = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "memory_adapter_operator_evidence_read_failures_total",
	Help: "Failed reads of adapters' /v1/evidence.",
})

func init() {
	metrics.Registry.MustRegister(evidenceReadFailures)
}
