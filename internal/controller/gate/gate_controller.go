package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/agentmem/memory-adapter-operator/api/requirements"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/webhook"
)

// AnnotationGateMessage records on a gated pod why it is still gated, as last announced by an
// Event: a new Event is recorded only when the reason changes, and the annotation survives a
// manager restart, so a restart does not repeat every pod's Event.
const AnnotationGateMessage = "memory.agentmem.io/gate-message"

// Reconciler lifts the adapter-ready scheduling gate of the pods bound to one MemoryAdapter.
type Reconciler struct {
	// Client reads through the manager's cache (pods carrying the adapter label only, see
	// memoryadapter.CacheOptions) and writes to the API server.
	Client client.Client
	// APIReader reads the adapter from the API server, past the cache, right before a gate is
	// removed: releasing on a stale cached Available=True would let a pod run against an
	// adapter that has just become unavailable.
	APIReader client.Reader
	// Recorder records the Events on gated and released pods.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=memory.agentmem.io,resources=memoryadapters,verbs=get;list;watch
// +kubebuilder:rbac:groups=memory.agentmem.io,resources=memoryadapters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile decides for every pod bound to the adapter named by req, lifts the gates it may,
// announces why the others wait, and records the counts in the adapter's status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	ma, err := r.cachedAdapter(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(req.Namespace), client.MatchingFields{memoryadapter.IndexBoundTo: req.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list bound pods: %w", err)
	}
	var counts memoryv1alpha1.WorkloadCounts
	var errs []error
	// confirmed is set once ma has been re-read from the API server in this reconcile.
	confirmed := false
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !gated(pod) {
			counts.Released++
			continue
		}
		if !pod.DeletionTimestamp.IsZero() {
			counts.Gated++
			continue
		}
		bp := boundPod{requires: pod.Annotations[requirements.AnnotationRequires],
			serviceAccount: webhook.ServiceAccountOf(pod), secret: webhook.MountedBindingSecret(pod, req.Name)}
		v := decide(req.Name, ma, bp)
		if v.release && !confirmed {
			live, err := r.liveAdapter(ctx, req.NamespacedName)
			if err != nil {
				return ctrl.Result{}, err
			}
			ma, confirmed = live, true
			v = decide(req.Name, ma, bp)
		}
		released, err := r.apply(ctx, pod, ma, v)
		if err != nil {
			errs = append(errs, err)
		}
		if released {
			log.Info("Released pod", "pod", klog.KObj(pod))
			counts.Released++
		} else {
			counts.Gated++
		}
	}
	if ma != nil {
		if err := r.patchCounts(ctx, ma, counts); err != nil {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// cachedAdapter reads the adapter from the cache; nil when it is gone or being deleted, for
// which every bound pod waits.
func (r *Reconciler) cachedAdapter(ctx context.Context, key types.NamespacedName) (*memoryv1alpha1.MemoryAdapter, error) {
	ma := &memoryv1alpha1.MemoryAdapter{}
	switch err := r.Client.Get(ctx, key, ma); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get MemoryAdapter: %w", err)
	case !ma.DeletionTimestamp.IsZero():
		return nil, nil
	}
	return ma, nil
}

// liveAdapter reads the adapter from the API server; nil when it is gone or being deleted.
func (r *Reconciler) liveAdapter(ctx context.Context, key types.NamespacedName) (*memoryv1alpha1.MemoryAdapter, error) {
	ma := &memoryv1alpha1.MemoryAdapter{}
	if err := r.APIReader.Get(ctx, key, ma); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read MemoryAdapter from the API server: %w", err)
	}
	if !ma.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return ma, nil
}

// gated reports whether the pod still carries the webhook's scheduling gate.
func gated(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == webhook.GateName })
}

// apply carries out a verdict on one gated pod: it removes the gate, or records the reason
// (annotation and Event) when it changed. It reports whether the gate was removed.
func (r *Reconciler) apply(ctx context.Context, pod *corev1.Pod, ma *memoryv1alpha1.MemoryAdapter, v verdict) (bool, error) {
	if !v.release && pod.Annotations[AnnotationGateMessage] == v.message {
		return false, nil
	}
	orig := pod.DeepCopy()
	if v.release {
		pod.Spec.SchedulingGates = slices.DeleteFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == webhook.GateName })
		delete(pod.Annotations, AnnotationGateMessage)
	} else {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[AnnotationGateMessage] = v.message
	}
	// The optimistic lock makes a concurrent change to the pod (another writer of its gates)
	// fail this patch and requeue, instead of being overwritten by a whole-list merge patch.
	if err := r.Client.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("patch pod %s: %w", pod.Name, err)
	}
	// A nil *MemoryAdapter in the interface would not be a nil related object.
	var related runtime.Object
	if ma != nil {
		related = ma
	}
	if v.release {
		r.Recorder.Eventf(pod, related, corev1.EventTypeNormal, ReasonAdapterReady, "RemoveSchedulingGate", "%s", v.message)
	} else {
		r.Recorder.Eventf(pod, related, corev1.EventTypeWarning, ReasonWaitingForAdapter, "KeepSchedulingGate", "%s", v.message)
	}
	return v.release, nil
}

// FieldOwner is the field manager of the one status field the gate controller writes,
// status.workloads. It is not the MemoryAdapter controller's: each status field has one
// writer, and the API server's managedFields say which.
const FieldOwner = "memory-adapter-operator-gate"

// patchCounts applies status.workloads when the counts changed. It is a server-side apply of
// that field alone under FieldOwner, so the field has one owner: the MemoryAdapter
// controller's merge patches never carry it (it never changes it), and this apply can carry
// nothing else.
func (r *Reconciler) patchCounts(ctx context.Context, ma *memoryv1alpha1.MemoryAdapter, counts memoryv1alpha1.WorkloadCounts) error {
	if ma.Status.Workloads != nil && *ma.Status.Workloads == counts {
		return nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": memoryv1alpha1.GroupVersion.String(),
		"kind":       "MemoryAdapter",
		"metadata":   map[string]any{"name": ma.Name, "namespace": ma.Namespace},
		"status": map[string]any{"workloads": map[string]any{
			"gated": int64(counts.Gated), "released": int64(counts.Released),
		}},
	}}
	err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("apply MemoryAdapter workload counts: %w", err)
	}
	return nil
}

// SetupWithManager registers the controller, keyed by adapter: a change to an adapter (its
// conditions, its conformance run) or to a pod bound to it reconciles that adapter's pods.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	podToAdapter := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[render.LabelBoundTo]
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	})
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, memoryadapter.IndexBoundTo, memoryadapter.LabelIndexer(render.LabelBoundTo)); err != nil {
		return fmt.Errorf("index pods by bound adapter: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&memoryv1alpha1.MemoryAdapter{}).
		Watches(&corev1.Pod{}, podToAdapter).
		Named("gate").
		Complete(r)
}
