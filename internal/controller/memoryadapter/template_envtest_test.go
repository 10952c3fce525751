package memoryadapter

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// deploymentOf reads the adapter's Deployment.
func deploymentOf(g Gomega, key types.NamespacedName) *appsv1.Deployment {
	dep := &appsv1.Deployment{}
	g.Expect(k8sClient.Get(context.Background(), key, dep)).To(Succeed())
	return dep
}

// The template through the real API server and the manager's identity: the admission
// policies on its workloads accept what the template adds, and every pod of the adapter
// carries it.
var _ = Describe("an adapter with a pod template", Ordered, func() {
	var (
		ctx     context.Context
		stopMgr func()
		key     types.NamespacedName
		tmpl    *memoryv1alpha1.AdapterPodTemplate
	)

	// placed checks the scheduling fields a pod of the adapter or of its Jobs must carry.
	placed := func(g Gomega, p corev1.PodTemplateSpec) {
		g.Expect(p.Labels).To(HaveKeyWithValue("cost-center", "agents"))
		g.Expect(p.Annotations).To(HaveKeyWithValue("sidecar.istio.io/inject", "false"))
		g.Expect(p.Spec.NodeSelector).To(Equal(tmpl.Spec.NodeSelector))
		g.Expect(p.Spec.Tolerations).To(ContainElement(tmpl.Spec.Tolerations[0]))
		g.Expect(p.Spec.PriorityClassName).To(Equal("agents-high"))
		g.Expect(p.Spec.ImagePullSecrets).To(Equal(tmpl.Spec.ImagePullSecrets))
	}

	BeforeAll(func() {
		ctx = context.Background()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "madp-tmpl-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		key = types.NamespacedName{Namespace: ns.Name, Name: "placed"}
		tmpl = &memoryv1alpha1.AdapterPodTemplate{
			Metadata: &memoryv1alpha1.AdapterPodMetadata{Labels: map[string]string{"cost-center": "agents"}, Annotations: map[string]string{"sidecar.istio.io/inject": "false"}},
			Spec: &memoryv1alpha1.AdapterPodSpec{
				Resources:         &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("768Mi")}},
				NodeSelector:      map[string]string{"pool": "agents"},
				Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "agents", Effect: corev1.TaintEffectNoSchedule}},
				PriorityClassName: "agents-high",
				ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "registry-pull"}},
			},
		}
		// The pods the specs create in the kubelet's place name it: the API server's priority
		// admission refuses a pod whose class does not exist.
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "agents-high"}, Value: 1000}
		if err := k8sClient.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		stopMgr = startManagerWith(rest.CopyConfig(managerCfg), fixedEvidence{})
	})
	AfterAll(func() {
		if stopMgr != nil {
			stopMgr()
		}
	})

	It("places the adapter's pods, its conformance run's and its purge's as the template says", func() {
		ma := sharedServerAdapter(key.Namespace, key.Name, memoryv1alpha1.BackendPostgres, memoryv1alpha1.DeletionDelete)
		ma.Spec.Template = tmpl
		Expect(k8sClient.Create(ctx, ma)).To(Succeed())
		Eventually(func(g Gomega) {
			dep := deploymentOf(g, key)
			placed(g, dep.Spec.Template)
			r := dep.Spec.Template.Spec.Containers[0].Resources
			g.Expect(r.Requests.Memory().String()).To(Equal("768Mi"))
			g.Expect(r.Limits.Memory().String()).To(Equal("768Mi"), "the default limit rises to the stated request")
			g.Expect(dep.Spec.Template.Spec.AutomountServiceAccountToken).To(Equal(ptr.To(false)), "the operator's hardening stays")
		}, timeout, poll).Should(Succeed())

		markAvailable(ctx, key)
		job := waitForNewJob(ctx, key)
		Eventually(func(g Gomega) { placed(g, job.Spec.Template) }).Should(Succeed())

		Expect(k8sClient.Delete(ctx, getMA(key))).To(Succeed())
		purge := purgeJob(ctx, key, "")
		Eventually(func(g Gomega) { placed(g, purge.Spec.Template) }).Should(Succeed())
		finishJob(ctx, purge, []byte(`{"backend":"postgres","scope":"agents-placed","deleted":0}`), true)
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key, &memoryv1alpha1.MemoryAdapter{})) }, timeout, poll).
			Should(BeTrue(), "the purged adapter is gone")
	})

	It("takes the placement out of the Deployment when the template is removed", func() {
		k := types.NamespacedName{Namespace: key.Namespace, Name: "unplaced"}
		ma := sqliteAdapter(k.Namespace, k.Name)
		ma.Spec.Template = tmpl
		Expect(k8sClient.Create(ctx, ma)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(context.Background(), getMA(k))).To(Succeed()) })
		Eventually(func(g Gomega) { placed(g, deploymentOf(g, k).Spec.Template) }, timeout, poll).Should(Succeed())
		Expect(k8sClient.Patch(ctx, getMA(k), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"template":null}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			p := deploymentOf(g, k).Spec.Template
			g.Expect(p.Labels).NotTo(HaveKey("cost-center"))
			g.Expect(p.Spec.NodeSelector).To(BeEmpty())
			g.Expect(p.Spec.Tolerations).NotTo(ContainElement(tmpl.Spec.Tolerations[0]))
			g.Expect(p.Spec.PriorityClassName).To(BeEmpty())
			g.Expect(p.Spec.ImagePullSecrets).To(BeEmpty())
			g.Expect(p.Spec.Containers[0].Resources.Requests.Memory().String()).To(Equal("64Mi"))
		}, timeout, poll).Should(Succeed())
	})
})
