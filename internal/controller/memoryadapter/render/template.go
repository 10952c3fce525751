package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// templateSpec is spec.template.spec, or nil.
func templateSpec(ma *memoryv1alpha1.MemoryAdapter) *memoryv1alpha1.AdapterPodSpec {
	if t := ma.Spec.Template; t != nil {
		return t.Spec
	}
	return nil
}

// applyTemplateMetadata adds spec.template's labels and annotations to a pod template's. The
// operator's own keys win; the CRD refuses template keys under its prefixes anyway.
func applyTemplateMetadata(ma *memoryv1alpha1.MemoryAdapter, m *metav1.ObjectMeta) {
	t := ma.Spec.Template
	if t == nil || t.Metadata == nil {
		return
	}
	m.Labels = mergeKeys(t.Metadata.Labels, m.Labels)
	m.Annotations = mergeKeys(t.Metadata.Annotations, m.Annotations)
}

// mergeKeys returns the user's keys with ours over them, or ours alone when the user has none.
func mergeKeys(user, ours map[string]string) map[string]string {
	if len(user) == 0 {
		return ours
	}
	out := make(map[string]string, len(user)+len(ours))
	for k, v := range user {
		out[k] = v
	}
	for k, v := range ours {
		out[k] = v
	}
	return out
}

// applyScheduling sets spec.template's scheduling fields on a pod of the adapter or of one of
// its Jobs: node selection, tolerations (after the operator's own), affinity, priority, pull
// Secrets and runtime class. The spread constraints are the Deployment's alone (a Job has one
// pod).
func applyScheduling(ma *memoryv1alpha1.MemoryAdapter, p *corev1.PodSpec) {
	t := templateSpec(ma)
	if t == nil {
		return
	}
	if len(t.NodeSelector) > 0 {
		p.NodeSelector = mergeKeys(t.NodeSelector, nil)
	}
	for _, tol := range t.Tolerations {
		p.Tolerations = append(p.Tolerations, *tol.DeepCopy())
	}
	if t.Affinity != nil {
		p.Affinity = t.Affinity.DeepCopy()
	}
	p.PriorityClassName = t.PriorityClassName
	p.ImagePullSecrets = append(p.ImagePullSecrets, t.ImagePullSecrets...)
	if t.RuntimeClassName != nil {
		p.RuntimeClassName = new(string)
		*p.RuntimeClassName = *t.RuntimeClassName
	}
}

// adapterContainerResources are the adapter container's resources: the operator's defaults
// with each request and limit spec.template states in place of the default for its resource.
// A default limit below a stated request is raised to it, since the API server refuses a
// request above its limit and the user asked for the request.
func adapterContainerResources(ma *memoryv1alpha1.MemoryAdapter) corev1.ResourceRequirements {
	r := adapterResources()
	t := templateSpec(ma)
	if t == nil || t.Resources == nil {
		return r
	}
	for k, v := range t.Resources.Requests {
		r.Requests[k] = v.DeepCopy()
	}
	for k, v := range t.Resources.Limits {
		r.Limits[k] = v.DeepCopy()
	}
	for k, req := range r.Requests {
		_, stated := t.Resources.Limits[k]
		if lim, ok := r.Limits[k]; ok && !stated && req.Cmp(lim) > 0 {
			r.Limits[k] = req.DeepCopy()
		}
	}
	if len(t.Resources.Claims) > 0 {
		r.Claims = append([]corev1.ResourceClaim(nil), t.Resources.Claims...)
	}
	return r
}

// PlacementDiffers reports whether a stored pod template differs from the rendered one in
// what spec.template decides: labels, node selection, tolerations, affinity, spread,
// priority, pull Secrets and runtime class. The reconciler compares the rest of a template
// only where the render sets it, which cannot see a field the user removed from
// spec.template; these it compares exactly (none is defaulted by the API server).
func PlacementDiffers(want, got corev1.PodTemplateSpec) bool {
	w, g := want.Spec, got.Spec
	return !equality.Semantic.DeepEqual(want.Labels, got.Labels) ||
		!equality.Semantic.DeepEqual(w.NodeSelector, g.NodeSelector) ||
		!equality.Semantic.DeepEqual(w.Tolerations, g.Tolerations) ||
		!equality.Semantic.DeepEqual(w.Affinity, g.Affinity) ||
		!equality.Semantic.DeepEqual(w.TopologySpreadConstraints, g.TopologySpreadConstraints) ||
		w.PriorityClassName != g.PriorityClassName ||
		!equality.Semantic.DeepEqual(w.ImagePullSecrets, g.ImagePullSecrets) ||
		!equality.Semantic.DeepEqual(w.RuntimeClassName, g.RuntimeClassName)
}
