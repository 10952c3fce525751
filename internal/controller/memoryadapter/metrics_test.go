package memoryadapter

import (
	"bytes"
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/conditions"
)

func TestConditionCollectorMakesOneSeriesPerAdapterAndCondition(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := memoryv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	adapter := func(name string, conds ...metav1.Condition) *memoryv1alpha1.MemoryAdapter {
		ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		ma.Status.Conditions = conds
		return ma
	}
	cond := func(t string, st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: t, Status: st, Reason: reason}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&memoryv1alpha1.MemoryAdapter{}).WithObjects(
		adapter("a",
			cond(memoryv1alpha1.ConditionAvailable, metav1.ConditionTrue, memoryv1alpha1.ReasonAdapterAvailable),
			cond(memoryv1alpha1.ConditionHealthy, metav1.ConditionTrue, memoryv1alpha1.ReasonEvidenceValid)),
		// ScopePurged is written only during a purge; a failed purge is a series too, so
		// the PurgeFailed alert can see it. A condition the controller does not write is not.
		adapter("b",
			cond(memoryv1alpha1.ConditionAvailable, metav1.ConditionFalse, memoryv1alpha1.ReasonAdapterDeleting),
			cond(memoryv1alpha1.ConditionScopePurged, metav1.ConditionFalse, memoryv1alpha1.ReasonPurgeFailed),
			cond("SomeoneElses", metav1.ConditionTrue, "Theirs")),
		adapter("new"),
	).Build()
	want := `
# HELP memory_adapter_operator_adapter_condition 1 for each MemoryAdapter condition, labelled with its current status (True, False or Unknown) and reason; sum by condition and status to count adapters.
# TYPE memory_adapter_operator_adapter_condition gauge
memory_adapter_operator_adapter_condition{condition="Available",name="a",namespace="ns",reason="AdapterAvailable",status="True"} 1
memory_adapter_operator_adapter_condition{condition="Healthy",name="a",namespace="ns",reason="EvidenceValid",status="True"} 1
memory_adapter_operator_adapter_condition{condition="Available",name="b",namespace="ns",reason="AdapterDeleting",status="False"} 1
memory_adapter_operator_adapter_condition{condition="ScopePurged",name="b",namespace="ns",reason="PurgeFailed",status="False"} 1
`
	if err := testutil.CollectAndCompare(conditionCollector{reader: c}, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// A deleted adapter's series go with it: nothing is kept between scrapes.
	if err := c.Delete(t.Context(), adapter("a")); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(conditionCollector{reader: c}); n != 2 {
		t.Fatalf("%d series after deleting a, want 2 (b's Available and ScopePurged)", n)
	}
}

// listReader answers a MemoryAdapterList with its adapters, as the cache does with
// UnsafeDisableDeepCopy: copies of the structs, sharing their contents.
type listReader struct {
	client.Reader
	adapters []memoryv1alpha1.MemoryAdapter
}

func (r listReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	list.(*memoryv1alpha1.MemoryAdapterList).Items = slices.Clone(r.adapters)
	return nil
}

// constCollector is the condition collector as it was, a prometheus.MustNewConstMetric per
// series: the baseline of BenchmarkConditionScrape.
type constCollector struct{ reader client.Reader }

func (c constCollector) Describe(ch chan<- *prometheus.Desc) { ch <- adapterConditionDesc }

func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	list := &memoryv1alpha1.MemoryAdapterList{}
	if err := c.reader.List(context.Background(), list); err != nil {
		panic(err)
	}
	for _, ma := range list.Items {
		for _, cond := range ma.Status.Conditions {
			if slices.Contains(conditions.Announced, cond.Type) {
				ch <- prometheus.MustNewConstMetric(adapterConditionDesc, prometheus.GaugeValue, 1,
					ma.Namespace, ma.Name, cond.Type, string(cond.Status), cond.Reason)
			}
		}
	}
}

// scaleAdapters are n adapters with the five conditions every adapter keeps.
func scaleAdapters(n int) []memoryv1alpha1.MemoryAdapter {
	out := make([]memoryv1alpha1.MemoryAdapter, n)
	for i := range out {
		out[i].Namespace, out[i].Name = fmt.Sprintf("team-%d", i%20), fmt.Sprintf("adapter-%05d", i)
		for _, typ := range conditions.Types {
			out[i].Status.Conditions = append(out[i].Status.Conditions,
				metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Reason" + typ})
		}
	}
	return out
}

// The series the collector makes are, in every exposition format, the ones
// prometheus.MustNewConstMetric makes.
func TestConditionSeriesAreTheConstMetricsOnes(t *testing.T) {
	r := listReader{adapters: scaleAdapters(50)}
	gather := func(c prometheus.Collector) []*dto.MetricFamily {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		return mfs
	}
	got, want := gather(conditionCollector{reader: r}), gather(constCollector{reader: r})
	// Written in the order of their names, as the registry needs them: else it sorts a
	// copy of every series' labels, an allocation a series more.
	ch := make(chan prometheus.Metric, 1000)
	conditionCollector{reader: r}.Collect(ch)
	close(ch)
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		if !slices.IsSortedFunc(out.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) }) {
			t.Fatalf("labels out of order: %v", out.Label)
		}
	}
	for _, f := range []expfmt.Format{expfmt.NewFormat(expfmt.TypeTextPlain), expfmt.NewFormat(expfmt.TypeProtoDelim), expfmt.NewFormat(expfmt.TypeOpenMetrics)} {
		encode := func(mfs []*dto.MetricFamily) string {
			var b bytes.Buffer
			enc := expfmt.NewEncoder(&b, f)
			for _, mf := range mfs {
				if err := enc.Encode(mf); err != nil {
					t.Fatal(err)
				}
			}
			return b.String()
		}
		if g, w := encode(got), encode(want); g != w {
			t.Errorf("%s exposition differs:\n%.600s\nwant\n%.600s", f, g, w)
		}
	}
}

// BenchmarkConditionScrape gathers the condition series of 10,000 adapters, as a scrape
// does, and reports the bytes it allocates against the MustNewConstMetric baseline gathered
// in the same run (ratio: shared / const).
func BenchmarkConditionScrape(b *testing.B) {
	r := listReader{adapters: scaleAdapters(10000)}
	arms := []prometheus.Collector{conditionCollector{reader: r}, constCollector{reader: r}}
	var allocated [2]uint64
	var ms goruntime.MemStats
	for b.Loop() {
		for i, c := range arms {
			reg := prometheus.NewRegistry()
			reg.MustRegister(c)
			goruntime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			mfs, err := reg.Gather()
			goruntime.ReadMemStats(&ms)
			if err != nil || len(mfs) != 1 || len(mfs[0].Metric) != 10000*len(conditions.Types) {
				b.Fatalf("gathered %d families (%v), want one of %d series", len(mfs), err, 10000*len(conditions.Types))
			}
			allocated[i] += ms.TotalAlloc - before
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(allocated[0])/n/1e6, "MB/scrape")
	b.ReportMetric(float64(allocated[1])/n/1e6, "const-MB/scrape")
	b.ReportMetric(float64(allocated[0])/float64(allocated[1]), "ratio")
}
