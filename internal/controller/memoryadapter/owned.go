package memoryadapter

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	goruntime "runtime"
	"sync"
	"unsafe"
	"weak"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/intern"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// ownedKinds are the kinds ensure keeps at their rendered state, one object of each per
// adapter; an object's index here is its slot in appliedObjects. The Deployment is cached
// typed and slim (slimOwned): the controller reads its status. The others are cached as
// metadata only (metadataKinds).
var ownedKinds = []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ServiceAccount{}, &corev1.ConfigMap{},
	&corev1.PersistentVolumeClaim{}, &networkingv1.NetworkPolicy{}, &policyv1.PodDisruptionBudget{}}

// metadataKinds are the owned kinds the manager caches as metadata only
// (metav1.PartialObjectMetadata, through builder.OnlyMetadata): nothing reads their content
// from the cache, only whether one exists, its resourceVersion, owner references, a claim's
// labels and selected node. A PartialObjectMetadata is 264 bytes where a typed Service is 592;
// the informers hold only the operator's objects of these kinds (CacheOptions), where they
// held every one in the cluster (other applications' ConfigMaps with their data, at first).
// They must never be read typed from the cache: the cache would start a second, typed
// informer of the kind beside the metadata one, holding every object again (the envtest
// suite's cache refuses such a read).
var metadataKinds = []client.Object{&corev1.Service{}, &corev1.ServiceAccount{}, &corev1.ConfigMap{},
	&corev1.PersistentVolumeClaim{}, &networkingv1.NetworkPolicy{}, &policyv1.PodDisruptionBudget{}}

// slimOwned keeps of a cached Deployment the operator owns (its managed-by label says so)
// what the controller reads: its name, UID, resourceVersion, generation, timestamps and owner
// references (the owner's watch maps an event to its adapter through them), its replicas,
// status and pod template annotations; no labels, other annotations or the rest of its spec.
// ensure compares the desired Deployment with a copy read whole from the API server, and only
// when the cached copy's resourceVersion is not the one it last left for the same desired
// object (see createOrUpdate): whole Deployments and their metadata were a large part of the
// manager's heap at 10,000 adapters. The cache holds no other Deployment (CacheOptions), and
// holds these as cachedDeployment, whose reads are Deployments.
func slimOwned(obj any) (any, error) {
	if _, held := obj.(*cachedDeployment); held {
		// A resync hands the transform what the cache already holds.
		return obj, nil
	}
	if d, ok := ours(obj).(*appsv1.Deployment); ok {
		d.Labels, d.Annotations = nil, nil
		return &cachedDeployment{cachedMeta: newCachedMeta(&d.ObjectMeta), replicas: d.Spec.Replicas,
			templateAnnotations: d.Spec.Template.Annotations, status: d.Status}, nil
	}
	return obj, nil
}

// slimMetadata keeps of the cached metadata of an object of a metadataKinds kind that the
// operator owns its name, UID, resourceVersion, generation, timestamps and owner references,
// and, for a claim (claim true), its labels (the claim watch and the node index read them)
// and selected node; no labels or annotations of the others. The cache holds no object the
// operator does not own (CacheOptions).
func slimMetadata(claim bool) func(any) (any, error) {
	return func(obj any) (any, error) {
		if _, held := obj.(*cachedMetadata); held {
			// A resync hands the transform what the cache already holds.
			return obj, nil
		}
		o := ours(obj)
		switch {
		case o == nil:
			return obj, nil
		case claim:
			internLabels(o)
			node := o.GetAnnotations()[annotationSelectedNode]
			o.SetAnnotations(nil)
			if node != "" {
				o.SetAnnotations(map[string]string{annotationSelectedNode: node})
			}
		default:
			o.SetLabels(nil)
			o.SetAnnotations(nil)
		}
		return holdMetadata(obj), nil
	}
}

// holdMetadata is what the cache holds of a PartialObjectMetadata the transforms slimmed: a
// cachedMetadata; anything else as it is.
func holdMetadata(obj any) any {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return &cachedMetadata{cachedMeta: newCachedMeta(&m.ObjectMeta)}
	}
	return obj
}

