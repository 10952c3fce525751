package render

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// platformTemplate is what a platform team sets: agents' nodes only, tainted for agents, a
// cost label, a mesh opt-out, more memory, a priority, a pull Secret and gVisor.
func platformTemplate() *memoryv1alpha1.AdapterPodTemplate {
	return &memoryv1alpha1.AdapterPodTemplate{
		Metadata: &memoryv1alpha1.AdapterPodMetadata{
			Labels:      map[string]string{"cost-center": "agents"},
			Annotations: map[string]string{"sidecar.istio.io/inject": "false"},
		},
		Spec: &memoryv1alpha1.AdapterPodSpec{
			Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("1Gi"),
			}},
			NodeSelector: map[string]string{"pool": "agents"},
			Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "agents", Effect: corev1.TaintEffectNoSchedule}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}},
			}}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule}},
			PriorityClassName:         "agents-high",
			ImagePullSecrets:          []corev1.LocalObjectReference{{Name: "registry-pull"}},
			RuntimeClassName:          ptr.To("gvisor"),
		},
	}
}

// checkScheduling is what every pod of a templated adapter, its Jobs' included, must carry.
func checkScheduling(t *testing.T, what string, p corev1.PodSpec, tmpl *memoryv1alpha1.AdapterPodSpec) {
	t.Helper()
	switch {
	case !equality.Semantic.DeepEqual(p.NodeSelector, tmpl.NodeSelector):
		t.Errorf("%s: nodeSelector %v", what, p.NodeSelector)
	case !equality.Semantic.DeepEqual(p.Affinity, tmpl.Affinity):
		t.Errorf("%s: affinity %v", what, p.Affinity)
	case p.PriorityClassName != tmpl.PriorityClassName:
		t.Errorf("%s: priority class %q", what, p.PriorityClassName)
	case !equality.Semantic.DeepEqual(p.ImagePullSecrets, tmpl.ImagePullSecrets):
		t.Errorf("%s: pull Secrets %v", what, p.ImagePullSecrets)
	case p.RuntimeClassName == nil || *p.RuntimeClassName != *tmpl.RuntimeClassName:
		t.Errorf("%s: runtime class %v", what, p.RuntimeClassName)
	case len(p.Tolerations) == 0 || !equality.Semantic.DeepEqual(p.Tolerations[len(p.Tolerations)-1], tmpl.Tolerations[0]):
		t.Errorf("%s: tolerations %v, want the template's last", what, p.Tolerations)
	case p.ServiceAccountName == "other" || p.HostNetwork || ptr.Deref(p.AutomountServiceAccountToken, true):
		t.Errorf("%s: the template reached a field that is the operator's", what)
	}
}

// TestTemplateMergesIntoEveryPod: the template's metadata and scheduling reach the adapter's
// pods and its Jobs' pods, beside the operator's own labels, tolerations and spread; its
// resources replace the adapter's defaults key by key, a default limit below a stated request
// rising to it; the Jobs keep the operator's resources and the Job objects its labels alone.
func TestTemplateMergesIntoEveryPod(t *testing.T) {
	for _, backend := range []memoryv1alpha1.BackendType{memoryv1alpha1.BackendPostgres, memoryv1alpha1.BackendSQLite} {
		t.Run(string(backend), func(t *testing.T) {
			ma := placedAdapter(backend, 2)
			if backend == memoryv1alpha1.BackendSQLite {
				ma.Spec.Backend.ConnectionSecretRef = nil
			}
			ma.Spec.DeletionPolicy = memoryv1alpha1.DeletionDelete
			plain := Deployment(ma, EffectiveSettings(ma, "img"))
			ma.Spec.Template = platformTemplate()
			tmpl := ma.Spec.Template.Spec
			s := EffectiveSettings(ma, "img")
			dep := Deployment(ma, s)
			pod := dep.Spec.Template

			checkScheduling(t, "adapter", pod.Spec, tmpl)
			if pod.Labels["cost-center"] != "agents" || pod.Labels[LabelAdapter] != ma.Name || pod.Annotations["sidecar.istio.io/inject"] != "false" {
				t.Errorf("adapter pod metadata: labels %v, annotations %v", pod.Labels, pod.Annotations)
			}
			if len(dep.Labels) != len(plain.Labels) || !equality.Semantic.DeepEqual(dep.Spec.Selector, plain.Spec.Selector) {
				t.Errorf("the template reached the Deployment's own labels or selector: %v, %v", dep.Labels, dep.Spec.Selector)
			}
			if got, want := len(pod.Spec.Tolerations), len(plain.Spec.Template.Spec.Tolerations)+1; got != want {
				t.Errorf("%d tolerations, want the operator's %d and the template's one", got, want-1)
			}
			if got := pod.Spec.TopologySpreadConstraints; len(got) != 2 || got[0].TopologyKey != corev1.LabelHostname || got[1].TopologyKey != "topology.kubernetes.io/zone" {
				t.Errorf("spread %v, want the operator's by node, then the template's by zone", got)
			}
			r := pod.Spec.Containers[0].Resources
			if r.Requests.Cpu().String() != "250m" || r.Requests.Memory().String() != "1Gi" || r.Limits.Memory().String() != "1Gi" {
				t.Errorf("resources %v: want 250m and 1Gi requested, the 512Mi default limit raised to 1Gi", r)
			}

			for _, job := range []struct {
				name string
				pod  corev1.PodTemplateSpec
				own  map[string]string
			}{
				{"conformance", ConformanceJob(ma, s, "run", RunKey{}, "").Spec.Template, ConformanceJob(ma, s, "run", RunKey{}, "").Labels},
				{"purge", PurgeJob(ma, "img").Spec.Template, PurgeJob(ma, "img").Labels},
			} {
				checkScheduling(t, job.name, job.pod.Spec, tmpl)
				if job.pod.Labels["cost-center"] != "agents" || job.pod.Annotations["sidecar.istio.io/inject"] != "false" {
					t.Errorf("%s pod metadata: labels %v, annotations %v", job.name, job.pod.Labels, job.pod.Annotations)
				}
				if _, ok := job.own["cost-center"]; ok {
					t.Errorf("%s: the template's label reached the Job object", job.name)
				}
				if got := job.pod.Spec.Containers[0].Resources; !equality.Semantic.DeepEqual(got, adapterResources()) {
					t.Errorf("%s: resources %v, want the operator's", job.name, got)
				}
			}
		})
	}
}

