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
	cond := func(t string, st metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: t, Status: st, Reason: "R"}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&memoryv1alpha1.MemoryAdapter{}).WithObjects(
		adapter("a", cond(memoryv1alpha1.ConditionAvailable, metav1.ConditionTrue), cond(memoryv1alpha1.ConditionHealthy, metav1.ConditionTrue)),
		// ScopePurged is written during a purge, not one of the controller's standing conditions.
		adapter("b", cond(memoryv1alpha1.ConditionAvailable, metav1.ConditionFalse), cond(memoryv1alpha1.ConditionScopePurged, metav1.ConditionFalse)),
		adapter("new"),
	).Build()
	want := `
# HELP memory_adapter_operator_adapter_condition 1 for each MemoryAdapter condition, labelled with its current status (True, False or Unknown); sum by condition and status to count adapters.
# TYPE memory_adapter_operator_adapter_condition gauge
memory_adapter_operator_adapter_condition{condition="Available",name="a",namespace="ns",status="True"} 1
memory_adapter_operator_adapter_condition{condition="Healthy",name="a",namespace="ns",status="True"} 1
memory_adapter_operator_adapter_condition{condition="Available",name="b",namespace="ns",status="False"} 1
`
	if err := testutil.CollectAndCompare(conditionCollector{reader: c}, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// A deleted adapter's series go with it: nothing is kept between scrapes.
	if err := c.Delete(t.Context(), adapter("a")); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(conditionCollector{reader: c}); n != 1 {
		t.Fatalf("%d series after deleting a, want 1 (b's Available)", n)
	}
}
