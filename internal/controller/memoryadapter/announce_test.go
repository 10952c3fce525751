package memoryadapter

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
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

// TestAVerdictIsOneEvent: a transition that Available restates in the same write (the input
// it copies: same status and reason, its name and message as Available's message) is said by
// Available's Event alone; every other transition keeps its own Event.
func TestAVerdictIsOneEvent(t *testing.T) {
	valid := func(typ string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Fine", Message: typ + " holds"}
	}
	inputs := func(healthy metav1.Condition) []metav1.Condition {
		return []metav1.Condition{valid(memoryv1alpha1.ConditionManifestValid), valid(memoryv1alpha1.ConditionDeployed),
			valid(memoryv1alpha1.ConditionConformant), healthy}
	}
	withAvailable := func(cs []metav1.Condition) []metav1.Condition {
		return append(slices.Clone(cs), conditions.Available(cs))
	}
	probeFailed := metav1.Condition{Type: memoryv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse,
		Reason: memoryv1alpha1.ReasonCapabilityProbeFailed, Message: "capability probes failed: write"}
	healthyAgain := valid(memoryv1alpha1.ConditionHealthy)
	unreachable := metav1.Condition{Type: memoryv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse,
		Reason: memoryv1alpha1.ReasonEvidenceUnreachable, Message: "no answer"}
	for _, tc := range []struct {
		name     string
		from, to []metav1.Condition
		want     []string
	}{
		{"invalidated: Available names Healthy, one Event", withAvailable(inputs(healthyAgain)), withAvailable(inputs(probeFailed)),
			[]string{"Warning CapabilityProbeFailed Available is False: Healthy: capability probes failed: write"}},
		{"valid again: Available's reason is its own, two Events", withAvailable(inputs(probeFailed)), withAvailable(inputs(healthyAgain)),
			[]string{"Normal Fine Healthy is True: Healthy holds", "Normal AdapterAvailable Available is True: the manifest is valid, deployed, verified by conformance and upheld by health evidence"}},
		{"a new reason Available restates: one Event", withAvailable(inputs(probeFailed)), withAvailable(inputs(unreachable)),
			[]string{"Warning EvidenceUnreachable Available is False: Healthy: no answer"}},
		{"Healthy moves alone (Available already said it): Healthy's Event",
			withAvailable(inputs(probeFailed)), append(inputs(healthyAgain), conditions.Available(inputs(probeFailed))),
			[]string{"Normal Fine Healthy is True: Healthy holds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := events.NewFakeRecorder(10)
			r := &Reconciler{Prober: &health.Prober{}, Recorder: rec}
			ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u"}}
			orig := ma.DeepCopy()
			orig.Status.Conditions = tc.from
			ma.Status.Conditions = tc.to
			for _, c := range tc.from {
				r.announcements(ma).condition(c) // announced when they were set
			}
			r.announceTransitions(&scope{ma: ma, orig: orig})
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Events:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
}