// TestTemplateResourcesKeyByKey covers the resources merge alone.
func TestTemplateResourcesKeyByKey(t *testing.T) {
	for name, tc := range map[string]struct {
		res                   *corev1.ResourceRequirements
		cpu, memReq, memLimit string
	}{
		"none":                          {nil, "50m", "64Mi", "512Mi"},
		"a limit alone":                 {&corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}, "50m", "64Mi", "2Gi"},
		"a request under the limit":     {&corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}, "50m", "256Mi", "512Mi"},
		"a request over the default":    {&corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("768Mi")}}, "50m", "768Mi", "768Mi"},
		"a stated limit stays as given": {&corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}, Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("900Mi")}}, "50m", "1Gi", "900Mi"},
	} {
		t.Run(name, func(t *testing.T) {
			ma := placedAdapter(memoryv1alpha1.BackendRedis, 1)
			if tc.res != nil {
				ma.Spec.Template = &memoryv1alpha1.AdapterPodTemplate{Spec: &memoryv1alpha1.AdapterPodSpec{Resources: tc.res}}
			}
			r := adapterContainerResources(ma)
			if r.Requests.Cpu().String() != tc.cpu || r.Requests.Memory().String() != tc.memReq || r.Limits.Memory().String() != tc.memLimit {
				t.Fatalf("got %v", r)
			}
		})
	}
}

// TestPlacementDiffersSeesARemovedField: a field taken out of spec.template must come out of
// the Deployment, which a comparison of only what the render sets would miss.
func TestPlacementDiffersSeesARemovedField(t *testing.T) {
	ma := placedAdapter(memoryv1alpha1.BackendPostgres, 2)
	plain := Deployment(ma, EffectiveSettings(ma, "img")).Spec.Template
	ma.Spec.Template = platformTemplate()
	placed := Deployment(ma, EffectiveSettings(ma, "img")).Spec.Template
	if PlacementDiffers(plain, *plain.DeepCopy()) || PlacementDiffers(placed, *placed.DeepCopy()) {
		t.Fatal("a template differs from its own copy")
	}
	if !PlacementDiffers(plain, placed) {
		t.Fatal("the stored template keeps the removed placement, and the reconciler would not see it")
	}
	for name, strip := range map[string]func(*corev1.PodTemplateSpec){
		"label":         func(p *corev1.PodTemplateSpec) { delete(p.Labels, "cost-center") },
		"node selector": func(p *corev1.PodTemplateSpec) { p.Spec.NodeSelector = nil },
		"toleration":    func(p *corev1.PodTemplateSpec) { p.Spec.Tolerations = p.Spec.Tolerations[:len(p.Spec.Tolerations)-1] },
		"affinity":      func(p *corev1.PodTemplateSpec) { p.Spec.Affinity = nil },
		"spread": func(p *corev1.PodTemplateSpec) {
			p.Spec.TopologySpreadConstraints = p.Spec.TopologySpreadConstraints[:1]
		},
		"priority":      func(p *corev1.PodTemplateSpec) { p.Spec.PriorityClassName = "" },
		"pull Secrets":  func(p *corev1.PodTemplateSpec) { p.Spec.ImagePullSecrets = nil },
		"runtime class": func(p *corev1.PodTemplateSpec) { p.Spec.RuntimeClassName = nil },
	} {
		want := placed.DeepCopy()
		strip(want)
		if !PlacementDiffers(*want, placed) {
			t.Errorf("a removed %s is not seen", name)
		}
	}
}
