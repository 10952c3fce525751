package memoryadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/runs"
)

// FinalizerPurgeScope holds a MemoryAdapter with deletionPolicy Delete on Postgres or Redis
// until a purge Job deleted every item of its scope.
const FinalizerPurgeScope = "memory.agentmem.io/purge-scope"

const (
	// purgeRecheck is how often a deleting adapter is looked at again besides the Job, pod
	// and Deployment events that normally bring it back.
	purgeRecheck = 30 * time.Second
	// eventNoteLimit is the API server's limit on an events.k8s.io Event's note.
	eventNoteLimit = 1024
)

// purgeObservation is what the deletion path saw of a MemoryAdapter held by the finalizer.
type purgeObservation struct {
	// scope is spec.backend.scope.
	scope string
	// jobName is the purge Job's name.
	jobName string
	// adapterPods names the adapter pods that still exist: an instance still serving could
	// store an item after the purge.
	adapterPods []string
	// job is the purge Job; nil when it does not exist or is being deleted.
	job *batchv1.Job
	// jobDeleting is true while a purge Job is on its way out (deleted to retry).
	jobDeleting bool
	// jobPods are the purge Job's pods.
	jobPods []corev1.Pod
	// namespace is the adapter's namespace.
	namespace string
	// namespaceTerminating is true once the API server refused to create the purge Job
	// because the namespace is being deleted: nothing can ever be created there again.
	namespaceTerminating bool
}

// purgeAction is what the deletion path does next.
type purgeAction int

const (
	// purgeWait waits for the adapter's pods to stop, or for the Job to finish.
	purgeWait purgeAction = iota
	// purgeCreateJob creates the purge Job.
	purgeCreateJob
	// purgeRelease deletes the Job and removes the finalizer: the scope is empty.
	purgeRelease
	// purgeHold keeps the finalizer after a failed purge, until the user retries or gives up.
	purgeHold
	// purgeAbandon removes the finalizer without a purge: the namespace is being deleted, no
	// purge Job can be created in it, and holding the adapter would hold the namespace forever.
	purgeAbandon
)

// purgeResult is the JSON line `memory-adapter purge` writes as its termination message.
type purgeResult struct {
	Deleted   int64  `json:"deleted"`
	ErrorType string `json:"error_type"`
	Error     string `json:"error"`
}

// lastPurgeResult reads the termination message of the purge pod that finished last; ok is
// false when no pod left a readable one.
func lastPurgeResult(pods []corev1.Pod) (res purgeResult, pod string, ok bool) {
	var last time.Time
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil || (ok && !t.FinishedAt.After(last)) {
				continue
			}
			var r purgeResult
			if json.Unmarshal([]byte(t.Message), &r) != nil {
				continue
			}
			res, pod, ok, last = r, p.Name, true, t.FinishedAt.Time
		}
	}
	return res, pod, ok
}

