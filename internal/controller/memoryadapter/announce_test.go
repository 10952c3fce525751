package memoryadapter

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/conditions"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/health"
)

// TestAnnouncementsOncePerTransition: a transition is announced once per adapter, condition,
// status and reason, however often a stale copy shows it again, and a new adapter of the same
// name starts afresh.
func TestAnnouncementsOncePerTransition(t *testing.T) {
	r := &Reconciler{Prober: &health.Prober{}}
	adapter := func(uid string) *memoryv1alpha1.MemoryAdapter {
		return &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: types.UID("u" + uid)}}
	}
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "m"}
	}
	for i, step := range []struct {
		uid  string
		c    metav1.Condition
		want bool
	}{
		{"1", cond("Healthy", metav1.ConditionTrue, "EvidenceRead"), true},
		{"1", cond("Healthy", metav1.ConditionTrue, "EvidenceRead"), false},
		{"1", cond("Deployed", metav1.ConditionTrue, "Available"), true},
		{"1", cond("Healthy", metav1.ConditionFalse, "EvidenceUnreachable"), true},
		{"1", cond("Healthy", metav1.ConditionFalse, "Other"), true},
		{"1", cond("Healthy", metav1.ConditionFalse, "Other"), false},
		{"1", cond("Deployed", metav1.ConditionTrue, "Available"), false},
		{"2", cond("Deployed", metav1.ConditionTrue, "Available"), true},
		{"2", cond("Deployed", metav1.ConditionTrue, "Available"), false},
	} {
		if got := r.announcements(adapter(step.uid)).condition(step.c); got != step.want {
			t.Errorf("step %d (%s %s %s of u%s): announce %v, want %v", i, step.c.Type, step.c.Status, step.c.Reason, step.uid, got, step.want)
		}
	}
	a := r.announcements(adapter("2"))
	if !a.recordedRun("job-1") || a.recordedRun("job-1") || !a.recordedRun("job-2") {
		t.Error("a run is recorded once")
	}
	if !r.announcements(adapter("3")).recordedRun("job-2") {
		t.Error("a new adapter's run was taken for the old one's")
	}
	r.forget(client.ObjectKeyFromObject(adapter("3")))
	if _, ok := r.announced.Load(client.ObjectKeyFromObject(adapter("3"))); ok {
		t.Error("forget kept the adapter's announcements")
	}
}

// Every type an adapter announces fits the room allocated for them at its first announcement.
func TestAnnouncementsAllocateOnce(t *testing.T) {
	r := &Reconciler{Prober: &health.Prober{}}
	a := r.announcements(&memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u"}})
	for _, typ := range conditions.Announced {
		if slices.Contains(conditions.GitOpsTypes, typ) {
			continue
		}
		a.condition(metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "R"})
	}
	if len(a.conditions) != announcedTypes || cap(a.conditions) != announcedTypes {
		t.Errorf("%d announced types in room for %d, want %d in %d", len(a.conditions), cap(a.conditions), announcedTypes, announcedTypes)
	}
}
