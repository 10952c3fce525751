package memoryadapter

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// purgeJobWith is a purge Job with the given terminal condition (none: still running).
func purgeJobWith(cond batchv1.JobConditionType, reason, msg string) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "mem-purge"}}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, Reason: reason, Message: msg}}
	}
	return j
}

// terminated is a purge pod that ended with the given termination message.
func terminated(name, msg string, at time.Time) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: msg, FinishedAt: metav1.NewTime(at)}},
	}}}}
}

func TestDecidePurge(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	unknown, failed, ok := metav1.ConditionUnknown, metav1.ConditionFalse, metav1.ConditionTrue
	base := purgeObservation{scope: "agents", jobName: "mem-purge"}
	with := func(f func(o *purgeObservation)) purgeObservation {
		o := base
		f(&o)
		return o
	}
	for name, tc := range map[string]struct {
		obs    purgeObservation
		action purgeAction
		want   want
	}{
		"adapter pods still there": {with(func(o *purgeObservation) { o.adapterPods = []string{"mem-7d9-x"} }), purgeWait,
			want{unknown, memoryv1alpha1.ReasonPurgeWaitingForAdapter, []string{"mem-7d9-x", `"agents"`}}},
		"adapter stopped, no job": {base, purgeCreateJob,
			want{unknown, memoryv1alpha1.ReasonPurgeRunning, []string{"mem-purge", `"agents"`}}},
		"job being deleted to retry": {with(func(o *purgeObservation) { o.jobDeleting = true }), purgeWait,
			want{unknown, memoryv1alpha1.ReasonPurgeRunning, []string{"being deleted"}}},
		"job running": {with(func(o *purgeObservation) { o.job = purgeJobWith("", "", "") }), purgeWait,
			want{unknown, memoryv1alpha1.ReasonPurgeRunning, []string{"mem-purge"}}},
		"job running while a new adapter pod appears": {with(func(o *purgeObservation) {
			o.job, o.adapterPods = purgeJobWith("", "", ""), []string{"late"}
		}), purgeWait, want{unknown, memoryv1alpha1.ReasonPurgeRunning, nil}},
		"job pod cannot start": {with(func(o *purgeObservation) {
			o.job = purgeJobWith("", "", "")
			o.jobPods = []corev1.Pod{waitingPod("CreateContainerConfigError", `secret "pg-dsn" not found`)}
		}), purgeWait, want{unknown, memoryv1alpha1.ReasonPurgeBlocked, []string{`secret "pg-dsn" not found`, "Retain"}}},
		"job succeeded with a report": {with(func(o *purgeObservation) {
			o.job = purgeJobWith(batchv1.JobComplete, "", "")
			o.jobPods = []corev1.Pod{terminated("p1", `{"backend":"postgres","scope":"agents","deleted":42}`, t0)}
		}), purgeRelease, want{ok, memoryv1alpha1.ReasonPurgeSucceeded, []string{"deleted 42 items"}}},
		"job succeeded without a readable report": {with(func(o *purgeObservation) {
			o.job = purgeJobWith(batchv1.JobComplete, "", "")
		}), purgeRelease, want{ok, memoryv1alpha1.ReasonPurgeSucceeded, []string{"mem-purge"}}},
		"job failed: the last pod's error is quoted": {with(func(o *purgeObservation) {
			o.job = purgeJobWith(batchv1.JobFailed, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
			o.jobPods = []corev1.Pod{
				terminated("p2", `{"error_type":"MemoryAdapterError","error":"postgres: permission denied"}`, t0.Add(time.Minute)),
				terminated("p1", `{"error_type":"MemoryAdapterUnavailable","error":"connection refused"}`, t0),
			}
		}), purgeHold, want{failed, memoryv1alpha1.ReasonPurgeFailed, []string{
			"BackoffLimitExceeded", "pod p2", "MemoryAdapterError: postgres: permission denied", "delete the job to retry",
			"spec.deletionPolicy Retain", FinalizerPurgeScope}}},
		"job failed at its deadline without a report": {with(func(o *purgeObservation) {
			o.job = purgeJobWith(batchv1.JobFailed, "DeadlineExceeded", "Job was active longer than specified deadline")
			o.jobPods = []corev1.Pod{terminated("p1", "not json", t0)}
		}), purgeHold, want{failed, memoryv1alpha1.ReasonPurgeFailed, []string{"DeadlineExceeded", "Retain"}}},
		// Whatever else was seen, a namespace that refuses the Job never takes it.
		"namespace being deleted": {with(func(o *purgeObservation) {
			o.namespace, o.namespaceTerminating, o.jobDeleting = "team-a", true, true
		}), purgeAbandon, want{failed, memoryv1alpha1.ReasonNamespaceTerminating, []string{
			"namespace team-a is being deleted", `scope "agents"`, "stay on the server", FinalizerPurgeScope, "in another namespace"}}},
	} {
		t.Run(name, func(t *testing.T) {
			action, c := decidePurge(tc.obs)
			if action != tc.action {
				t.Fatalf("action %d, want %d (%s)", action, tc.action, c.Message)
			}
			if c.Type != memoryv1alpha1.ConditionScopePurged {
				t.Fatalf("condition type %s", c.Type)
			}
			check(t, c, tc.want)
			d := deletingCondition(c)
			check(t, d, want{failed, memoryv1alpha1.ReasonAdapterDeleting, []string{c.Message}})
		})
	}
}
