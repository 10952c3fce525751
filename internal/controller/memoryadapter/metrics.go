package memoryadapter

import (
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	adapterCondition = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "memory_adapter_operator_adapter_condition",
		Help: "1 for the status each MemoryAdapter condition has (True, False or Unknown), 0 for the others; sum by condition and status to count adapters.",
	}, []string{"namespace", "name", "condition", "status"})
	conformanceRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "memory_adapter_operator_conformance_runs_total",
		Help: "Finished conformance runs by outcome: passed, failed, or broken (ended without a readable report).",
	}, []string{"outcome"})
	conformanceDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "memory_adapter_operator_conformance_run_duration_seconds",
		Help:    "Wall time of finished conformance Jobs, from start to completion.",
		Buckets: prometheus.ExponentialBuckets(5, 2, 9),
	})
	evidenceReadFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "memory_adapter_operator_evidence_read_failures_total",
		Help: "Failed reads of adapters' /v1/evidence.",
	})
)

func init() {
	metrics.Registry.MustRegister(adapterCondition, conformanceRuns, conformanceDuration, evidenceReadFailures)
}

var statuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

func recordConditionMetrics(key types.NamespacedName, conds []metav1.Condition) {
	for _, ct := range conditionTypes {
		var cur metav1.ConditionStatus
		for _, c := range conds {
			if c.Type == ct {
				cur = c.Status
			}
		}
		for _, st := range statuses {
			v := 0.0
			if st == cur {
				v = 1
			}
			adapterCondition.WithLabelValues(key.Namespace, key.Name, ct, string(st)).Set(v)
		}
	}
}

func forgetMetrics(key types.NamespacedName) {
	adapterCondition.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "name": key.Name})
}