// ours drops a cached object's managedFields, interns its namespace, and returns it, its
// owner references interned, when the operator owns it (its managed-by label says so); nil
// for another's object or a tombstone.
func ours(obj any) client.Object {
	o, ok := obj.(client.Object)
	if !ok {
		return nil
	}
	o.SetManagedFields(nil)
	o.SetNamespace(intern.Words.Intern(o.GetNamespace()))
	if o.GetLabels()[render.LabelManagedBy] != render.ManagedByValue {
		return nil
	}
	internOwners(o)
	return o
}

// cachedAsMetadata says whether obj's kind is one of metadataKinds.
func cachedAsMetadata(obj client.Object) bool {
	t := reflect.TypeOf(obj)
	for _, k := range metadataKinds {
		if reflect.TypeOf(k) == t {
			return true
		}
	}
	return false
}

// metadataOf is an empty PartialObjectMetadata of obj's kind, to read its cached metadata.
func metadataOf(obj client.Object, scheme *runtime.Scheme) (*metav1.PartialObjectMetadata, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, fmt.Errorf("kind of %T: %w", obj, err)
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m, nil
}

// getCached reads obj's cached copy into obj: for a metadataKinds kind its metadata only, the
// rest of obj left as it was.
func (r *Reconciler) getCached(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	if !cachedAsMetadata(obj) {
		return r.Client.Get(ctx, key, obj)
	}
	m, err := metadataOf(obj, r.Client.Scheme())
	if err != nil {
		return err
	}
	if err := r.Client.Get(ctx, key, m); err != nil {
		return err
	}
	reflect.ValueOf(obj).Elem().FieldByName("ObjectMeta").Set(reflect.ValueOf(m.ObjectMeta))
	return nil
}

// internedLabels are the label keys and values the operator's objects carry by the thousand,
// each the canonical copy a cached object refers to instead of the one decoded with it: a
// decoded label is two allocations, and the adapter's pods, Jobs and claims carry five or
// more.
var internedLabels = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{render.LabelManagedBy, render.ManagedByValue, "app.kubernetes.io/name", "memory-adapter",
		"app.kubernetes.io/instance", render.LabelAdapter, render.LabelComponent, render.ComponentAdapter,
		render.ComponentConformance, render.ComponentPurge, render.LabelBoundTo, appsv1.DefaultDeploymentUniqueLabelKey,
		batchv1.JobNameLabel, batchv1.ControllerUidLabel, "job-name", "controller-uid"} {
		m[s] = s
	}
	return m
}()

// internLabels gives o a copy of its labels whose keys and values are the internedLabels
// copies where there is one, and whose equal values (an adapter's name is both its instance
// and its adapter label; a Job's name its two job-name labels) share one string.
func internLabels(o metav1.Object) {
	l := o.GetLabels()
	if len(l) == 0 {
		return
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		if c, ok := internedLabels[k]; ok {
			k = c
		}
		if c, ok := internedLabels[v]; ok {
			v = c
		} else {
			for _, w := range out {
				if w == v {
					v = w
					break
				}
			}
		}
		out[k] = v
	}
	o.SetLabels(out)
}

// ownerAPIVersion and ownerKind are the owner reference strings of every object an adapter
// owns: a cached object refers to these instead of a decoded copy of its own.
var ownerAPIVersion, ownerKind = memoryv1alpha1.GroupVersion.String(), "MemoryAdapter"

// internOwners makes an object whose one owner is an adapter share that owner reference,
// slice and all, with every other cached object of the same adapter (adapterOwners), and
// its name with the reference's when they are equal. It never writes into a reference list:
// the informer may transform an object twice (a watch list's objects, once as they arrive
// and once as they replace the store's), and the second time the list is the shared one,
// which objects already handed to event handlers hold.
func internOwners(o client.Object) {
	refs := o.GetOwnerReferences()
	if len(refs) != 1 || refs[0].Kind != ownerKind || refs[0].APIVersion != ownerAPIVersion {
		return
	}
	shared := refs
	if !adapterOwners.holds(refs) {
		ref := refs[0]
		ref.APIVersion, ref.Kind = ownerAPIVersion, ownerKind
		shared = adapterOwners.share(ref)
		o.SetOwnerReferences(shared)
	}
	if name := o.GetName(); name == shared[0].Name && unsafe.StringData(name) != unsafe.StringData(shared[0].Name) {
		// Most of an adapter's objects bear its name.
		o.SetName(shared[0].Name)
	}
}

