package memoryadapter

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
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
