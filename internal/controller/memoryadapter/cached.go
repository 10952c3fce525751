package memoryadapter

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The cache holds the operator's Pods and Deployments in the types below, not in their own.
// A corev1.Pod is 1,240 bytes and an appsv1.Deployment 1,232 before any field is set: their
// specs and statuses are structs of a hundred fields, and the slim transforms keep a handful.
// At 10,000 adapters those empty shells were 25 MB of the manager's heap. A cached object
// here is its ObjectMeta and the kept fields (about 470 and 320 bytes).
//
// Reads do not see these types. controller-runtime's cache reader deep-copies what it holds
// (DeepCopyObject) and hands the copy out; these types' copies are the API types, filled
// with what was kept, so a Get or List of a corev1.Pod or an appsv1.Deployment returns one,
// exactly as when the slim transforms returned the API types themselves. What does see them
// is what runs on the stored object: the informer's index functions and event handlers, which
// read metadata only (labels, owner references, name), except IndexNode's pod function,
// which knows cachedPod.

// cachedPod is how the cache holds a Pod: its metadata and what slimPod keeps of its spec
// and status.
type cachedPod struct {
	metav1.ObjectMeta
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
		ObjectMeta: p.ObjectMeta, containers: p.Spec.Containers, schedulingGates: p.Spec.SchedulingGates,
		volumes: p.Spec.Volumes, nodeName: p.Spec.NodeName, serviceAccountName: p.Spec.ServiceAccountName,
		status: cachedPodStatus{phase: p.Status.Phase, reason: p.Status.Reason, message: p.Status.Message, podIP: p.Status.PodIP,
			conditions: p.Status.Conditions, initContainerStatuses: p.Status.InitContainerStatuses,
			containerStatuses: p.Status.ContainerStatuses},
	}
}

// view is the Pod p holds, sharing p's memory: never handed out, only deep-copied.
func (p *cachedPod) view() corev1.Pod {
	return corev1.Pod{
		ObjectMeta: p.ObjectMeta,
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

// GetObjectKind has no kind to give: the cache reader sets the kind on the copies it hands
// out, and nothing reads it of the stored object.
func (p *cachedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// cachedDeployment is how the cache holds a Deployment the operator owns: its metadata and
// what slimOwned keeps (replicas, the pod template's annotations, the status).
type cachedDeployment struct {
	metav1.ObjectMeta
	replicas            *int32
	templateAnnotations map[string]string
	status              appsv1.DeploymentStatus
}

// view is the Deployment d holds, sharing d's memory: never handed out, only deep-copied.
func (d *cachedDeployment) view() appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: d.ObjectMeta, Status: d.status,
		Spec: appsv1.DeploymentSpec{Replicas: d.replicas,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: d.templateAnnotations}}}}
}

// DeepCopyObject returns an *appsv1.Deployment of its own with what d holds: what a cache
// read hands out.
func (d *cachedDeployment) DeepCopyObject() runtime.Object {
	v := d.view()
	return v.DeepCopy()
}

// GetObjectKind has no kind to give: the cache reader sets the kind on the copies it hands
// out, and nothing reads it of the stored object.
func (d *cachedDeployment) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
