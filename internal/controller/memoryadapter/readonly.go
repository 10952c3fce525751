package memoryadapter

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// A process that opened its database on a read-only volume keeps it read-only for its whole
// life, and so does its container: the kubelet's bind mount of the volume copies the
// read-only flag of the mount it binds, so neither the process nor a restart of its container
// ever writes there again once the volume is writable. Only a new pod can. The operator
// therefore replaces the pods of a volume-backed adapter whose write probe says the database
// or its filesystem is read-only, with a backoff: not before the evidence has said so for
// ReadOnlyMinLife, then each pod lives at least half as long as the evidence has said so
// (between ReadOnlyMinLife and ReadOnlyMaxLife), so the replacements double apart. The
// adapter is unavailable anyway, and the Recreate gap of a replacement (calls refused for a
// few seconds instead of the typed 503) is the price of coming back with no step by anyone
// once the volume is writable again (issue 45 item 5).
const (
	// ReadOnlyMinLife is the least time a read-only verdict lasts, and a pod lives, before the
	// pods are replaced.
	ReadOnlyMinLife = time.Minute
	// ReadOnlyMaxLife bounds the backoff: a pod on a volume that stays read-only is replaced
	// at least this often.
	ReadOnlyMaxLife = 30 * time.Minute
)

// readOnlyMarkers are the write probe's words for a read-only database or filesystem: SQLite's
// SQLITE_READONLY text (a database opened read-only) and EROFS. A full disk or an I/O error
// is not among them: a new pod would not change either.
var readOnlyMarkers = []string{"attempt to write a readonly database", "read-only file system"}

// readOnlyWrite returns the failed write probe's detail when ev says the instance's database
// is read-only, else "".
func readOnlyWrite(ev *memory.EvidenceReport) string {
	if ev == nil {
		return ""
	}
	for _, p := range ev.Probes {
		if p.Name != "write" || p.OK {
			continue
		}
		for _, m := range readOnlyMarkers {
			if strings.Contains(p.Detail, m) {
				return p.Detail
			}
		}
	}
	return ""
}

// readOnlyRestart decides whether to replace the pods now: the evidence has said read-only
// since `since` (the Healthy condition's last transition to False) and the newest pod was
// created at newest. Otherwise it returns how long until the answer may change.
func readOnlyRestart(since, newest, now time.Time) (bool, time.Duration) {
	outage, age := now.Sub(since), now.Sub(newest)
	life := min(max(outage/2, ReadOnlyMinLife), ReadOnlyMaxLife)
	if outage >= ReadOnlyMinLife && age >= life {
		return true, 0
	}
	// Both clocks run on, so the pod's required life grows while it waits: after t more, the
	// pod is old enough once age+t reaches the cap, or reaches both the minimum and half of
	// outage+t (t >= outage-2*age).
	untilOld := min(ReadOnlyMaxLife-age, max(ReadOnlyMinLife-age, outage-2*age))
	return false, max(ReadOnlyMinLife-outage, untilOld, time.Second)
}

// reconcileReadOnlyVolume replaces the pods of a volume-backed adapter whose instance found
// its database read-only, by a restart annotation on the pod template (as afterVerified
// restarts them), on readOnlyRestart's schedule.
func (r *Reconciler) reconcileReadOnlyVolume(ctx context.Context, s *scope) error {
	detail := readOnlyWrite(s.health.Evidence)
	dep := s.deploy.Deployment
	if detail == "" || dep == nil || !render.UsesDataClaim(s.ma) || s.health.Rehydrated {
		return nil
	}
	healthy := apimeta.FindStatusCondition(s.ma.Status.Conditions, memoryv1alpha1.ConditionHealthy)
	if healthy == nil || healthy.Status != metav1.ConditionFalse {
		// The verdict this evidence makes is written at the end of this reconcile; its
		// transition time starts the clock.
		s.requeue(ReadOnlyMinLife)
		return nil
	}
	newest := newestPod(s.deploy.Pods)
	if newest.IsZero() {
		return nil
	}
	restart, wait := readOnlyRestart(healthy.LastTransitionTime.Time, newest, s.now)
	if !restart {
		s.requeue(wait)
		return nil
	}
	patch := client.MergeFrom(dep.DeepCopy())
	if dep.Spec.Template.Annotations == nil {
		dep.Spec.Template.Annotations = map[string]string{}
	}
	dep.Spec.Template.Annotations[render.AnnotationRestartedForReadOnly] = s.now.UTC().Format(time.RFC3339)
	if err := r.Client.Patch(ctx, dep, patch); err != nil {
		return fmt.Errorf("restart adapter pods on a read-only volume: %w", err)
	}
	readOnlyRestarts.Inc()
	r.Recorder.Eventf(s.ma, dep, corev1.EventTypeWarning, "RestartedAdapter", "RestartReadOnly",
		"restarted the adapter pods: the write probe has said the database is read-only since %s (%s); a new pod opens it read-write once the volume takes writes again",
		healthy.LastTransitionTime.UTC().Format(time.RFC3339), detail)
	s.requeue(ReadOnlyMinLife)
	return nil
}

// newestPod is the creation time of the newest pod not being deleted, or zero.
func newestPod(pods []corev1.Pod) time.Time {
	var t time.Time
	for _, p := range pods {
		if p.DeletionTimestamp.IsZero() && p.CreationTimestamp.After(t) {
			t = p.CreationTimestamp.Time
		}
	}
	return t
}
