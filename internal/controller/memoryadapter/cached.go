package memoryadapter

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The cache holds the operator's Pods and Deployments in the types below, not in their own.
// A corev1.Pod is 1,240 bytes and an appsv1.Deployment 1,232 before any field is set: their
// specs and statuses are structs of a hundred fields, and the slim transforms keep a handful.
// At 10,000 adapters those empty shells were 25 MB of the manager's heap. A cached object
// here is the metadata the operator reads (cachedMeta) and the kept fields (about 400 and
// 260 bytes); the metadata-only kinds and Jobs are held as cachedMetadata (176 bytes where a
// PartialObjectMetadata is 264).
//
// Reads do not see these types. controller-runtime's cache reader deep-copies what it holds
// (DeepCopyObject) and hands the copy out; these types' copies are the API types, filled
// with what was kept, so a Get or List of a corev1.Pod, an appsv1.Deployment or a
// PartialObjectMetadata returns one, exactly as when the slim transforms returned the API
// types themselves. A read with client.UnsafeDisableDeepCopy would get the stored type, so
// none of these kinds may be read that way (only the adapters are). What does see them is
// what runs on the stored object: the informer's index functions and event handlers, which
// read metadata only (labels, owner references, name), except IndexNode's pod function,
// which knows cachedPod.

// cachedPod is how the cache holds a Pod: its metadata and what slimPod keeps of its spec
// and status.
type cachedPod struct {
	cachedMeta
	containers         []corev1.Container
	schedulingGates    []corev1.PodSchedulingGate
	volumes            []corev1.Volume
	nodeName           string
	serviceAccountName string
	status             cachedPodStatus
}

// cachedPodStatus is the part of a PodStatus slimPodStatus keeps.
type cachedPodStatus struct {
	phase                 corev1.PodPhase
	reason, message       string
	podIP                 string
	conditions            []corev1.PodCondition
	initContainerStatuses []corev1.ContainerStatus
	containerStatuses     []corev1.ContainerStatus
}

// newCachedPod holds p's metadata and the fields slimPod kept, sharing them with p.
func newCachedPod(p *corev1.Pod) *cachedPod {
	return &cachedPod{
		cachedMeta: newCachedMeta(&p.ObjectMeta), containers: p.Spec.Containers, schedulingGates: p.Spec.SchedulingGates,
		volumes: p.Spec.Volumes, nodeName: p.Spec.NodeName, serviceAccountName: p.Spec.ServiceAccountName,
		status: cachedPodStatus{phase: p.Status.Phase, reason: p.Status.Reason, message: p.Status.Message, podIP: p.Status.PodIP,
			conditions: p.Status.Conditions, initContainerStatuses: p.Status.InitContainerStatuses,
			containerStatuses: p.Status.ContainerStatuses},
	}
}

// view is the Pod p holds, sharing p's memory: never handed out, only deep-copied.
func (p *cachedPod) view() corev1.Pod {
	return corev1.Pod{
		ObjectMeta: p.objectMeta(),
		Spec: corev1.PodSpec{Containers: p.containers, SchedulingGates: p.schedulingGates, Volumes: p.volumes,
			NodeName: p.nodeName, ServiceAccountName: p.serviceAccountName},
		Status: corev1.PodStatus{Phase: p.status.phase, Reason: p.status.reason, Message: p.status.message, PodIP: p.status.podIP,
			Conditions: p.status.conditions, InitContainerStatuses: p.status.initContainerStatuses,
			ContainerStatuses: p.status.containerStatuses},
	}
}

// DeepCopyObject returns a *corev1.Pod of its own with what p holds: what a cache read hands
// out.
func (p *cachedPod) DeepCopyObject() runtime.Object {
	v := p.view()
	return v.DeepCopy()
}

// cachedDeployment is how the cache holds a Deployment the operator owns: its metadata and
// what slimOwned keeps (replicas, the pod template's annotations, the status).
type cachedDeployment struct {
	cachedMeta
	replicas            *int32
	templateAnnotations map[string]string
	status              appsv1.DeploymentStatus
}

// view is the Deployment d holds, sharing d's memory: never handed out, only deep-copied.
func (d *cachedDeployment) view() appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: d.objectMeta(), Status: d.status,
		Spec: appsv1.DeploymentSpec{Replicas: d.replicas,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: d.templateAnnotations}}}}
}

// DeepCopyObject returns an *appsv1.Deployment of its own with what d holds: what a cache
// read hands out.
func (d *cachedDeployment) DeepCopyObject() runtime.Object {
	v := d.view()
	return v.DeepCopy()
}

// cachedMeta is the part of an ObjectMeta the cache keeps of the operator's objects (176
// bytes where an ObjectMeta is 232): name, namespace, UID, resourceVersion, generation,
// timestamps, labels, annotations, owner references and finalizers. It leaves out the fields
// nothing of the operator reads or that the transforms drop (generateName, selfLink,
// deletionGracePeriodSeconds, managedFields): their getters give the zero value and their
// setters do nothing, which is safe only because the cache's objects are written by the
// transforms alone, and the transforms do not set them.
type cachedMeta struct {
	name, namespace   string
	uid               types.UID
	resourceVersion   string
	generation        int64
	creationTimestamp metav1.Time
	deletionTimestamp *metav1.Time
	labels            map[string]string
	annotations       map[string]string
	ownerReferences   []metav1.OwnerReference
	finalizers        []string
}