// decidePurge turns the deletion path's observations into the next action and the
// ScopePurged condition. It touches neither the API server nor the clock.
func decidePurge(o purgeObservation) (purgeAction, metav1.Condition) {
	const t = memoryv1alpha1.ConditionScopePurged
	unknown, failed := metav1.ConditionUnknown, metav1.ConditionFalse
	if o.namespaceTerminating {
		return purgeAbandon, cond.New(t, failed, memoryv1alpha1.ReasonNamespaceTerminating, fmt.Sprintf(
			"namespace %s is being deleted and the API server creates nothing in it, so no job can delete the items of scope %q: "+
				"they stay on the server. The finalizer %s is released so that the namespace deletion ends. To delete the items, "+
				"create a MemoryAdapter with the same backend, connection and scope and deletionPolicy Delete in another namespace, then delete it",
			o.namespace, o.scope, FinalizerPurgeScope))
	}
	if o.job == nil {
		if o.jobDeleting {
			// A Job deleted to retry is waited for, then created anew under the same name.
			return purgeWait, cond.New(t, unknown, memoryv1alpha1.ReasonPurgeRunning,
				fmt.Sprintf("job %s is being deleted; a new purge of scope %q starts when it is gone", o.jobName, o.scope))
		}
		if len(o.adapterPods) > 0 {
			return purgeWait, cond.New(t, unknown, memoryv1alpha1.ReasonPurgeWaitingForAdapter,
				fmt.Sprintf("waiting for the adapter pods to stop before deleting the items of scope %q: %s", o.scope, strings.Join(o.adapterPods, ", ")))
		}
		return purgeCreateJob, cond.New(t, unknown, memoryv1alpha1.ReasonPurgeRunning,
			fmt.Sprintf("job %s deletes every item of scope %q (deletionPolicy Delete)", o.jobName, o.scope))
	}
	done, jobMsg := runs.JobFinished(o.job)
	res, pod, reported := lastPurgeResult(o.jobPods)
	switch {
	case !done:
		if msg := runs.BlockedReason(o.jobPods); msg != "" {
			return purgeWait, cond.New(t, unknown, memoryv1alpha1.ReasonPurgeBlocked,
				fmt.Sprintf("job %s cannot run: %s; fix the cause, or give up with spec.deletionPolicy Retain", o.jobName, msg))
		}
		return purgeWait, cond.New(t, unknown, memoryv1alpha1.ReasonPurgeRunning,
			fmt.Sprintf("job %s deletes every item of scope %q (deletionPolicy Delete)", o.jobName, o.scope))
	case jobMsg == "":
		msg := fmt.Sprintf("job %s deleted the items of scope %q", o.jobName, o.scope)
		if reported && res.Error == "" {
			msg = fmt.Sprintf("job %s deleted %d items of scope %q", o.jobName, res.Deleted, o.scope)
		}
		return purgeRelease, cond.New(t, metav1.ConditionTrue, memoryv1alpha1.ReasonPurgeSucceeded, msg)
	}
	why := jobMsg
	if reported && res.Error != "" {
		why = fmt.Sprintf("%s; pod %s: %s: %s", jobMsg, pod, res.ErrorType, cond.Truncate(res.Error, 1024))
	}
	return purgeHold, cond.New(t, failed, memoryv1alpha1.ReasonPurgeFailed, fmt.Sprintf(
		"job %s failed to delete the items of scope %q: %s. The MemoryAdapter stays until a purge succeeds: "+
			"delete the job to retry now (it is retried by itself when its TTL removes it, %s after it failed), "+
			"or keep the items and let the MemoryAdapter go with spec.deletionPolicy Retain (or by removing the finalizer %s)",
		o.jobName, o.scope, why, render.PurgeJobTTL, FinalizerPurgeScope))
}

// deletingCondition is Available while a deletion waits for the purge.
func deletingCondition(purged metav1.Condition) metav1.Condition {
	return cond.New(memoryv1alpha1.ConditionAvailable, metav1.ConditionFalse, memoryv1alpha1.ReasonAdapterDeleting,
		"the MemoryAdapter is being deleted: "+purged.Message)
}

// setPurgeFinalizer adds or removes the finalizer with an optimistic lock: the controller
// never writes spec, and a concurrent edit of the finalizer list must not be lost.
func (r *Reconciler) setPurgeFinalizer(ctx context.Context, ma *memoryv1alpha1.MemoryAdapter, want bool) error {
	patch := client.MergeFromWithOptions(ma.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if want {
		controllerutil.AddFinalizer(ma, FinalizerPurgeScope)
	} else {
		controllerutil.RemoveFinalizer(ma, FinalizerPurgeScope)
	}
	if err := r.Client.Patch(ctx, ma, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // already gone: nothing holds it any more
		}
		return fmt.Errorf("set finalizer %s to %t: %w", FinalizerPurgeScope, want, err)
	}
	switch {
	case want:
		r.Recorder.Eventf(ma, nil, corev1.EventTypeNormal, "AddedPurgeFinalizer", "AddFinalizer",
			"deletionPolicy Delete: deleting this MemoryAdapter first deletes every item of scope %q", ma.Spec.Backend.Scope)
	case ma.DeletionTimestamp.IsZero():
		r.Recorder.Eventf(ma, nil, corev1.EventTypeNormal, "RemovedPurgeFinalizer", "RemoveFinalizer",
			"deletionPolicy %s: deleting this MemoryAdapter keeps the items of scope %q", ma.Spec.DeletionPolicy, ma.Spec.Backend.Scope)
	}
	return nil
}

// deletionOutcome is what the deletion phase decided: the ScopePurged condition, the action
// that follows once it is written, and the purge Job the Events relate to.
type deletionOutcome struct {
	purged metav1.Condition
	action purgeAction
	job    *batchv1.Job
}

