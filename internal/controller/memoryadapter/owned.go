package memoryadapter

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// ownedKinds are the kinds ensure keeps at their rendered state, one object of each per
// adapter, cached slim (slimOwned); an object's index here is its slot in appliedObjects.
var ownedKinds = []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ServiceAccount{}, &corev1.ConfigMap{},
	&corev1.PersistentVolumeClaim{}, &networkingv1.NetworkPolicy{}, &policyv1.PodDisruptionBudget{}}

// slimOwned keeps of a cached object the operator owns (its managed-by label says so) what
// the controller reads: its name, UID, resourceVersion, generation, timestamps and owner
// references (the owner's watch maps an event to its adapter through them), a Deployment's
// replicas, status and pod template annotations, and a claim's labels (the claim watch and
// the node index read them) and selected node; no labels, annotations, spec or data of the
// others. ensure compares the desired object with a copy read whole from the API server, and
// only when the cached copy's resourceVersion is not the one it last left for the same
// desired object (see createOrUpdate): whole Deployments, NetworkPolicies, claims and
// ConfigMaps in the cache, and their metadata, were about a third of the manager's heap at
// 10,000 adapters. Other objects of these kinds (the cache holds every one in the cluster)
// lose their managedFields only.
func slimOwned(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	if o.GetLabels()[render.LabelManagedBy] != render.ManagedByValue {
		return obj, nil
	}
	internOwners(o)
	if c, ok := o.(*corev1.PersistentVolumeClaim); ok {
		c.Spec = corev1.PersistentVolumeClaimSpec{}
		node := c.Annotations[annotationSelectedNode]
		c.Annotations = nil
		if node != "" {
			c.Annotations = map[string]string{annotationSelectedNode: node}
		}
		return obj, nil
	}
	o.SetLabels(nil)
	o.SetAnnotations(nil)
	switch t := o.(type) {
	case *appsv1.Deployment:
		t.Spec = appsv1.DeploymentSpec{Replicas: t.Spec.Replicas,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: t.Spec.Template.Annotations}}}
	case *corev1.Service:
		t.Spec = corev1.ServiceSpec{}
	case *corev1.ServiceAccount:
		t.Secrets, t.ImagePullSecrets, t.AutomountServiceAccountToken = nil, nil, nil
	case *corev1.ConfigMap:
		t.Data, t.BinaryData = nil, nil
	case *networkingv1.NetworkPolicy:
		t.Spec = networkingv1.NetworkPolicySpec{}
	case *policyv1.PodDisruptionBudget:
		t.Spec = policyv1.PodDisruptionBudgetSpec{}
	}
	return obj, nil
}

// ownerAPIVersion and ownerKind are the owner reference strings of every object an adapter
// owns: a cached object refers to these instead of a decoded copy of its own.
var ownerAPIVersion, ownerKind = memoryv1alpha1.GroupVersion.String(), "MemoryAdapter"

// internOwners makes o's owner references to a MemoryAdapter share one copy of their
// apiVersion and kind.
func internOwners(o client.Object) {
	refs := o.GetOwnerReferences()
	for i := range refs {
		if refs[i].APIVersion == ownerAPIVersion && refs[i].Kind == ownerKind {
			refs[i].APIVersion, refs[i].Kind = ownerAPIVersion, ownerKind
		}
	}
}

// appliedState is what ensure last left one owned object at: the digest of the desired object
// it compared it with, and the object's resourceVersion then. Any write to the object since,
// by anyone, moves the resourceVersion.
type appliedState struct {
	desired         [16]byte
	resourceVersion string
}

// appliedObjects holds an adapter's appliedState by ownedKinds slot.
type appliedObjects struct {
	mu    sync.Mutex
	slots [7]appliedState
}

// ownedSlot is obj's slot in appliedObjects, or -1 for a kind ensure does not record.
func ownedSlot(obj client.Object) int {
	t := reflect.TypeOf(obj)
	for i, k := range ownedKinds {
		if reflect.TypeOf(k) == t {
			return i
		}
	}
	return -1
}

