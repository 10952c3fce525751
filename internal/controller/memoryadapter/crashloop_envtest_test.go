package memoryadapter

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// A PostgreSQL adapter whose server refuses the password exits at start-up and is restarted by
// the kubelet with a growing back-off. Tried live, that showed as DeploymentProgressing with a
// message that changed on every restart and named the cause nowhere an operator looks first.
var _ = Describe("an adapter whose container keeps exiting", Ordered, func() {
	const cause = `serve: open postgres backend: FATAL: password authentication failed for user "agent" (SQLSTATE 28P01)`
	var (
		ctx = context.Background()
		key types.NamespacedName
		pod *corev1.Pod
	)
	BeforeAll(func() {
		DeferCleanup(startManager())
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crashloop-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		key = types.NamespacedName{Namespace: ns.Name, Name: "crashy"}
	})

	// crash plays the kubelet between two restarts: the container Running but not ready for a
	// moment, or Waiting in CrashLoopBackOff, with the last exit and its message kept.
	crash := func(restarts int32, waiting bool) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), p)).To(Succeed())
			state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
			if waiting {
				state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
					Message: "back-off " + (time.Duration(restarts) * 10 * time.Second).String() + " restarting failed container"}}
			}
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{
				Name: "adapter", Image: p.Spec.Containers[0].Image, RestartCount: restarts, Ready: false, State: state,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 1, Reason: "Error", Message: "opening the backend\n" + cause, FinishedAt: metav1.Now(),
				}},
			}}
			g.Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())
		}, timeout, poll).Should(Succeed())
	}

	It("is AdapterCrashLooping quoting the cause, the same through every restart, Stalled for kstatus, announced once", func() {
		ma := sqliteAdapter(key.Namespace, key.Name)
		Expect(k8sClient.Create(ctx, ma)).To(Succeed())
		dep := &appsv1.Deployment{}
		Eventually(func() error { return k8sClient.Get(ctx, key, dep) }, timeout, poll).Should(Succeed())
		pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-pod-0", Labels: dep.Spec.Template.Labels},
			Spec: *dep.Spec.Template.Spec.DeepCopy()}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())

		var first metav1.Condition
		for i, waiting := range []bool{true, false, true, false, true} {
			crash(int32(i+1), waiting)
			Eventually(func(g Gomega) {
				got := getMA(key)
				d := conditionOf(got, memoryv1alpha1.ConditionDeployed)
				g.Expect(d.Reason).To(Equal(memoryv1alpha1.ReasonAdapterCrashLooping), d.Message)
				g.Expect(d.Message).To(ContainSubstring(cause))
				if first.Message == "" {
					first = d
				}
				g.Expect(d.Message).To(Equal(first.Message), "the message moved with the kubelet's back-off")
				g.Expect(d.LastTransitionTime).To(Equal(first.LastTransitionTime))
				a := conditionOf(got, memoryv1alpha1.ConditionAvailable)
				g.Expect(a.Reason).To(Equal(memoryv1alpha1.ReasonAdapterCrashLooping))
				g.Expect(conditionOf(got, memoryv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionTrue))
				g.Expect(conditionOf(got, memoryv1alpha1.ConditionReady).Reason).To(Equal(memoryv1alpha1.ReasonAdapterCrashLooping))
				g.Expect(kstatusOf(g, key)).To(Equal(kstatus.FailedStatus))
			}, timeout, poll).Should(Succeed())
		}

		By("one Event for the verdict, Available's, naming Deployed and quoting the cause")
		Eventually(func(g Gomega) {
			list := &eventsv1.EventList{}
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(key.Namespace))).To(Succeed())
			var notes []string
			count := 0
			for _, e := range list.Items {
				if e.Regarding.Name != key.Name || e.Reason != memoryv1alpha1.ReasonAdapterCrashLooping {
					continue
				}
				n := 1
				if e.Series != nil {
					n = int(e.Series.Count)
				}
				count += n
				notes = append(notes, e.Action+": "+e.Note)
				g.Expect(e.Note).To(ContainSubstring(cause))
			}
			// Deployed and Available each take the reason once, in the same write: Available
			// restates Deployed, so its Event is the one; Ready, Stalled and Reconciling
			// restate Available and announce nothing.
			g.Expect(count).To(Equal(1), strings.Join(notes, "\n"))
			g.Expect(notes).To(ConsistOf(HavePrefix("SetAvailable: Available is False: Deployed: ")))
		}, timeout, poll).Should(Succeed())
	})
})
