package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// AdapterPodTemplate is what a platform team sets on an adapter's pods: their labels and
// annotations, their resources, and where they run. Every other field of the pods stays the
// operator's, so the hardening holds (non-root, no ServiceAccount token, no host access, the
// adapter's own ServiceAccount): a field this type does not list is unknown to the API server,
// which refuses it under strict field validation (kubectl's default) and drops it otherwise.
// The conformance and purge Jobs take the metadata and the scheduling fields too, so they run
// where the adapter may.
type AdapterPodTemplate struct {
	// metadata adds labels and annotations to the adapter's pods and to its Jobs' pods (cost
	// allocation, a service mesh's opt-out). Keys under the operator's prefixes are refused.
	// +optional
	Metadata *AdapterPodMetadata `json:"metadata,omitempty"`

	// spec sizes and places the pods.
	// +optional
	Spec *AdapterPodSpec `json:"spec,omitempty"`
}

// AdapterPodMetadata is the labels and annotations an adapter's pods get beside the
// operator's own.
type AdapterPodMetadata struct {
	// labels are added to the pods' labels. Keys under memory.agentmem.io/ and
	// app.kubernetes.io/ are the operator's: its selectors and the policies that guard its
	// workloads match on them.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('memory.agentmem.io/') && !k.startsWith('app.kubernetes.io/'))",message="labels under memory.agentmem.io/ and app.kubernetes.io/ are the operator's: its selectors match on them"
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are added to the pods' annotations. Keys under memory.agentmem.io/ are the
	// operator's.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('memory.agentmem.io/'))",message="annotations under memory.agentmem.io/ are the operator's"
	Annotations map[string]string `json:"annotations,omitempty"`
}

// AdapterPodSpec is the part of an adapter's pod spec a platform team sets.
type AdapterPodSpec struct {
	// resources of the adapter container. Each request or limit stated replaces the
	// operator's default for that resource (cpu 50m and memory 64Mi requested, memory limited
	// to 512Mi; docs/operator.md says why); a memory limit left to the default is raised to
	// a larger stated request. The Jobs keep the operator's resources.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// nodeSelector restricts the pods, the Jobs' included, to nodes with these labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations let the pods, the Jobs' included, run on tainted nodes. The operator's own
	// (a stateless adapter leaves a lost node after 30 seconds) stay beside them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// affinity of the pods, the Jobs' included.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// topologySpreadConstraints are added to the operator's own, which spreads an adapter's
	// replicas over nodes (ScheduleAnyway).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// priorityClassName of the pods, the Jobs' included.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// imagePullSecrets name Secrets of the adapter's namespace the kubelet pulls the images
	// with, the Jobs' included (the images themselves are the installation's allow-list).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// runtimeClassName of the pods, the Jobs' included (gVisor, Kata).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`
}