// reconcileDeletion runs while a MemoryAdapter is being deleted. Without the finalizer the
// garbage collector removes what it owns and nothing else is to do. With it, the adapter is
// stopped, a purge Job deletes the scope's items, and the finalizer goes only after the Job
// succeeded; a failed purge keeps it and says how to retry or give up. A purge that can never
// run, in a namespace being deleted, releases it and says that the items stay. The decision
// goes into s.deletion: Reconcile's deferred status patch writes it, then finishDeletion
// removes the finalizer when the decision says so.
func (r *Reconciler) reconcileDeletion(ctx context.Context, s *scope) (ctrl.Result, error) {
	ma := s.ma
	if !controllerutil.ContainsFinalizer(ma, FinalizerPurgeScope) {
		return ctrl.Result{}, nil
	}
	if _, done := r.purged.Load(ma.UID); done {
		// The finalizer is already removed; the cache has not seen it yet. Acting on this
		// stale copy would create the purge Job again, after the adapter is gone.
		return ctrl.Result{}, nil
	}
	if !render.WantsPurge(ma) {
		// deletionPolicy went back to Retain: the items stay, and so must a purge under way.
		if err := r.deletePurgeJob(ctx, ma); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(ma, nil, corev1.EventTypeNormal, "PurgeSkipped", "RemoveFinalizer",
			"deletionPolicy is %s: the items of scope %q are kept", ma.Spec.DeletionPolicy, ma.Spec.Backend.Scope)
		return ctrl.Result{}, r.setPurgeFinalizer(ctx, ma, false)
	}
	if err := r.stopAdapter(ctx, ma); err != nil {
		return ctrl.Result{}, err
	}
	obs, err := r.observePurge(ctx, ma)
	if err != nil {
		return ctrl.Result{}, err
	}
	action, purged := decidePurge(obs)
	if action == purgeCreateJob {
		if action, purged, err = r.createPurgeJob(ctx, ma, obs); err != nil {
			return ctrl.Result{}, err
		}
	}
	s.deletion = &deletionOutcome{purged: purged, action: action, job: obs.job}
	if action == purgeRelease || action == purgeAbandon {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: purgeRecheck}, nil
}

// createPurgeJob creates the purge Job, and decides again when the namespace refuses it
// because it is being deleted.
func (r *Reconciler) createPurgeJob(ctx context.Context, ma *memoryv1alpha1.MemoryAdapter, obs purgeObservation) (purgeAction, metav1.Condition, error) {
	job := render.PurgeJob(ma, render.EffectiveSettings(ma, r.DefaultImage).Image)
	err := r.Client.Create(ctx, job)
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace will never take the Job: waiting for it would hold the namespace's
		// deletion forever.
		obs.namespaceTerminating = true
	case err != nil && !apierrors.IsAlreadyExists(err):
		return purgeWait, metav1.Condition{}, fmt.Errorf("create purge Job %s: %w", job.Name, err)
	}
	action, purged := decidePurge(obs)
	return action, purged, nil
}

// patchDeletionStatus writes ScopePurged and Available as the deletion phase decided them,
// announcing a new ScopePurged reason as an Event. Nothing is written when the phase decided
// nothing (no finalizer, or the finalizer already released by this process).
func (r *Reconciler) patchDeletionStatus(ctx context.Context, s *scope) error {
	d := s.deletion
	if d == nil {
		return nil
	}
	ma := s.ma
	setCondition(&ma.Status, d.purged, ma.Generation)
	setAvailable(&ma.Status, deletingCondition(d.purged), ma.Generation)
	if equality.Semantic.DeepEqual(s.orig.Status, ma.Status) {
		return nil
	}
	// An Event in a terminating namespace would be refused like the Job; abandonPurge
	// records that one on the namespace instead.
	if old := meta.FindStatusCondition(s.orig.Status.Conditions, d.purged.Type); d.action != purgeAbandon && (old == nil || old.Reason != d.purged.Reason) {
		var related runtime.Object // a nil *Job in the interface would not be nil
		if d.job != nil {
			related = d.job
		}
		r.Recorder.Eventf(ma, related, eventType(d.purged.Status != metav1.ConditionFalse), d.purged.Reason, "Purge", "%s", d.purged.Message)
	}
	// Updates are still accepted in a terminating namespace: the condition is written
	// before the finalizer goes.
	if err := r.Client.Status().Patch(ctx, ma, client.MergeFrom(s.orig), client.FieldOwner(render.FieldOwner)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("patch MemoryAdapter status: %w", err)
	}
	return nil
}

// finishDeletion carries out, after the status patch, a deletion phase's decision to let the
// adapter go: after a purge that succeeded, or without one in a namespace being deleted.
func (r *Reconciler) finishDeletion(ctx context.Context, s *scope) error {
	d := s.deletion
	if d == nil {
		return nil
	}
	ma := s.ma
	switch d.action {
	case purgeRelease:
		// The finalizer first: were it kept by a failed write, a deleted Job would be
		// created again and purge an empty scope once more. A Job left behind by a failed
		// delete here is removed by its TTL.
		if err := r.setPurgeFinalizer(ctx, ma, false); err != nil {
			return err
		}
		r.purged.Store(ma.UID, struct{}{})
		return r.deletePurgeJob(ctx, ma)
	case purgeAbandon:
		return r.abandonPurge(ctx, ma, d.purged)
	}
	return nil
}

