package gate

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond/condtest"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/webhook"
)

// newNamespace creates a namespace for one spec, with the default ServiceAccount that pod
// admission looks for (envtest runs no controller that would create it).
func newNamespace(ctx context.Context) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gate-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "default"}})).To(Succeed())
	return ns.Name
}

// createAdapter creates a MemoryAdapter with the SQLite sample's manifest but the given
// search consistency.
func createAdapter(ctx context.Context, ns, name string, consistency memoryv1alpha1.SearchConsistency) *memoryv1alpha1.MemoryAdapter {
	GinkgoHelper()
	ma := &memoryv1alpha1.MemoryAdapter{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: memoryv1alpha1.MemoryAdapterSpec{
			Manifest: memoryv1alpha1.ManifestSpec{
				Adapter:           "sqlite",
				NativeItemFields:  []memoryv1alpha1.ItemField{"id", "created_at", "metadata", "content", "tags"},
				SupportedFilters:  []memoryv1alpha1.FilterKey{"branch_id", "source"},
				SearchConsistency: consistency,
				RetrieveFidelity:  "full", SearchFidelity: "full", SearchReturnsTags: true, PreservesMetadata: true,
			},
			Backend: memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendSQLite, Scope: "agents"},
		},
	}
	Expect(k8sClient.Create(ctx, ma)).To(Succeed())
	return ma
}

// setAvailable writes the status the MemoryAdapter controller writes: a passing conformance
// run of spec.manifest, and Available True or False with the given reason.
func setAvailable(ctx context.Context, ma *memoryv1alpha1.MemoryAdapter, available bool, reason string) {
	GinkgoHelper()
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
	orig := ma.DeepCopy()
	ma.Status.Conformance = &memoryv1alpha1.ConformanceResult{
		JobName: ma.Name + "-run", ManifestHash: ma.Spec.Manifest.Hash(), CompletionTime: metav1.Now(), Passed: 17,
	}
	status := metav1.ConditionTrue
	if !available {
		status = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&ma.Status.Conditions, metav1.Condition{
		Type: memoryv1alpha1.ConditionAvailable, Status: status, Reason: reason, Message: "set by the spec", ObservedGeneration: ma.Generation,
	})
	// A merge patch under the MemoryAdapter controller's field owner, as that controller
	// writes: the gate controller's status.workloads may change in between.
	Expect(k8sClient.Status().Patch(ctx, ma, client.MergeFrom(orig), client.FieldOwner(render.FieldOwner))).To(Succeed())
}

// agentPod is a workload pod; labels and annotations are what the spec gives.
func agentPod(ns, name string, labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup", Image: "agent:dev"}},
			Containers:     []corev1.Container{{Name: "agent", Image: "agent:dev"}},
		},
	}
}

func boundTo(adapter, requires string) (map[string]string, map[string]string) {
	return map[string]string{"memory.agentmem.io/adapter": adapter}, map[string]string{"memory.agentmem.io/requires": requires}
}

func getPod(ctx context.Context, g Gomega, p *corev1.Pod) *corev1.Pod {
	got := &corev1.Pod{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
	return got
}

// eventsOn returns the notes of the Events regarding the pod with the given reason.
func eventsOn(ctx context.Context, g Gomega, p *corev1.Pod, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(p.Namespace))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Pod" && e.Regarding.Name == p.Name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

func isGated(p *corev1.Pod) bool { return gated(p) }

func workloads(ctx context.Context, g Gomega, ma *memoryv1alpha1.MemoryAdapter) memoryv1alpha1.WorkloadCounts {
	got := &memoryv1alpha1.MemoryAdapter{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ma), got)).To(Succeed())
	if got.Status.Workloads == nil {
		return memoryv1alpha1.WorkloadCounts{Gated: -1, Released: -1}
	}
	return *got.Status.Workloads
}

// expectUntouched checks that the webhook did not patch the pod: no gate, no volume, no
// binding variable, no bound-to label.
func expectUntouched(p *corev1.Pod) {
	GinkgoHelper()
	Expect(p.Spec.SchedulingGates).To(BeEmpty())
	for _, v := range p.Spec.Volumes {
		Expect(v.Name).NotTo(HavePrefix("memory-binding-"))
	}
	for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
		for _, e := range c.Env {
			Expect(e.Name).NotTo(Equal(webhook.EnvBindingRoot))
		}
	}
	Expect(p.Labels).NotTo(HaveKey("memory.agentmem.io/bound-to"))
}

