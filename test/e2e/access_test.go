//go:build e2e

package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/gate"
)

// accessSpec is spec.access on the cluster (issue 46 item 1): three ServiceAccounts, each
// bound by the webhook to a Secret of its own. The planner writes to the sub-scope "plans";
// the recaller reads it there and every store of its is refused with 403 forbidden; the
// outsider, read-write in a sub-scope of its own, sees none of the planner's items; a pod of
// a ServiceAccount the adapter does not list stays gated and says why.
func accessSpec(ctx context.Context, c client.Client, ns string) {
	const name = "accmem"
	tl := newTimeline("access")
	for _, sa := range []string{"planner", "recaller", "outsider"} {
		Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})).To(Succeed())
	}
	ma := networkedAdapter(ns, name, memoryv1alpha1.BackendSQLite, "sqlite", "immediate")
	ma.Spec.Backend.ConnectionSecretRef = nil
	ma.Spec.Access = &memoryv1alpha1.AccessSpec{ServiceAccounts: []memoryv1alpha1.ServiceAccountAccess{
		{Name: "planner", Rights: memoryv1alpha1.AccessReadWrite, SubScope: "plans"},
		{Name: "recaller", Rights: memoryv1alpha1.AccessReadOnly, SubScope: "plans"},
		{Name: "outsider", Rights: memoryv1alpha1.AccessReadWrite, SubScope: "outsider"},
	}}
	Expect(c.Create(ctx, ma)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
	waitAvailable(ctx, ns, name)
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
		g.Expect(ma.Status.Access).NotTo(BeNil())
		g.Expect(ma.Status.Access.ServiceAccounts).To(ConsistOf("planner", "recaller", "outsider"))
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	tl.mark("Available; status.access lists %v", ma.Status.Access.ServiceAccounts)
	expectProfiles(ma, map[memoryv1alpha1.ConformanceProfileID]memoryv1alpha1.ConformanceOutcome{
		memoryv1alpha1.ProfileReadOnly: memoryv1alpha1.OutcomePassed, memoryv1alpha1.ProfileIsolation: memoryv1alpha1.OutcomePassed,
		memoryv1alpha1.ProfileRetention: memoryv1alpha1.OutcomeNotApplicable, memoryv1alpha1.ProfileQuota: memoryv1alpha1.OutcomeNotApplicable,
	})
	tl.mark("the conformance run proved the read-only and isolation claims of manifest %s", ma.Status.Conformance.ManifestHash)

	By("the planner stores through its own binding")
	planner := watchingAgentPod(ns, name)
	planner.Name = name + "-planner"
	planner.Spec.ServiceAccountName = "planner"
	startAgentPod(ctx, c, planner, "")
	Expect(mountedSecret(ctx, c, planner)).To(Equal(name + "-binding.planner"))
	var ids []string
	Eventually(func(g Gomega) {
		ids = storedIDs(agentAnswers(ctx, ns, planner.Name, time.Time{}))
		g.Expect(len(ids)).To(BeNumerically(">=", 3))
	}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	tl.mark("the planner stored %d items", len(ids))

	By("the recaller's stores are refused with 403 forbidden")
	recaller := watchingAgentPod(ns, name)
	recaller.Name = name + "-recaller"
	recaller.Spec.ServiceAccountName = "recaller"
	Expect(c.Create(ctx, recaller)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, recaller) })
	Eventually(func(g Gomega) {
		answers := agentAnswers(ctx, ns, recaller.Name, time.Time{})
		g.Expect(len(answers)).To(BeNumerically(">=", 3))
		for _, a := range answers {
			g.Expect(a.Answer).To(Equal("403 application/problem+json forbidden"), "the recaller's %s: %s", a.Op, summarizeAnswers(answers))
		}
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	tl.mark("the recaller's stores: %s", summarizeAnswers(agentAnswers(ctx, ns, recaller.Name, time.Time{})))

	By("the recaller reads every planner item; the outsider none")
	found, missing := countLostWritesAs(ctx, c, ns, name, "recaller", ids)
	Expect(found).To(Equal(len(ids)), "the recaller reads the planner's sub-scope")
	Expect(missing).To(BeZero())
	found, missing = countLostWritesAs(ctx, c, ns, name, "outsider", ids)
	Expect(found).To(BeZero(), "the outsider's sub-scope holds none of the planner's items")
	Expect(missing).To(Equal(len(ids)))
	tl.mark("recaller found %d of %d; outsider found 0", len(ids), len(ids))

	By("a pod of an unlisted ServiceAccount stays gated and says why")
	stranger := agentPod(ns, name+"-stranger", name, adapterImage, []string{"agent-check", "--adapter=" + name})
	Expect(c.Create(ctx, stranger)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, stranger) })
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(stranger), stranger)).To(Succeed())
		g.Expect(stranger.Annotations[gate.AnnotationGateMessage]).To(ContainSubstring(`grants ServiceAccount "default" no access`))
	}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	Consistently(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(stranger), stranger)).To(Succeed())
		g.Expect(stranger.Spec.SchedulingGates).NotTo(BeEmpty())
	}).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())
	tl.mark("the stranger stays gated: %s", stranger.Annotations[gate.AnnotationGateMessage])
}

// mountedSecret is the binding Secret the webhook mounted into pod.
func mountedSecret(ctx context.Context, c client.Client, pod *corev1.Pod) string {
	GinkgoHelper()
	got := &corev1.Pod{}
	Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
	for _, v := range got.Spec.Volumes {
		if strings.HasPrefix(v.Name, "memory-binding-") && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}

// expectProfiles: the run that made the adapter Available verified its published manifest
// (spec.manifest with the governance claim) and the governance profiles came out as want.
func expectProfiles(ma *memoryv1alpha1.MemoryAdapter, want map[memoryv1alpha1.ConformanceProfileID]memoryv1alpha1.ConformanceOutcome) {
	GinkgoHelper()
	Expect(ma.Status.Conformance).NotTo(BeNil())
	Expect(ma.Status.Conformance.ManifestHash).To(Equal(ma.PublishedManifestHash()))
	Expect(ma.Status.Conformance.ManifestHash).NotTo(Equal(ma.Spec.Manifest.Hash()), "the governance claim is part of the verified manifest")
	got := map[memoryv1alpha1.ConformanceProfileID]memoryv1alpha1.ConformanceOutcome{}
	for _, p := range ma.Status.Conformance.Profiles {
		got[p.ID] = p.Outcome
	}
	Expect(got).To(Equal(want), "status.conformance.profiles: %+v", ma.Status.Conformance.Profiles)
}