// abandonPurge lets a MemoryAdapter go without its purge because its namespace is being
// deleted. The Event is about the Namespace, so it is kept in the default namespace and
// outlives the one deleted: it is where a user looks for what happened to the items.
func (r *Reconciler) abandonPurge(ctx context.Context, ma *memoryv1alpha1.MemoryAdapter, purged metav1.Condition) error {
	note := fmt.Sprintf("MemoryAdapter %s/%s (%s, deletionPolicy Delete) let go without a purge: %s",
		ma.Namespace, ma.Name, ma.Spec.Backend.Type, purged.Message)
	// The adapter as the related object keeps one Event per adapter: the recorder folds Events
	// of the same object, reason and related object into one series, whatever their notes.
	r.Recorder.Eventf(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ma.Namespace}}, ma, corev1.EventTypeWarning,
		memoryv1alpha1.ReasonNamespaceTerminating, "RemoveFinalizer", "%s", cond.Truncate(note, eventNoteLimit))
	logf.FromContext(ctx).Info("Releasing the purge finalizer without a purge: the namespace is being deleted; the scope's items stay on the server",
		"scope", ma.Spec.Backend.Scope, "backend", ma.Spec.Backend.Type)
	if err := r.setPurgeFinalizer(ctx, ma, false); err != nil {
		return err
	}
	r.purged.Store(ma.UID, struct{}{})
	return nil
}

// stopAdapter deletes the adapter's Deployment, whose pods could otherwise store items after
// the purge. It is an action the purge waits on, taken before observing what remains.
func (r *Reconciler) stopAdapter(ctx context.Context, ma *memoryv1alpha1.MemoryAdapter) error {
	dep := &appsv1.Deployment{}
	// Read from the API server: the cache holds only Deployments with the managed-by label,
	// and a pod of one that lost it could still write during the purge.
	err := r.uncached().Get(ctx, types.NamespacedName{Namespace: ma.Namespace, Name: render.DeploymentName(ma)}, dep)
	switch {
	case err == nil && dep.DeletionTimestamp.IsZero() && metav1.IsControlledBy(dep, ma):
		if err := r.Client.Delete(ctx, dep, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("stop the adapter before the purge: %w", err)
		}
		r.Recorder.Eventf(ma, dep, corev1.EventTypeNormal, "StoppedAdapter", "Delete",
			"deleted Deployment %s so that no instance writes to scope %q during the purge", dep.Name, ma.Spec.Backend.Scope)
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("get the adapter Deployment: %w", err)
	}
	return nil
}

// observePurge reads, once the adapter is stopped, the adapter pods that remain and the
// purge Job with its pods.
func (r *Reconciler) observePurge(ctx context.Context, ma *memoryv1alpha1.MemoryAdapter) (purgeObservation, error) {
	o := purgeObservation{scope: ma.Spec.Backend.Scope, jobName: render.PurgeJobName(ma), namespace: ma.Namespace}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, ofAdapter(ma.Namespace, ma.Name, render.SelectorLabels(ma))...); err != nil {
		return o, fmt.Errorf("list adapter pods: %w", err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			o.adapterPods = append(o.adapterPods, p.Name)
		}
	}
	// Jobs are cached as metadata only (slimJobMetadata): the purge Job is read from the API
	// server, only while a purge runs.
	job := &batchv1.Job{}
	err := r.uncached().Get(ctx, types.NamespacedName{Namespace: ma.Namespace, Name: o.jobName}, job)
	switch {
	case apierrors.IsNotFound(err):
		return o, nil
	case err != nil:
		return o, fmt.Errorf("get purge Job %s: %w", o.jobName, err)
	case !job.DeletionTimestamp.IsZero():
		o.jobDeleting = true
		return o, nil
	}
	o.job = job
	jobPods := &corev1.PodList{}
	if err := r.Client.List(ctx, jobPods, ofAdapter(ma.Namespace, ma.Name, client.MatchingLabels{render.LabelAdapter: ma.Name, render.LabelComponent: render.ComponentPurge, batchv1.JobNameLabel: o.jobName})...); err != nil {
		return o, fmt.Errorf("list pods of Job %s: %w", o.jobName, err)
	}
	o.jobPods = jobPods.Items
	return o, nil
}

// deletePurgeJob deletes the purge Job and its pods, if it exists.
func (r *Reconciler) deletePurgeJob(ctx context.Context, ma *memoryv1alpha1.MemoryAdapter) error {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ma.Namespace, Name: render.PurgeJobName(ma)}}
	err := r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete purge Job %s: %w", job.Name, err)
	}
	return nil
}