var _ = Describe("gating agent pods", Ordered, func() {
	var stop func()
	BeforeAll(func() { stop = startManager() })
	AfterAll(func() {
		hang.Store(false)
		if stop != nil {
			stop()
		}
	})

	It("keeps a pod requiring immediate search gated on an eventual adapter with an Event naming it, and releases one on an immediate adapter", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		eventual := createAdapter(ctx, ns, "eventual-mem", "eventual")
		setAvailable(ctx, eventual, true, memoryv1alpha1.ReasonAdapterAvailable)
		immediate := createAdapter(ctx, ns, "immediate-mem", "immediate")
		setAvailable(ctx, immediate, true, memoryv1alpha1.ReasonAdapterAvailable)

		l, a := boundTo("eventual-mem", "searchConsistency=immediate")
		held := agentPod(ns, "held", l, a)
		Expect(k8sClient.Create(ctx, held)).To(Succeed())
		By("checking what the webhook wrote into the pod")
		Expect(held.Spec.SchedulingGates).To(ConsistOf(corev1.PodSchedulingGate{Name: "memory.agentmem.io/adapter-ready"}))
		Expect(held.Labels).To(HaveKeyWithValue("memory.agentmem.io/bound-to", "eventual-mem"))
		Expect(held.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", "eventual-mem-binding")))
		for _, c := range append(held.Spec.InitContainers, held.Spec.Containers...) {
			Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "memory-binding-eventual-mem", MountPath: "/bindings/eventual-mem", ReadOnly: true}), c.Name)
			Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "SERVICE_BINDING_ROOT", Value: "/bindings"}), c.Name)
		}

		Eventually(func(g Gomega) {
			g.Expect(eventsOn(ctx, g, held, ReasonWaitingForAdapter)).To(ConsistOf(
				`MemoryAdapter "eventual-mem" does not meet: searchConsistency=immediate (the manifest says "eventual")`))
			g.Expect(workloads(ctx, g, eventual)).To(Equal(memoryv1alpha1.WorkloadCounts{Gated: 1}))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(isGated(getPod(ctx, Default, held))).To(BeTrue())

		l, a = boundTo("immediate-mem", "searchConsistency=immediate, supportedFilters=source")
		freed := agentPod(ns, "freed", l, a)
		Expect(k8sClient.Create(ctx, freed)).To(Succeed())
		Expect(isGated(freed)).To(BeTrue(), "every bound pod starts gated")
		Eventually(func(g Gomega) {
			g.Expect(isGated(getPod(ctx, g, freed))).To(BeFalse())
			g.Expect(eventsOn(ctx, g, freed, ReasonAdapterReady)).To(ConsistOf(ContainSubstring(`MemoryAdapter "immediate-mem" is Available and its verified manifest (sha256:`)))
			g.Expect(workloads(ctx, g, immediate)).To(Equal(memoryv1alpha1.WorkloadCounts{Released: 1}))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(isGated(getPod(ctx, Default, held))).To(BeTrue(), "the unmet pod is still gated")
		Expect(eventsOn(ctx, Default, held, ReasonWaitingForAdapter)).To(HaveLen(1), "an unchanged reason records no new Event")
	}, SpecTimeout(2*time.Minute))

	It("admits a pod created before its adapter and releases it once the adapter is Available, with no step on the pod", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		l, a := boundTo("late-mem", "retrieveFidelity>=native_fields")
		early := agentPod(ns, "early", l, a)
		Expect(k8sClient.Create(ctx, early)).To(Succeed())
		Expect(isGated(early)).To(BeTrue())
		Eventually(func(g Gomega) []string {
			return eventsOn(ctx, g, early, ReasonWaitingForAdapter)
		}).WithTimeout(time.Minute).Should(ConsistOf(`MemoryAdapter "late-mem" does not exist in this namespace yet`))

		ma := createAdapter(ctx, ns, "late-mem", "immediate")
		Eventually(func(g Gomega) []string {
			return eventsOn(ctx, g, early, ReasonWaitingForAdapter)
		}).WithTimeout(time.Minute).Should(ContainElement(`MemoryAdapter "late-mem" has no Available condition yet`))
		Expect(isGated(getPod(ctx, Default, early))).To(BeTrue())

		setAvailable(ctx, ma, true, memoryv1alpha1.ReasonAdapterAvailable)
		Eventually(func(g Gomega) {
			g.Expect(isGated(getPod(ctx, g, early))).To(BeFalse())
			g.Expect(workloads(ctx, g, ma)).To(Equal(memoryv1alpha1.WorkloadCounts{Released: 1}))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(getPod(ctx, Default, early).Annotations).NotTo(HaveKey(AnnotationGateMessage))
	}, SpecTimeout(2*time.Minute))

	It("keeps newly created pods gated while the adapter is Available=False", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		ma := createAdapter(ctx, ns, "flaky-mem", "immediate")
		setAvailable(ctx, ma, true, memoryv1alpha1.ReasonAdapterAvailable)
		l, a := boundTo("flaky-mem", "searchConsistency=immediate")
		before := agentPod(ns, "before", l, a)
		Expect(k8sClient.Create(ctx, before)).To(Succeed())
		Eventually(func(g Gomega) bool { return isGated(getPod(ctx, g, before)) }).WithTimeout(time.Minute).Should(BeFalse())

		setAvailable(ctx, ma, false, memoryv1alpha1.ReasonEvidenceUnreachable)
		after := agentPod(ns, "after", l, a)
		Expect(k8sClient.Create(ctx, after)).To(Succeed())
		Eventually(func(g Gomega) []string {
			return eventsOn(ctx, g, after, ReasonWaitingForAdapter)
		}).WithTimeout(time.Minute).Should(ConsistOf(`MemoryAdapter "flaky-mem" is not Available (EvidenceUnreachable)`))
		Expect(isGated(getPod(ctx, Default, after))).To(BeTrue())
		Expect(isGated(getPod(ctx, Default, before))).To(BeFalse(), "a released pod is not gated again: gates only guard scheduling")
		Eventually(func(g Gomega) memoryv1alpha1.WorkloadCounts { return workloads(ctx, g, ma) }).
			WithTimeout(time.Minute).Should(Equal(memoryv1alpha1.WorkloadCounts{Gated: 1, Released: 1}))
	}, SpecTimeout(2*time.Minute))

	It("gives each status field one writer: the counts are the gate controller's apply, the rest the MemoryAdapter controller's patch", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		ma := createAdapter(ctx, ns, "owned-mem", "immediate")
		setAvailable(ctx, ma, true, memoryv1alpha1.ReasonAdapterAvailable)
		l, a := boundTo("owned-mem", "searchConsistency=immediate")
		Expect(k8sClient.Create(ctx, agentPod(ns, "counted", l, a))).To(Succeed())
		Eventually(func(g Gomega) memoryv1alpha1.WorkloadCounts { return workloads(ctx, g, ma) }).
			WithTimeout(time.Minute).Should(Equal(memoryv1alpha1.WorkloadCounts{Released: 1}))

		By("the MemoryAdapter controller writing from a copy read before the counts existed")
		stale := ma.DeepCopy()
		stale.Status.Workloads = nil
		orig := stale.DeepCopy()
		meta.SetStatusCondition(&stale.Status.Conditions, metav1.Condition{
			Type: memoryv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, Reason: memoryv1alpha1.ReasonEvidenceValid, Message: "set by the spec",
		})
		Expect(k8sClient.Status().Patch(ctx, stale, client.MergeFrom(orig), client.FieldOwner(render.FieldOwner))).To(Succeed())
		Expect(workloads(ctx, Default, ma)).To(Equal(memoryv1alpha1.WorkloadCounts{Released: 1}), "a patch that never changed the counts removed them")

		got := &memoryv1alpha1.MemoryAdapter{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ma), got)).To(Succeed())
		owners, err := condtest.StatusOwners(got.ManagedFields)
		Expect(err).NotTo(HaveOccurred())
		Expect(owners).To(HaveKeyWithValue("f:workloads", []string{FieldOwner}))
		Expect(owners).To(HaveKeyWithValue("f:conditions", []string{render.FieldOwner}))
		Expect(owners).To(HaveKeyWithValue("f:conformance", []string{render.FieldOwner}))
		for field, managers := range owners {
			Expect(managers).To(HaveLen(1), "status field %s has writers %v", field, managers)
		}
	}, SpecTimeout(2*time.Minute))

	It("rejects a malformed requirement list with the parser's message naming the bad token", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		l, a := boundTo("any-mem", "searchConsistency=immediate, searchFidelity>=exact")
		err := k8sClient.Create(ctx, agentPod(ns, "malformed", l, a))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`admission webhook "bind.pods.memory.agentmem.io" denied the request`))
		Expect(err.Error()).To(ContainSubstring(`memory.agentmem.io/requires: clause 2, token "exact" at byte 45: unknown fidelity`))
	}, SpecTimeout(time.Minute))

	It("does not patch pods without the adapter label or without the requires annotation", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		l, a := boundTo("any-mem", "searchConsistency=immediate")
		for name, p := range map[string]*corev1.Pod{
			"plain":           agentPod(ns, "plain", nil, nil),
			"label-only":      agentPod(ns, "label-only", l, nil),
			"annotation-only": agentPod(ns, "annotation-only", nil, a),
		} {
			By(name)
			Expect(k8sClient.Create(ctx, p)).To(Succeed())
			expectUntouched(getPod(ctx, Default, p))
		}
	}, SpecTimeout(time.Minute))

	It("fails closed for bound pods and leaves other pods alone when the webhook times out or the manager is down", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		l, a := boundTo("any-mem", "")

		By("a webhook that stops answering: the API server gives up after the configured 5 s")
		hang.Store(true)
		err := k8sClient.Create(ctx, agentPod(ns, "while-hung", l, a))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`failed calling webhook "bind.pods.memory.agentmem.io"`))
		Expect(strings.ToLower(err.Error())).To(Or(ContainSubstring("deadline exceeded"), ContainSubstring("timeout")))
		Expect(k8sClient.Create(ctx, agentPod(ns, "plain-while-hung", nil, nil))).To(Succeed(), "the object selector keeps other pods away from the webhook")
		hang.Store(false)

		By("the manager stopped")
		stop()
		stop = nil
		err = k8sClient.Create(ctx, agentPod(ns, "while-down", l, a))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`failed calling webhook "bind.pods.memory.agentmem.io"`))
		plain := agentPod(ns, "plain-while-down", nil, nil)
		Expect(k8sClient.Create(ctx, plain)).To(Succeed())
		expectUntouched(plain)
	}, SpecTimeout(time.Minute))
})
