package memoryadapter

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/conditions"
)

// adapterConditionDesc describes the per-adapter condition series. They are not stored in the
// process: conditionCollector makes them from the cached MemoryAdapters at each scrape, so the
// manager holds no series per adapter (at 5,000 adapters stored gauges held some 50 MB) and
// a deleted adapter's series cannot outlive it.
//
// The reason label is the condition's reason: the alert rules (config/prometheus) need it to
// tell a failed conformance run from a pending one, stale evidence from other Unknown health,
// and a failed purge from one still running. It adds no series (a condition has one reason at
// a time); a series is replaced when its status or reason changes, which is why the rules
// aggregate the labels away before `for:` counts.
var adapterConditionDesc = prometheus.NewDesc("memory_adapter_operator_adapter_condition",
	"1 for each MemoryAdapter condition, labelled with its current status (True, False or Unknown) and reason; sum by condition and status to count adapters.",
	[]string{"namespace", "name", "condition", "status", "reason"}, nil)

var (
	conformanceRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "memory_adapter_operator_conformance_runs_total",
		Help: "Finished conformance runs by outcome: passed, failed, or broken (ended without a readable report).",
	}, []string{"outcome"})
	conformanceDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "memory_adapter_operator_conformance_run_duration_seconds",
		Help:    "Wall time of finished conformance Jobs, from start to completion.",
		Buckets: prometheus.ExponentialBuckets(5, 2, 9),
	})
	readOnlyRestarts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "memory_adapter_operator_read_only_restarts_total",
		Help: "Restarts of volume-backed adapters' pods because their write probe found the database read-only (reconcileReadOnlyVolume).",
	})
)

func init() {
	metrics.Registry.MustRegister(conformanceRuns, conformanceDuration, readOnlyRestarts)
}

// conditionCollector makes memory_adapter_operator_adapter_condition from the MemoryAdapters
// in the manager's cache at scrape time: one series per adapter and condition it has.
type conditionCollector struct {
	reader client.Reader
}

// Describe sends the one descriptor the collector uses.
func (c conditionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- adapterConditionDesc }

// Collect lists the cached MemoryAdapters without copying them (nothing here writes to them) and
// sends one series per condition the controller writes and the adapter has.
func (c conditionCollector) Collect(ch chan<- prometheus.Metric) {
	list := &memoryv1alpha1.MemoryAdapterList{}
	// A scrape has its own deadline; the cache answers from memory once synced, so a short
	// bound only matters before the informer has synced (then the scrape lacks these series).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(adapterConditionDesc, fmt.Errorf("list MemoryAdapters: %w", err))
		return
	}
	// The label pairs of the values many series repeat (namespaces, condition types,
	// statuses, reasons) are made once a scrape: at 10,000 adapters a scrape is 50,000
	// series, and a prometheus.MustNewConstMetric each, with five label pairs and their
	// strings of its own, was about 35 MB of garbage a scrape on top of the live heap.
	shared := map[[2]string]*dto.LabelPair{}
	pair := func(name, value string) *dto.LabelPair {
		k := [2]string{name, value}
		p, ok := shared[k]
		if !ok {
			p = labelPair(name, value)
			shared[k] = p
		}
		return p
	}
	for i := range list.Items {
		ma := &list.Items[i]
		var name *dto.LabelPair
		for _, cond := range ma.Status.Conditions {
			if !slices.Contains(conditions.Announced, cond.Type) {
				continue
			}
			if name == nil {
				name = labelPair("name", ma.Name)
			}
			ch <- &conditionSeries{labels: [5]*dto.LabelPair{pair("condition", cond.Type), name,
				pair("namespace", ma.Namespace), pair("reason", cond.Reason), pair("status", string(cond.Status))}}
		}
	}
}

// labelPair is a new label pair.
func labelPair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
}

// gaugeOne is the value of every condition series, one for them all: the registry and the
// encoders only read a gathered metric.
var gaugeOne = &dto.Gauge{Value: proto.Float64(1)}

// conditionSeries is one series of adapterConditionDesc: its label pairs in the order of
// their names, as the exposition formats require and prometheus.MakeLabelPairs would sort
// them, and the shared value 1.
type conditionSeries struct {
	labels [5]*dto.LabelPair
}

// Desc implements prometheus.Metric.
func (s *conditionSeries) Desc() *prometheus.Desc { return adapterConditionDesc }

// Write implements prometheus.Metric.
func (s *conditionSeries) Write(out *dto.Metric) error {
	out.Label, out.Gauge = s.labels[:], gaugeOne
	return nil
}

// registerConditionCollector registers the collector over the manager's cache, replacing one a
// previous manager of this process registered (the envtest suites start more than one).
func registerConditionCollector(reader client.Reader) error {
	c := conditionCollector{reader: reader}
	metrics.Registry.Unregister(c)
	if err := metrics.Registry.Register(c); err != nil {
		return fmt.Errorf("register the condition collector: %w", err)
	}
	return nil
}
