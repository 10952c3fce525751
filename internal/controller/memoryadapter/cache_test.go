package memoryadapter

import (
	"maps"
	"testing"
	"unsafe"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/health"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

func TestSlimPodKeepsWhatTheControllersRead(t *testing.T) {
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{render.LabelAdapter: "a"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "adapter", Image: "img", Args: []string{"serve"},
				Env:   []corev1.EnvVar{{Name: "X", Value: "y"}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}},
			Volumes:         []corev1.Volume{{Name: "data"}},
			Tolerations:     []corev1.Toleration{{Key: "k"}},
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "memory.agentmem.io/adapter-ready"}},
			NodeName:        "n1",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7", HostIP: "192.168.0.2",
			PodIPs: []corev1.PodIP{{IP: "10.0.0.7"}}, QOSClass: corev1.PodQOSBurstable, StartTime: &metav1.Time{},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "adapter", RestartCount: 3, Ready: true, Image: "img",
				ImageID: "img@sha256:00", ContainerID: "containerd://00", Started: ptr.To(true),
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "boom"}}}}},
	}
	// What the controllers read of the status: phase, address, the conditions that are not
	// True, and per container its name, readiness, restarts and states.
	wantStatus := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7",
		Conditions: full.Status.Conditions[1:],
		ContainerStatuses: []corev1.ContainerStatus{{Name: "adapter", RestartCount: 3, Ready: true,
			State: full.Status.ContainerStatuses[0].State, LastTerminationState: full.Status.ContainerStatuses[0].LastTerminationState}}}
	got, err := slimPod(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	// The cache holds a cachedPod and hands out its copies, which are Pods.
	held := got.(*cachedPod)
	p := held.DeepCopyObject().(*corev1.Pod)
	if again, _ := slimPod(held); again != held {
		t.Error("a resync's second transform changed what the cache holds")
	}
	// A copy is the reader's own: changing it leaves what the cache holds as it was.
	scratch := held.DeepCopyObject().(*corev1.Pod)
	scratch.Labels[render.LabelAdapter] = "b"
	scratch.Spec.Containers[0].Ports[0].ContainerPort = 1
	scratch.Status.ContainerStatuses[0].State.Waiting.Reason = "changed"
	scratch.Status.Conditions[0].Message = "changed"
	if !equality.Semantic.DeepEqual(held.DeepCopyObject(), p) {
		t.Errorf("a change to a read copy reached the cache: %+v", held.DeepCopyObject())
	}
	want := corev1.PodSpec{
		Containers:      []corev1.Container{{Name: "adapter", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}},
		SchedulingGates: full.Spec.SchedulingGates, NodeName: "n1",
	}
	if !equality.Semantic.DeepEqual(p.Spec, want) {
		t.Errorf("spec %+v, want %+v", p.Spec, want)
	}
	if !equality.Semantic.DeepEqual(p.Status, wantStatus) || p.ManagedFields != nil || p.Labels[render.LabelAdapter] != "a" {
		t.Errorf("status, labels or managedFields changed: %+v", p)
	}
	if eps := health.PodEndpoints([]corev1.Pod{*p}, "http", render.AdapterPort); len(eps) != 1 || eps[0].URL != "http://10.0.0.7:8080" {
		t.Errorf("endpoints of the slim pod: %+v", eps)
	}
	// The gate controller lifts its gate with a merge patch between two cached (slim) copies:
	// the patch must name the gates and nothing the cache left out.
	lifted := p.DeepCopy()
	lifted.Spec.SchedulingGates = nil
	patch, err := client.MergeFrom(p).Data(lifted)
	if err != nil {
		t.Fatal(err)
	}
	if string(patch) != `{"spec":{"schedulingGates":null}}` {
		t.Errorf("merge patch %s", patch)
	}
	// Every adapter's pod has the same containers: the cached pods share one list of them,
	// and a pod whose ports differ in anything keeps its own.
	again, err := slimPod(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if &again.(*cachedPod).containers[0] != &held.containers[0] {
		t.Error("two pods with equal containers hold two lists")
	}
	other := full.DeepCopy()
	other.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolUDP
	if o, err := slimPod(other); err != nil || &o.(*cachedPod).containers[0] == &held.containers[0] ||
		o.(*cachedPod).containers[0].Ports[0].Protocol != corev1.ProtocolUDP {
		t.Errorf("a pod with other ports shares the list: %v", err)
	}
	// Tombstones and other kinds pass through untouched.
	if o, _ := slimPod("tombstone"); o != "tombstone" {
		t.Errorf("non-pod changed: %v", o)
	}
}

func TestSlimJobMetadataKeepsLabelsAndOwners(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: ownerAPIVersion, Kind: ownerKind, Name: "a", UID: "u"}
	j := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "run", ResourceVersion: "9",
		Labels:          map[string]string{render.LabelManagedBy: render.ManagedByValue, render.LabelAdapter: "a", render.LabelComponent: render.ComponentPurge},
		Annotations:     map[string]string{"note": "x"},
		OwnerReferences: []metav1.OwnerReference{owner}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kcm"}}}}
	got, err := slimJobMetadata(j.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	// The cache holds a cachedMetadata, whose reads are PartialObjectMetadata.
	m := got.(*cachedMetadata).DeepCopyObject().(*metav1.PartialObjectMetadata)
	if again, _ := slimJobMetadata(got); again != got {
		t.Error("a resync's second transform changed what the cache holds")
	}
	// The purge watch's predicate and the owner watch read the labels and owner references.
	if !maps.Equal(m.Labels, j.Labels) || len(m.OwnerReferences) != 1 || m.OwnerReferences[0] != owner || m.ResourceVersion != "9" {
		t.Errorf("slim job metadata lost what the watches read: %+v", m.ObjectMeta)
	}
	if m.Annotations != nil || m.ManagedFields != nil {
		t.Errorf("slim job metadata keeps annotations or managedFields: %+v", m.ObjectMeta)
	}
	if o, _ := slimJobMetadata("tombstone"); o != "tombstone" {
		t.Errorf("non-object changed: %v", o)
	}
}

// Jobs are cached as metadata only, and only the operator's: a typed Job read from the cache
// would start a typed informer holding whole Jobs again.
func TestCacheOptionsHoldJobsAsTheOperatorsMetadata(t *testing.T) {
	var found bool
	for o, by := range CacheOptions().ByObject {
		if _, ok := o.(*batchv1.Job); !ok {
			continue
		}
		found = true
		if by.Label == nil || !by.Label.Matches(labels.Set{render.LabelManagedBy: render.ManagedByValue}) || by.Label.Matches(labels.Set{}) {
			t.Errorf("Job cache selects %v, want the managed-by label", by.Label)
		}
		if by.Transform == nil {
			t.Error("Job cache has no transform")
		}
	}
	if !found {
		t.Error("CacheOptions has no Job entry")
	}
}

func TestSlimNodeKeepsOnlyReady(t *testing.T) {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}
	full := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}, ResourceVersion: "7"},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, ready},
			Images:     []corev1.ContainerImage{{Names: []string{"img"}, SizeBytes: 1}},
		},
	}
	got, err := slimNode(full)
	if err != nil {
		t.Fatal(err)
	}
	n := got.(*corev1.Node)
	if n.Name != "n1" || n.ResourceVersion != "7" || n.Labels != nil || n.Status.Images != nil ||
		len(n.Status.Conditions) != 1 || n.Status.Conditions[0] != ready || nodeReady(n) != corev1.ConditionUnknown {
		t.Errorf("slim node %+v", n)
	}
	if o, _ := slimNode("tombstone"); o != "tombstone" {
		t.Error("a tombstone was changed")
	}
}

