package memoryadapter

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// setReplicas changes spec.replicas with a merge patch, as kubectl scale would on a resource
// without a scale subresource.
func setReplicas(ctx context.Context, key types.NamespacedName, n int32) {
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
	ExpectWithOffset(1, k8sClient.Patch(ctx, ma, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

var _ = Describe("placing a stateless adapter for failure", Ordered, func() {
	var (
		ctx     context.Context
		stopMgr func()
		key     types.NamespacedName
	)

	BeforeAll(func() {
		ctx = context.Background()
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "madp-place-"}}
		Expect(k8sClient.Create(ctx, nsObj)).To(Succeed())
		key = types.NamespacedName{Namespace: nsObj.Name, Name: "pg"}
		stopMgr = startManager()
	})
	AfterAll(func() {
		if stopMgr != nil {
			stopMgr()
		}
	})

	It("rolls without losing a ready replica, spreads over nodes, and keeps the stored Deployment steady", func() {
		ma := sharedServerAdapter(key.Namespace, key.Name, memoryv1alpha1.BackendPostgres, memoryv1alpha1.DeletionRetain)
		ma.Spec.Replicas = ptr.To[int32](2)
		Expect(k8sClient.Create(ctx, ma)).To(Succeed())
		dep := &appsv1.Deployment{}
		Eventually(func(g Gomega) { g.Expect(k8sClient.Get(ctx, key, dep)).To(Succeed()) }, timeout, poll).Should(Succeed())
		// What the API server stored, defaults and all, is what the rollout follows.
		Expect(dep.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
		Expect(*dep.Spec.Strategy.RollingUpdate.MaxUnavailable).To(Equal(intstr.FromInt32(0)))
		Expect(*dep.Spec.Strategy.RollingUpdate.MaxSurge).To(Equal(intstr.FromInt32(1)))
		Expect(dep.Spec.Template.Spec.TopologySpreadConstraints).To(HaveLen(1))
		Expect(dep.Spec.Template.Spec.TopologySpreadConstraints[0].TopologyKey).To(Equal(corev1.LabelHostname))
		Expect(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds).To(BeNumerically(">", int64(adapterDrainDelay.Seconds())))
		markAvailable(ctx, key)
		// The template compares equal to its stored, defaulted form: no update loop.
		Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
		rv := dep.ResourceVersion
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
			g.Expect(dep.ResourceVersion).To(Equal(rv))
		}, 3*time.Second, 300*time.Millisecond).Should(Succeed())
	})

	It("keeps a PodDisruptionBudget of one unavailable replica while there are several, and none for one", func() {
		pdb := &policyv1.PodDisruptionBudget{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, pdb)).To(Succeed())
			g.Expect(metav1.IsControlledBy(pdb, getMA(key))).To(BeTrue())
			g.Expect(*pdb.Spec.MaxUnavailable).To(Equal(intstr.FromInt32(1)))
			g.Expect(pdb.Spec.Selector.MatchLabels).To(Equal(selectorLabels(getMA(key))))
		}, timeout, poll).Should(Succeed())

		setReplicas(ctx, key, 1)
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key, &policyv1.PodDisruptionBudget{})) }, timeout, poll).
			Should(BeTrue(), "a budget over one replica would block every drain of its node")

		setReplicas(ctx, key, 3)
		Eventually(func(g Gomega) { g.Expect(k8sClient.Get(ctx, key, &policyv1.PodDisruptionBudget{})).To(Succeed()) }, timeout, poll).Should(Succeed())

		By("reverting a hand edit of the budget")
		Eventually(func() error {
			if err := k8sClient.Get(ctx, key, pdb); err != nil {
				return err
			}
			pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(3))
			return k8sClient.Update(ctx, pdb)
		}, timeout, poll).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, pdb)).To(Succeed())
			g.Expect(*pdb.Spec.MaxUnavailable).To(Equal(intstr.FromInt32(1)))
		}, timeout, poll).Should(Succeed())
	})
})
