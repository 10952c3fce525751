package memoryadapter

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fullMeta is an ObjectMeta with every field set.
func fullMeta() metav1.ObjectMeta {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	return metav1.ObjectMeta{Name: "a", GenerateName: "a-", Namespace: "ns", UID: "u", ResourceVersion: "9",
		Generation: 4, CreationTimestamp: now, DeletionTimestamp: &now, DeletionGracePeriodSeconds: ptr.To[int64](30),
		Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "2"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: ownerAPIVersion, Kind: ownerKind, Name: "a", UID: "o"}},
		Finalizers:      []string{"f"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}
}

// kept is m without the fields cachedMeta leaves out.
func kept(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.GenerateName, m.DeletionGracePeriodSeconds, m.ManagedFields = "", nil, nil
	return m
}

func TestCachedMetaAnswersAsObjectMeta(t *testing.T) {
	om := fullMeta()
	cm := newCachedMeta(&om)
	want := kept(fullMeta())
	if got := cm.objectMeta(); !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("kept %+v, want %+v", got, want)
	}
	// Every getter answers what the kept ObjectMeta's does, and every setter of a kept field
	// sets it: a handler or index reading the cached object through metav1.Object sees what
	// it saw of the API type.
	var c, o metav1.Object = &cm, &want
	check := func(when string) {
		t.Helper()
		if c.GetName() != o.GetName() || c.GetNamespace() != o.GetNamespace() || c.GetUID() != o.GetUID() ||
			c.GetResourceVersion() != o.GetResourceVersion() || c.GetGeneration() != o.GetGeneration() ||
			c.GetGenerateName() != o.GetGenerateName() || c.GetSelfLink() != o.GetSelfLink() ||
			!ptr.To(c.GetCreationTimestamp()).Equal(ptr.To(o.GetCreationTimestamp())) || !c.GetDeletionTimestamp().Equal(o.GetDeletionTimestamp()) ||
			c.GetDeletionGracePeriodSeconds() != o.GetDeletionGracePeriodSeconds() ||
			!equality.Semantic.DeepEqual(c.GetLabels(), o.GetLabels()) || !equality.Semantic.DeepEqual(c.GetAnnotations(), o.GetAnnotations()) ||
			!equality.Semantic.DeepEqual(c.GetOwnerReferences(), o.GetOwnerReferences()) ||
			!equality.Semantic.DeepEqual(c.GetFinalizers(), o.GetFinalizers()) || c.GetManagedFields() != nil {
			t.Errorf("%s: cached %+v, ObjectMeta %+v", when, cm.objectMeta(), want)
		}
	}
	check("as kept")
	later := metav1.NewTime(time.Unix(1800000000, 0))
	for _, m := range []metav1.Object{c, o} {
		m.SetName("b")
		m.SetNamespace("ns2")
		m.SetUID("u2")
		m.SetResourceVersion("10")
		m.SetGeneration(5)
		m.SetCreationTimestamp(later)
		m.SetDeletionTimestamp(nil)
		m.SetLabels(map[string]string{"l": "3"})
		m.SetAnnotations(nil)
		m.SetOwnerReferences(nil)
		m.SetFinalizers([]string{"g"})
	}
	check("after the setters")
	// The fields left out stay out.
	c.SetGenerateName("x-")
	c.SetSelfLink("/y")
	c.SetDeletionGracePeriodSeconds(ptr.To[int64](1))
	c.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "n"}})
	check("after setting what is left out")
}

func TestCachedObjectsReadAsTheirAPITypes(t *testing.T) {
	om := fullMeta()
	pod := &corev1.Pod{ObjectMeta: om, Spec: corev1.PodSpec{NodeName: "n1",
		Containers: []corev1.Container{{Name: "adapter", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}}
	dep := &appsv1.Deployment{ObjectMeta: om, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 2}}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: om}
	want := kept(om)
	for name, read := range map[string]func() metav1.Object{
		"pod": func() metav1.Object { return newCachedPod(pod).DeepCopyObject().(*corev1.Pod) },
		"deployment": func() metav1.Object {
			return (&cachedDeployment{cachedMeta: newCachedMeta(&dep.ObjectMeta)}).DeepCopyObject().(*appsv1.Deployment)
		},
		"metadata": func() metav1.Object {
			return holdMetadata(meta).(*cachedMetadata).DeepCopyObject().(*metav1.PartialObjectMetadata)
		},
	} {
		got := read()
		var m metav1.ObjectMeta
		switch o := got.(type) {
		case *corev1.Pod:
			m = o.ObjectMeta
			if o.Spec.NodeName != "n1" || o.Status.PodIP != "10.0.0.1" || o.Spec.Containers[0].Ports[0].ContainerPort != 8080 {
				t.Errorf("pod read as %+v", o)
			}
		case *appsv1.Deployment:
			m = o.ObjectMeta
		case *metav1.PartialObjectMetadata:
			m = o.ObjectMeta
		}
		if !equality.Semantic.DeepEqual(m, want) {
			t.Errorf("%s: metadata read as %+v, want %+v", name, m, want)
		}
		// A read is the reader's own.
		got.GetLabels()["l"] = "changed"
		got.GetOwnerReferences()[0].Name = "changed"
		if again := read(); again.GetLabels()["l"] != "1" || again.GetOwnerReferences()[0].Name != "a" {
			t.Errorf("%s: a change to a read reached the cache", name)
		}
	}
}