// newCachedMeta keeps m's fields, sharing their memory.
func newCachedMeta(m *metav1.ObjectMeta) cachedMeta {
	return cachedMeta{name: m.Name, namespace: m.Namespace, uid: m.UID, resourceVersion: m.ResourceVersion,
		generation: m.Generation, creationTimestamp: m.CreationTimestamp, deletionTimestamp: m.DeletionTimestamp,
		labels: m.Labels, annotations: m.Annotations, ownerReferences: m.OwnerReferences, finalizers: m.Finalizers}
}

// objectMeta is the ObjectMeta m holds, sharing m's memory: only deep-copied.
func (m *cachedMeta) objectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.name, Namespace: m.namespace, UID: m.uid, ResourceVersion: m.resourceVersion,
		Generation: m.generation, CreationTimestamp: m.creationTimestamp, DeletionTimestamp: m.deletionTimestamp,
		Labels: m.labels, Annotations: m.annotations, OwnerReferences: m.ownerReferences, Finalizers: m.finalizers}
}

// GetObjectKind has no kind to give: the cache reader sets the kind on the copies it hands
// out, and nothing reads it of the stored object. With DeepCopyObject of the type embedding
// cachedMeta, it makes that type a runtime.Object.
func (m *cachedMeta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetNamespace returns the namespace.
func (m *cachedMeta) GetNamespace() string { return m.namespace }

// SetNamespace sets the namespace.
func (m *cachedMeta) SetNamespace(namespace string) { m.namespace = namespace }

// GetName returns the name.
func (m *cachedMeta) GetName() string { return m.name }

// SetName sets the name.
func (m *cachedMeta) SetName(name string) { m.name = name }

// GetGenerateName returns "": the cache does not keep it.
func (m *cachedMeta) GetGenerateName() string { return "" }

// SetGenerateName does nothing: the cache does not keep it.
func (m *cachedMeta) SetGenerateName(string) {}

// GetUID returns the UID.
func (m *cachedMeta) GetUID() types.UID { return m.uid }

// SetUID sets the UID.
func (m *cachedMeta) SetUID(uid types.UID) { m.uid = uid }

// GetResourceVersion returns the resourceVersion.
func (m *cachedMeta) GetResourceVersion() string { return m.resourceVersion }

// SetResourceVersion sets the resourceVersion.
func (m *cachedMeta) SetResourceVersion(version string) { m.resourceVersion = version }

// GetGeneration returns the generation.
func (m *cachedMeta) GetGeneration() int64 { return m.generation }

// SetGeneration sets the generation.
func (m *cachedMeta) SetGeneration(generation int64) { m.generation = generation }

// GetSelfLink returns "": the cache does not keep it.
func (m *cachedMeta) GetSelfLink() string { return "" }

// SetSelfLink does nothing: the cache does not keep it.
func (m *cachedMeta) SetSelfLink(string) {}

// GetCreationTimestamp returns the creation time.
func (m *cachedMeta) GetCreationTimestamp() metav1.Time { return m.creationTimestamp }

// SetCreationTimestamp sets the creation time.
func (m *cachedMeta) SetCreationTimestamp(t metav1.Time) { m.creationTimestamp = t }

// GetDeletionTimestamp returns the deletion time.
func (m *cachedMeta) GetDeletionTimestamp() *metav1.Time { return m.deletionTimestamp }

// SetDeletionTimestamp sets the deletion time.
func (m *cachedMeta) SetDeletionTimestamp(t *metav1.Time) { m.deletionTimestamp = t }

// GetDeletionGracePeriodSeconds returns nil: the cache does not keep it.
func (m *cachedMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds does nothing: the cache does not keep it.
func (m *cachedMeta) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels returns the labels.
func (m *cachedMeta) GetLabels() map[string]string { return m.labels }

// SetLabels sets the labels.
func (m *cachedMeta) SetLabels(labels map[string]string) { m.labels = labels }

// GetAnnotations returns the annotations.
func (m *cachedMeta) GetAnnotations() map[string]string { return m.annotations }

// SetAnnotations sets the annotations.
func (m *cachedMeta) SetAnnotations(annotations map[string]string) { m.annotations = annotations }

// GetFinalizers returns the finalizers.
func (m *cachedMeta) GetFinalizers() []string { return m.finalizers }

// SetFinalizers sets the finalizers.
func (m *cachedMeta) SetFinalizers(finalizers []string) { m.finalizers = finalizers }

// GetOwnerReferences returns the owner references.
func (m *cachedMeta) GetOwnerReferences() []metav1.OwnerReference { return m.ownerReferences }

// SetOwnerReferences sets the owner references.
func (m *cachedMeta) SetOwnerReferences(refs []metav1.OwnerReference) { m.ownerReferences = refs }

// GetManagedFields returns nil: the cache drops managedFields.
func (m *cachedMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields does nothing: the cache drops managedFields.
func (m *cachedMeta) SetManagedFields([]metav1.ManagedFieldsEntry) {}

// cachedMetadata is how the cache holds the metadata of an object of a metadataKinds kind,
// or of a Job, that the operator owns.
type cachedMetadata struct {
	cachedMeta
}

// DeepCopyObject returns a *metav1.PartialObjectMetadata of its own with what m holds: what a
// cache read hands out (the reader sets its kind).
func (m *cachedMetadata) DeepCopyObject() runtime.Object {
	v := metav1.PartialObjectMetadata{ObjectMeta: m.objectMeta()}
	return v.DeepCopy()
}

// Compile-time checks: the cache's handlers and indexes take these as client.Objects.
var (
	_ client.Object = &cachedPod{}
	_ client.Object = &cachedDeployment{}
	_ client.Object = &cachedMetadata{}
)
