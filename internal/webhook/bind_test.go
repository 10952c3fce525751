package webhook

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

func agentPod(labels, annotations map[string]string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers:     []corev1.Container{{Name: "main"}, {Name: "sidecar", Env: []corev1.EnvVar{{Name: EnvBindingRoot, Value: "/srv/bindings"}}}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

var bound = map[string]string{"memory.agentmem.io/adapter": "sqlite-memory"}

func requires(v string) map[string]string { return map[string]string{"memory.agentmem.io/requires": v} }

func TestBindLeavesUnboundPodsAlone(t *testing.T) {
	tests := map[string]*corev1.Pod{
		"no label, no annotation": agentPod(nil, nil),
		"annotation only":         agentPod(nil, requires("searchConsistency=immediate")),
		"label only":              agentPod(bound, nil),
	}
	for name, pod := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			before := pod.DeepCopy()
			applies, err := Bind(pod, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(applies).To(BeFalse())
			g.Expect(pod).To(Equal(before))
		})
	}
}

func TestBindGatesAndProjects(t *testing.T) {
	g := NewWithT(t)
	pod := agentPod(map[string]string{"memory.agentmem.io/adapter": "sqlite-memory"}, requires("searchConsistency=immediate"))
	applies, err := Bind(pod, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(applies).To(BeTrue())
	g.Expect(pod.Spec.SchedulingGates).To(Equal([]corev1.PodSchedulingGate{{Name: "memory.agentmem.io/adapter-ready"}}))
	g.Expect(pod.Labels).To(HaveKeyWithValue("memory.agentmem.io/bound-to", "sqlite-memory"))
	g.Expect(pod.Spec.Volumes).To(HaveLen(1))
	v := pod.Spec.Volumes[0]
	g.Expect(v.Name).To(Equal("memory-binding-sqlite-memory"))
	g.Expect(v.Secret.SecretName).To(Equal("sqlite-memory-binding"))
	g.Expect(*v.Secret.DefaultMode).To(Equal(int32(0o444)))
	for _, c := range []corev1.Container{pod.Spec.InitContainers[0], pod.Spec.Containers[0]} {
		g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "SERVICE_BINDING_ROOT", Value: "/bindings"}), c.Name)
		g.Expect(c.VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: v.Name, MountPath: "/bindings/sqlite-memory", ReadOnly: true}), c.Name)
	}
	side := pod.Spec.Containers[1]
	g.Expect(side.Env).To(Equal([]corev1.EnvVar{{Name: "SERVICE_BINDING_ROOT", Value: "/srv/bindings"}}), "a container's own root is kept")
	g.Expect(side.VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: v.Name, MountPath: "/srv/bindings/sqlite-memory", ReadOnly: true}))

	once := pod.DeepCopy()
	applies, err = Bind(pod, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(applies).To(BeTrue())
	g.Expect(pod).To(Equal(once), "a reinvocation changes nothing")

	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "injected"})
	_, err = Bind(pod, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pod.Spec.Containers[2].VolumeMounts).To(HaveLen(1), "a container added by a later webhook is bound on reinvocation")
	g.Expect(pod.Spec.Volumes).To(HaveLen(1))
	g.Expect(pod.Spec.SchedulingGates).To(HaveLen(1))
}

func TestBindRejects(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		msg  string
	}{
		{"malformed requirements", agentPod(bound, requires("searchConsistency=immediate, tagz")),
			`memory.agentmem.io/requires: clause 2, token "tagz" at byte 29: unknown requirement`},
		{"adapter label not a MemoryAdapter name", agentPod(map[string]string{"memory.agentmem.io/adapter": "Not_A_Name"}, requires("")),
			`label memory.agentmem.io/adapter: "Not_A_Name" is not a MemoryAdapter name`},
		{"bound to another adapter", agentPod(map[string]string{"memory.agentmem.io/adapter": "a", "memory.agentmem.io/bound-to": "b"}, requires("")),
			`label memory.agentmem.io/bound-to is "b" but label memory.agentmem.io/adapter names "a"`},
		{"volume name taken", agentPod(bound, requires(""), func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "memory-binding-sqlite-memory"}}
		}), `volume "memory-binding-sqlite-memory" already exists`},
		{"mount path taken", agentPod(bound, requires(""), func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: "/bindings/sqlite-memory/"}}
		}), `container "main" already mounts volume "mine" at /bindings/sqlite-memory`},
		{"binding root from a reference", agentPod(bound, requires(""), func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SERVICE_BINDING_ROOT", ValueFrom: &corev1.EnvVarSource{}}}
		}), `container "main" sets SERVICE_BINDING_ROOT to something other than an absolute path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Bind(tt.pod, nil)
			g.Expect(err).To(MatchError(ContainSubstring(tt.msg)))
		})
	}
}

// TestBindWithAccessMountsTheServiceAccountsSecret: under spec.access a pod mounts its
// ServiceAccount's binding Secret ("default" when it names none), and a reinvocation after
// the adapter changed keeps the Secret the first pass chose.
func TestBindWithAccessMountsTheServiceAccountsSecret(t *testing.T) {
	g := NewWithT(t)
	access := &memoryv1alpha1.AccessSpec{ServiceAccounts: []memoryv1alpha1.ServiceAccountAccess{{Name: "planner", Rights: memoryv1alpha1.AccessReadWrite}}}
	pod := agentPod(map[string]string{"memory.agentmem.io/adapter": "sqlite-memory"}, requires(""), func(p *corev1.Pod) { p.Spec.ServiceAccountName = "planner" })
	applies, err := Bind(pod, access)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(applies).To(BeTrue())
	g.Expect(MountedBindingSecret(pod, "sqlite-memory")).To(Equal("sqlite-memory-binding.planner"))
	_, err = Bind(pod, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pod.Spec.Volumes).To(HaveLen(1))
	g.Expect(MountedBindingSecret(pod, "sqlite-memory")).To(Equal("sqlite-memory-binding.planner"))

	unnamed := agentPod(map[string]string{"memory.agentmem.io/adapter": "sqlite-memory"}, requires(""))
	_, err = Bind(unnamed, access)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(MountedBindingSecret(unnamed, "sqlite-memory")).To(Equal("sqlite-memory-binding.default"))

	foreign := agentPod(map[string]string{"memory.agentmem.io/adapter": "sqlite-memory"}, requires(""), func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "memory-binding-sqlite-memory", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "other-binding.planner"}}}}
	})
	_, err = Bind(foreign, access)
	g.Expect(err).To(MatchError(ContainSubstring("is not the binding Secret")))
}