// TestInternLabelsSharesTheStrings: after the cache's transforms, the labels of the adapter's
// pods and Jobs refer to one copy of each known key and value, and a value repeated within
// an object to one copy, rather than to the strings each decode made.
func TestInternLabelsSharesTheStrings(t *testing.T) {
	// decoded makes a label string with storage of its own, as a decoder does.
	decoded := func(s string) string { return string([]byte(s)) }
	labels := func() map[string]string {
		return map[string]string{
			decoded(render.LabelManagedBy): decoded(render.ManagedByValue), decoded(render.LabelAdapter): decoded("mem-1"),
			decoded("app.kubernetes.io/instance"): decoded("mem-1"), decoded(render.LabelComponent): decoded(render.ComponentConformance),
			decoded("other"): decoded("x"),
		}
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	for _, tc := range []struct {
		name      string
		transform func(any) (any, error)
		obj       client.Object
	}{
		{"pod", slimPod, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels()}}},
		{"job", slimJobMetadata, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: labels()}}},
		{"claim", slimMetadata(true), &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: labels()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := labels()
			got, err := tc.transform(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			l := got.(client.Object).GetLabels()
			if !maps.Equal(l, want) {
				t.Fatalf("labels %v, want %v", l, want)
			}
			for k, v := range l {
				if c, ok := internedLabels[k]; !ok && k != "other" || ok && !same(k, c) {
					t.Errorf("key %q not interned", k)
				}
				if c, ok := internedLabels[v]; ok && !same(v, c) {
					t.Errorf("value %q of %q not interned", v, k)
				}
			}
			if !same(l[render.LabelAdapter], l["app.kubernetes.io/instance"]) {
				t.Error("the adapter's name is held twice")
			}
		})
	}
}

// TestPodCacheLeavesTheRunsOut: the Pod cache holds the adapter's and the purge's pods and the
// workloads bound to an adapter, but neither the conformance runs' pods (read from the API
// server while a run runs) nor pods of no adapter.
func TestPodCacheLeavesTheRunsOut(t *testing.T) {
	var sel labels.Selector
	for o, by := range CacheOptions().ByObject {
		if _, ok := o.(*corev1.Pod); ok {
			sel = by.Label
		}
	}
	if sel == nil {
		t.Fatal("the Pod cache has no selector")
	}
	for _, tc := range []struct {
		labels labels.Set
		cached bool
	}{
		{labels.Set{render.LabelAdapter: "a", render.LabelComponent: render.ComponentAdapter}, true},
		{labels.Set{render.LabelAdapter: "a", render.LabelComponent: render.ComponentPurge}, true},
		{labels.Set{render.LabelAdapter: "a", render.LabelBoundTo: "a"}, true},
		{labels.Set{render.LabelAdapter: "a", render.LabelComponent: render.ComponentConformance}, false},
		{labels.Set{"app": "other"}, false},
	} {
		if got := sel.Matches(tc.labels); got != tc.cached {
			t.Errorf("pod labelled %v cached: %v, want %v", tc.labels, got, tc.cached)
		}
	}
}