// ownerRefs holds, per adapter UID, the one owner reference list its cached objects share:
// an adapter's Deployment, metadata-only objects and Jobs each decoded a reference of their
// own (a 112-byte slice, the adapter's name and UID), nine or so an adapter. It holds each
// list weakly, so a list lives exactly as long as some cached object refers to it, and its
// entry is removed when the list is collected: no bound is needed and a deleted adapter
// leaves nothing behind. Sharing is safe for the reason package intern gives.
type ownerRefs struct {
	mu   sync.Mutex
	refs map[types.UID]weak.Pointer[[1]metav1.OwnerReference]
}

// adapterOwners is the manager's one ownerRefs, shared by every cache transform.
var adapterOwners = &ownerRefs{refs: map[types.UID]weak.Pointer[[1]metav1.OwnerReference]{}}

// share returns a one-element list equal to {ref}: the list the table holds for ref's UID
// when that is still alive and equal, else a new one it then holds.
func (t *ownerRefs) share(ref metav1.OwnerReference) []metav1.OwnerReference {
	t.mu.Lock()
	defer t.mu.Unlock()
	if held := t.refs[ref.UID].Value(); held != nil && sameOwner(held[0], ref) {
		return held[:]
	}
	list := &[1]metav1.OwnerReference{ref}
	t.refs[ref.UID] = weak.Make(list)
	goruntime.AddCleanup(list, t.collected, ref.UID)
	return list[:]
}

// holds says whether refs is the list the table holds for its owner's UID.
func (t *ownerRefs) holds(refs []metav1.OwnerReference) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	held := t.refs[refs[0].UID].Value()
	return held != nil && &held[0] == &refs[0]
}

// collected removes uid's entry once its list is gone, unless a newer list took its place.
func (t *ownerRefs) collected(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w, ok := t.refs[uid]; ok && w.Value() == nil {
		delete(t.refs, uid)
	}
}

// sameOwner says whether two owner references are equal, their flags compared by value.
func sameOwner(a, b metav1.OwnerReference) bool {
	flag := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		flag(a.Controller, b.Controller) && flag(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
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

// createOrUpdate is controllerutil.CreateOrUpdate for the slim cache. The cached copy (only
// its metadata for a metadataKinds kind) says whether the object exists, and its
// resourceVersion whether it is still as ensure left it for the same desired object; only
// when it may not be is the object read whole from the API server and compared, and updated
// when it differs. So a hand edit is still reverted (it moves the resourceVersion), and a
// steady adapter costs neither a read nor a write. obj ends as the cached copy (its metadata)
// or as the API server returned it.
func (r *Reconciler) createOrUpdate(ctx context.Context, s *scope, obj client.Object, owned bool, mutate func()) (controllerutil.OperationResult, error) {
	key := client.ObjectKeyFromObject(obj)
	desired, err := r.desiredDigest(s, obj, owned, mutate)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	saved := obj.DeepCopyObject()
	err = r.getCached(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(saved).Elem())
		res, err := r.create(ctx, s, obj, owned, mutate, desired)
		if !apierrors.IsAlreadyExists(err) {
			return res, err
		}
		// The cache holds only objects with the managed-by label (CacheOptions): this one
		// lost it (or never had it), so it is read and compared whole below, and the update
		// gives it back the label, which brings it into the cache.
	case err != nil:
		return controllerutil.OperationResultNone, err
	default:
		if prev, ok := r.lastApplied(s, obj); ok && prev == (appliedState{desired: desired, resourceVersion: obj.GetResourceVersion()}) {
			return controllerutil.OperationResultNone, nil
		}
	}
	reader := r.uncached()
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

// uncached reads from the API server, or from the client when the reconciler has no reader
// of its own (tests).
func (r *Reconciler) uncached() client.Reader {
	if r.APIReader == nil {
		return r.Client
	}
	return r.APIReader
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
