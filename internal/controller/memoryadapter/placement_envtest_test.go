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
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
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
		Expect(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds).To(BeNumerically(">", int64(render.AdapterDrainDelay.Seconds())))
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
			g.Expect(pdb.Spec.Selector.MatchLabels).To(Equal(render.SelectorLabels(getMA(key))))
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

var _ = Describe("an adapter whose node is lost", Ordered, func() {
	var (
		ctx     context.Context
		stopMgr func()
		key     types.NamespacedName
		node    *corev1.Node
	)

	BeforeAll(func() {
		ctx = context.Background()
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "madp-node-"}}
		Expect(k8sClient.Create(ctx, nsObj)).To(Succeed())
		key = types.NamespacedName{Namespace: nsObj.Name, Name: "mem"}
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "lost-node-"}}
		Expect(k8sClient.Create(ctx, node)).To(Succeed())
		DeferCleanup(func() { _ = k8sClient.Delete(context.Background(), node) })
		stopMgr = startManager()
	})
	AfterAll(func() {
		if stopMgr != nil {
			stopMgr()
		}
	})

	setNodeReady := func(status corev1.ConditionStatus, reason, msg string) {
		Eventually(func() error {
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
				return err
			}
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: reason, Message: msg,
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			return k8sClient.Status().Update(ctx, node)
		}, timeout, poll).Should(Succeed())
	}

	It("names the node and the data claim in Deployed while the node holding the claim is not ready", func() {
		setNodeReady(corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.")
		Expect(k8sClient.Create(ctx, sqliteAdapter(key.Namespace, key.Name))).To(Succeed())
		claimKey := types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-data"}
		// Playing the scheduler, which records where a local volume was provisioned.
		Eventually(func() error {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := k8sClient.Get(ctx, claimKey, pvc); err != nil {
				return err
			}
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			pvc.Annotations[annotationSelectedNode] = node.Name
			return k8sClient.Update(ctx, pvc)
		}, timeout, poll).Should(Succeed())
		Eventually(func(g Gomega) {
			d := conditionOf(getMA(key), memoryv1alpha1.ConditionDeployed)
			g.Expect(d.Reason).To(Equal(memoryv1alpha1.ReasonNodeUnavailable), "Deployed: %s", d.Message)
			g.Expect(d.Message).To(And(ContainSubstring("node "+node.Name+" is not ready"), ContainSubstring("Kubelet stopped posting node status."),
				ContainSubstring("data claim "+claimKey.Name)))
			a := conditionOf(getMA(key), memoryv1alpha1.ConditionAvailable)
			g.Expect(a.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(a.Message).To(ContainSubstring(node.Name))
		}, timeout, poll).Should(Succeed())
	})

	It("drops the node from Deployed as soon as the node is ready again, with no other change to wake it", func() {
		setNodeReady(corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status")
		Eventually(func(g Gomega) {
			d := conditionOf(getMA(key), memoryv1alpha1.ConditionDeployed)
			g.Expect(d.Reason).To(Equal(memoryv1alpha1.ReasonDeploymentProgressing), "Deployed: %s", d.Message)
			g.Expect(d.Message).NotTo(ContainSubstring(node.Name))
		}, timeout, poll).Should(Succeed())
		markAvailable(ctx, key)
		Eventually(func() string { return conditionOf(getMA(key), memoryv1alpha1.ConditionDeployed).Reason }, timeout, poll).
			Should(Equal(memoryv1alpha1.ReasonDeploymentReady))
	})
})
