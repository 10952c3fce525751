package memoryadapter

import (
	"context"
	"fmt"
	"maps"
	goruntime "runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/health"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

func TestSlimOwnedKeepsWhatTheControllerReads(t *testing.T) {
	ours := map[string]string{render.LabelManagedBy: render.ManagedByValue, render.LabelAdapter: "a"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: ours, Generation: 3, ResourceVersion: "9",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: ours, Annotations: map[string]string{render.AnnotationRestartedFor: "16.4"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "adapter", Image: "img"}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, AvailableReplicas: 2},
	}
	got, err := slimOwned(dep.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	held := got.(*cachedDeployment)
	d := held.DeepCopyObject().(*appsv1.Deployment)
	if again, _ := slimOwned(held); again != held {
		t.Error("a resync's second transform changed what the cache holds")
	}
	// A copy is the reader's own.
	scratch := held.DeepCopyObject().(*appsv1.Deployment)
	*scratch.Spec.Replicas = 7
	scratch.Spec.Template.Annotations[render.AnnotationRestartedFor] = "changed"
	scratch.Status.AvailableReplicas = 7
	if !equality.Semantic.DeepEqual(held.DeepCopyObject(), d) {
		t.Errorf("a change to a read copy reached the cache: %+v", held.DeepCopyObject())
	}
	if d.Spec.Template.Spec.Containers != nil || *d.Spec.Replicas != 2 || d.Spec.Template.Annotations[render.AnnotationRestartedFor] != "16.4" ||
		d.Status.AvailableReplicas != 2 || d.Generation != 3 || d.ResourceVersion != "9" || d.Labels != nil || d.ManagedFields != nil {
		t.Errorf("slim Deployment %+v", d)
	}

	// Another's Deployment is read whole by whoever reads it: only managedFields go.
	theirs := dep.DeepCopy()
	theirs.Labels = map[string]string{"app": "x"}
	if got, _ := slimOwned(theirs); got.(*appsv1.Deployment).Spec.Template.Spec.Containers == nil || got.(*appsv1.Deployment).ManagedFields != nil {
		t.Errorf("another's Deployment changed: %+v", got)
	}
	if o, _ := slimOwned("tombstone"); o != "tombstone" {
		t.Error("a tombstone was changed")
	}
	for _, o := range ownedKinds {
		if ownedSlot(o) < 0 || ownedSlot(o) >= len(appliedObjects{}.slots) {
			t.Errorf("%T has no slot", o)
		}
	}
}

func TestSlimMetadataKeepsWhatTheControllerReads(t *testing.T) {
	ours := map[string]string{render.LabelManagedBy: render.ManagedByValue, render.LabelAdapter: "a"}
	owner := []metav1.OwnerReference{{APIVersion: "memory.agentmem.io/v1alpha1", Kind: "MemoryAdapter", Name: "a", UID: "u", Controller: ptr.To(true)}}
	meta := func(labels, annotations map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "x", ResourceVersion: "9",
			Labels: labels, Annotations: annotations, OwnerReferences: owner, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	}
	for _, tc := range []struct {
		name           string
		claim          bool
		in             *metav1.PartialObjectMetadata
		wantLabels     map[string]string
		wantAnnotation map[string]string
	}{
		{name: "our Service", in: meta(ours, map[string]string{"a": "b"})},
		// A claim keeps its labels, which its watch and the node index read, and its node.
		{name: "our claim", claim: true, in: meta(ours, map[string]string{annotationSelectedNode: "n1", "pv.kubernetes.io/bind-completed": "yes"}),
			wantLabels: ours, wantAnnotation: map[string]string{annotationSelectedNode: "n1"}},
		{name: "our claim before scheduling", claim: true, in: meta(ours, map[string]string{"k": "v"}), wantLabels: ours},
		// Another's object keeps its metadata but managedFields.
		{name: "another's ConfigMap", in: meta(map[string]string{"app": "x"}, map[string]string{"k": "v"}),
			wantLabels: map[string]string{"app": "x"}, wantAnnotation: map[string]string{"k": "v"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := slimMetadata(tc.claim)(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			// Ours is held as a cachedMetadata, another's as it came; a read is a copy.
			if _, held := got.(*cachedMetadata); held == (tc.name == "another's ConfigMap") {
				t.Errorf("held as %T", got)
			}
			m := got.(runtime.Object).DeepCopyObject().(*metav1.PartialObjectMetadata)
			if m.ManagedFields != nil || m.ResourceVersion != "9" || m.UID != "x" || !metav1.IsControlledBy(m, &metav1.ObjectMeta{UID: "u"}) ||
				!maps.Equal(m.Labels, tc.wantLabels) || !maps.Equal(m.Annotations, tc.wantAnnotation) {
				t.Errorf("slim metadata %+v", m.ObjectMeta)
			}
		})
	}
	if o, _ := slimMetadata(false)("tombstone"); o != "tombstone" {
		t.Error("a tombstone was changed")
	}
	// The Deployment's status is read from the cache; every other kind ensure keeps is cached
	// as metadata only.
	for _, o := range ownedKinds {
		_, dep := o.(*appsv1.Deployment)
		if cachedAsMetadata(o) == dep {
			t.Errorf("%T cached as metadata: %v", o, cachedAsMetadata(o))
		}
	}
}

// metadataOnlyCache is a client whose reads refuse a typed object of a metadataKinds kind, as
// the manager's cache does not hold them typed.
type metadataOnlyCache struct {
	client.Client
}

func (c metadataOnlyCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if cachedAsMetadata(obj) {
		return fmt.Errorf("%T read typed from the cache", obj)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestEnsureReadsWholeOnlyWhatChanged: ensure reads an object whole from the API server only
// when its resourceVersion is not the one ensure left it at for the same desired object, and
// still reverts another's edit and follows a change of the desired object.
func TestEnsureReadsWholeOnlyWhatChanged(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, memoryv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	reader := &countingReader{Reader: c}
	r := &Reconciler{Client: metadataOnlyCache{c}, APIReader: reader, Recorder: events.NewFakeRecorder(100), Prober: &health.Prober{}}
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u1"}}
	s := &scope{ma: ma}
	ctx := context.Background()
	value := "1"
	ensure := func() *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-manifest"}}
		if err := r.ensure(ctx, s, cm, true, func() { cm.Data = map[string]string{"k": value} }); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	live := func() *corev1.ConfigMap {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "a-manifest"}, cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}

	ensure()
	if cm := live(); cm.Data["k"] != "1" || !metav1.IsControlledBy(cm, ma) || cm.Labels[render.LabelAdapter] != "a" {
		t.Fatalf("created %+v", cm)
	}
	rv := live().ResourceVersion
	ensure()
	if reader.gets != 0 || live().ResourceVersion != rv {
		t.Errorf("an unchanged object was read whole %d times or written", reader.gets)
	}

	edited := live()
	edited.Data["k"] = "by hand"
	if err := c.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	ensure()
	if reader.gets != 1 || live().Data["k"] != "1" {
		t.Errorf("a hand edit: %d reads, data %v", reader.gets, live().Data)
	}
	ensure()
	if reader.gets != 1 {
		t.Errorf("the repaired object was read again")
	}

	value = "2"
	ensure()
	if reader.gets != 2 || live().Data["k"] != "2" {
		t.Errorf("a new desired object: %d reads, data %v", reader.gets, live().Data)
	}

	// A fresh process remembers nothing: one read, no write.
	rv = live().ResourceVersion
	r2 := &Reconciler{Client: metadataOnlyCache{c}, APIReader: reader, Recorder: events.NewFakeRecorder(100)}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-manifest"}}
	if err := r2.ensure(ctx, s, cm, true, func() { cm.Data = map[string]string{"k": value} }); err != nil {
		t.Fatal(err)
	}
	if reader.gets != 3 || live().ResourceVersion != rv {
		t.Errorf("a fresh process: %d reads, resourceVersion %s → %s", reader.gets, rv, live().ResourceVersion)
	}

	r.forget(client.ObjectKeyFromObject(ma))
	if _, ok := r.applied.Load(client.ObjectKeyFromObject(ma)); ok {
		t.Error("forget kept the adapter's record")
	}
}

// labelledCache is metadataOnlyCache holding only objects with the managed-by label, as the
// manager's cache does for the owned kinds.
type labelledCache struct {
	metadataOnlyCache
}

func (c labelledCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.metadataOnlyCache.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if obj.GetLabels()[render.LabelManagedBy] != render.ManagedByValue {
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	}
	return nil
}

// TestEnsureAdoptsAnObjectTheCacheDoesNotHold: an object of the adapter's without the
// managed-by label (removed by hand) is not in the cache; ensure must take it back, labelled
// and owned, rather than fail on its create or make a second one.
func TestEnsureAdoptsAnObjectTheCacheDoesNotHold(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, memoryv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-manifest", Labels: map[string]string{"kept": "yes"}},
		Data: map[string]string{"k": "old"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(old).Build()
	reader := &countingReader{Reader: c}
	r := &Reconciler{Client: labelledCache{metadataOnlyCache{c}}, APIReader: reader, Recorder: events.NewFakeRecorder(100), Prober: &health.Prober{}}
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u1"}}
	s := &scope{ma: ma}
	ctx := context.Background()
	ensure := func() {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-manifest"}}
		if err := r.ensure(ctx, s, cm, true, func() { cm.Data = map[string]string{"k": "new"} }); err != nil {
			t.Fatal(err)
		}
	}
	ensure()
	cms := &corev1.ConfigMapList{}
	if err := c.List(ctx, cms); err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 1 {
		t.Fatalf("%d ConfigMaps, want the one adopted", len(cms.Items))
	}
	cm := cms.Items[0]
	if cm.Labels[render.LabelManagedBy] != render.ManagedByValue || cm.Labels["kept"] != "yes" || !metav1.IsControlledBy(&cm, ma) || cm.Data["k"] != "new" {
		t.Errorf("not adopted: %+v", cm)
	}
	// Labelled now, it is in the cache: the next ensure neither reads it whole nor writes it.
	gets, rv := reader.gets, cm.ResourceVersion
	ensure()
	if err := c.Get(ctx, client.ObjectKeyFromObject(&cm), &cm); err != nil {
		t.Fatal(err)
	}
	if reader.gets != gets || cm.ResourceVersion != rv {
		t.Errorf("the adopted object was read whole again (%d → %d) or written (%s → %s)", gets, reader.gets, rv, cm.ResourceVersion)
	}
}

// TestCacheOptionsHoldOnlyTheOperatorsOwnedObjects: the Deployment cache and the metadata
// caches select the managed-by label.
func TestCacheOptionsHoldOnlyTheOperatorsOwnedObjects(t *testing.T) {
	opts := CacheOptions().ByObject
	for _, kind := range append([]client.Object{&appsv1.Deployment{}}, metadataKinds...) {
		found := false
		for o, by := range opts {
			if fmt.Sprintf("%T", o) != fmt.Sprintf("%T", kind) {
				continue
			}
			found = true
			if by.Label == nil || !by.Label.Matches(labels.Set{render.LabelManagedBy: render.ManagedByValue, "other": "x"}) ||
				by.Label.Matches(labels.Set{render.LabelAdapter: "a"}) {
				t.Errorf("%T: cache selector %v", kind, by.Label)
			}
		}
		if !found {
			t.Errorf("%T: no cache options", kind)
		}
	}
}

// An adapter's cached objects share one owner reference list, which the table forgets once no
// cached object holds it; a reference that differs in anything keeps a list of its own.
func TestCachedObjectsShareTheirAdaptersOwnerReference(t *testing.T) {
	owner := func(uid string, controller bool) []metav1.OwnerReference {
		// Strings of their own, as a decoder leaves them.
		return []metav1.OwnerReference{{APIVersion: string([]byte(ownerAPIVersion)), Kind: string([]byte(ownerKind)),
			Name: string([]byte("mem-1")), UID: types.UID([]byte(uid)), Controller: ptr.To(controller), BlockOwnerDeletion: ptr.To(true)}}
	}
	uid := fmt.Sprintf("owner-test-%d", time.Now().UnixNano())
	object := func(refs []metav1.OwnerReference) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: string([]byte("mem-1")), Labels: map[string]string{render.LabelManagedBy: render.ManagedByValue}, OwnerReferences: refs}}
		internOwners(o)
		return o
	}
	a, b := object(owner(uid, true)), object(owner(uid, true))
	if &a.OwnerReferences[0] != &b.OwnerReferences[0] {
		t.Fatal("two objects of one adapter hold two owner reference lists")
	}
	if unsafe.StringData(a.Name) != unsafe.StringData(b.OwnerReferences[0].Name) {
		t.Error("an object named as its adapter holds a copy of the name")
	}
	// The informer may transform an object again; that must not write into the list the
	// adapter's other objects, already with event handlers, share (make test runs -race).
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			_ = b.OwnerReferences[0].APIVersion + b.OwnerReferences[0].Name
		}
	}()
	for range 1000 {
		internOwners(a)
	}
	<-done
	if &a.OwnerReferences[0] != &b.OwnerReferences[0] {
		t.Error("a second transform gave the object another list")
	}
	if c := object(owner(uid, false)); &c.OwnerReferences[0] == &a.OwnerReferences[0] || *c.OwnerReferences[0].Controller {
		t.Errorf("a reference that differs was shared: %+v", c.OwnerReferences[0])
	}
	two := object(append(owner(uid, true), owner("other", true)...))
	if len(two.OwnerReferences) != 2 || &two.OwnerReferences[0] == &a.OwnerReferences[0] {
		t.Errorf("two owners were replaced: %+v", two.OwnerReferences)
	}
	a, b = nil, nil
	gomega.NewWithT(t).Eventually(func() bool {
		goruntime.GC()
		adapterOwners.mu.Lock()
		defer adapterOwners.mu.Unlock()
		_, held := adapterOwners.refs[types.UID(uid)]
		return held
	}).WithTimeout(5*time.Second).WithPolling(10*time.Millisecond).Should(gomega.BeFalse(),
		"the table still holds a list no object refers to")
}