// desiredDigest runs mutate (and the labels and owner reference ensure adds) on an empty copy
// of obj and hashes the result: the same digest means the same desired object. obj is left
// as it was.
func (r *Reconciler) desiredDigest(s *scope, obj client.Object, owned bool, mutate func()) ([16]byte, error) {
	saved := obj.DeepCopyObject()
	defer reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(saved).Elem())
	if err := r.shape(s, obj, owned, mutate); err != nil {
		return [16]byte{}, err
	}
	b, err := json.Marshal(obj) // struct fields in order, map keys sorted: the same bytes
	if err != nil {
		return [16]byte{}, err
	}
	sum := sha256.Sum256(b)
	return [16]byte(sum[:16]), nil
}

// shape applies mutate, the adapter's common labels and, when owned, its controller
// reference to obj.
func (r *Reconciler) shape(s *scope, obj client.Object, owned bool, mutate func()) error {
	mutate()
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	for k, v := range render.CommonLabels(s.ma) {
		l[k] = v
	}
	obj.SetLabels(l)
	if !owned {
		return nil
	}
	return controllerutil.SetControllerReference(s.ma, obj, r.Client.Scheme())
}

// createOrUpdate is controllerutil.CreateOrUpdate for the slim cache. The cached copy says
// whether the object exists, and its resourceVersion whether it is still as ensure left it
// for the same desired object; only when it may not be is the object read whole from the API
// server and compared, and updated when it differs. So a hand edit is still reverted (it
// moves the resourceVersion), and a steady adapter costs neither a read nor a write. obj ends
// as the cached copy or as the API server returned it.
func (r *Reconciler) createOrUpdate(ctx context.Context, s *scope, obj client.Object, owned bool, mutate func()) (controllerutil.OperationResult, error) {
	key := client.ObjectKeyFromObject(obj)
	desired, err := r.desiredDigest(s, obj, owned, mutate)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	saved := obj.DeepCopyObject()
	err = r.Client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(saved).Elem())
		return r.create(ctx, s, obj, owned, mutate, desired)
	}
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	if prev, ok := r.lastApplied(s, obj); ok && prev == (appliedState{desired: desired, resourceVersion: obj.GetResourceVersion()}) {
		return controllerutil.OperationResultNone, nil
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(saved).Elem())
	err = reader.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(saved).Elem())
		return r.create(ctx, s, obj, owned, mutate, desired)
	}
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	existing := obj.DeepCopyObject()
	if err := r.shape(s, obj, owned, mutate); err != nil {
		return controllerutil.OperationResultNone, err
	}
	res := controllerutil.OperationResultNone
	if !equality.Semantic.DeepEqual(existing, obj) {
		if err := r.Client.Update(ctx, obj); err != nil {
			return controllerutil.OperationResultNone, err
		}
		res = controllerutil.OperationResultUpdated
	}
	r.remember(s, obj, desired)
	return res, nil
}

func (r *Reconciler) create(ctx context.Context, s *scope, obj client.Object, owned bool, mutate func(), desired [16]byte) (controllerutil.OperationResult, error) {
	if err := r.shape(s, obj, owned, mutate); err != nil {
		return controllerutil.OperationResultNone, err
	}
	if err := r.Client.Create(ctx, obj); err != nil {
		return controllerutil.OperationResultNone, err
	}
	r.remember(s, obj, desired)
	return controllerutil.OperationResultCreated, nil
}

// lastApplied is what ensure last left obj at, if it recorded it.
func (r *Reconciler) lastApplied(s *scope, obj client.Object) (appliedState, bool) {
	slot := ownedSlot(obj)
	v, ok := r.applied.Load(client.ObjectKeyFromObject(s.ma))
	if slot < 0 || !ok {
		return appliedState{}, false
	}
	a := v.(*appliedObjects)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.slots[slot], true
}

// remember records that obj, as the API server returned it, is what desired renders to.
func (r *Reconciler) remember(s *scope, obj client.Object, desired [16]byte) {
	slot := ownedSlot(obj)
	if slot < 0 {
		return
	}
	v, _ := r.applied.LoadOrStore(client.ObjectKeyFromObject(s.ma), &appliedObjects{})
	a := v.(*appliedObjects)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.slots[slot] = appliedState{desired: desired, resourceVersion: obj.GetResourceVersion()}
}
