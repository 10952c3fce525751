//go:build e2e

package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// Retention and quota on the cluster (issue 46 items 2 and 3): an SQLite adapter keeps items
// for a minute, swept every 10 s, and at most govQuota of them. A bound agent stores every two
// seconds: the stores past the quota are answered 507 quota_exceeded while every acknowledged
// item stays readable; no item is gone before its minute, every one is gone within the
// minute and one sweep; and once they are, the quota admits stores again.
const (
	govQuota  = 6
	govMaxAge = time.Minute
	govSweep  = 10 * time.Second
)

func governanceSpec(ctx context.Context, c client.Client, ns string) {
	const name = "govmem"
	tl := newTimeline("governance")
	ma := networkedAdapter(ns, name, memoryv1alpha1.BackendSQLite, "sqlite", "immediate")
	ma.Spec.Backend.ConnectionSecretRef = nil
	ma.Spec.Retention = &memoryv1alpha1.RetentionSpec{MaxAge: memoryv1alpha1.NewDuration(govMaxAge), SweepPeriod: memoryv1alpha1.NewDuration(govSweep)}
	ma.Spec.Quota = &memoryv1alpha1.QuotaSpec{MaxItems: ptr.To[int64](govQuota)}
	Expect(c.Create(ctx, ma)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
	waitAvailable(ctx, ns, name)
	tl.mark("Available: retention %s (sweep %s), quota %d items", govMaxAge, govSweep, govQuota)
	Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
	expectProfiles(ma, map[memoryv1alpha1.ConformanceProfileID]memoryv1alpha1.ConformanceOutcome{
		memoryv1alpha1.ProfileReadOnly: memoryv1alpha1.OutcomeNotApplicable, memoryv1alpha1.ProfileIsolation: memoryv1alpha1.OutcomeNotApplicable,
		memoryv1alpha1.ProfileRetention: memoryv1alpha1.OutcomePassed, memoryv1alpha1.ProfileQuota: memoryv1alpha1.OutcomePassed,
	})
	tl.mark("the conformance run proved the retention and quota claims")

	agent := startWatchingAgent(ctx, c, ns, name)
	By("the stores past the quota are refused with 507 quota_exceeded")
	var answers []agentAnswer
	Eventually(func(g Gomega) {
		answers = agentAnswers(ctx, ns, agent, time.Time{})
		g.Expect(answers).To(ContainElement(HaveField("Answer", "507 application/problem+json quota_exceeded")))
	}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	ids := storedIDs(answers)
	first := answers[0].At
	Expect(ids).To(HaveLen(govQuota), "acknowledged before the first refusal: %s", summarizeAnswers(answers))
	for _, a := range answers {
		Expect(a.Answer).To(Or(HavePrefix("201 "), Equal("507 application/problem+json quota_exceeded")), "every answer is an acknowledgement or the typed refusal: %s", summarizeAnswers(answers))
	}
	tl.mark("%s", summarizeAnswers(answers))

	By("nothing acknowledged is lost, and nothing is removed before its age")
	found, missing := countLostWrites(ctx, c, ns, name, ids)
	Expect(missing).To(BeZero())
	Expect(found).To(Equal(govQuota))
	Expect(time.Since(first)).To(BeNumerically("<", govMaxAge), "the read-back came too late to show the items kept while fresh")
	tl.mark("all %d read back %s after the first store", found, time.Since(first).Round(time.Second))

	By("status shows the scope at its item quota")
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
		g.Expect(ma.Status.Evidence).NotTo(BeNil())
		g.Expect(ma.Status.Evidence.QuotaUsage).To(ContainElement(And(
			HaveField("Scope", ma.Spec.Backend.Scope), HaveField("ItemsPercent", HaveValue(BeNumerically(">=", 100))))))
	}).WithTimeout(90 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
	for _, u := range ma.Status.Evidence.QuotaUsage {
		tl.mark("status.evidence.quotaUsage: scope %s at %d%% of its item quota", u.Scope, ptr.Deref(u.ItemsPercent, 0))
	}

	By("every item is gone within its age and one sweep, and the quota admits stores again")
	// The stated window ends one sweep period after the last acknowledged item's age (2 s
	// for the call's own time and the sweep's): read back only then, so that the read-back
	// judges the window and not the moment.
	var last, refused time.Time
	for _, a := range answers {
		if strings.HasPrefix(a.Answer, "201 ") {
			last = a.At
		} else if refused.IsZero() {
			refused = a.At
		}
	}
	deadline := last.Add(govMaxAge + govSweep + 2*time.Second)
	Eventually(func(g Gomega) {
		g.Expect(time.Now()).To(BeTemporally(">", deadline), "the window is not over yet")
		after := agentAnswers(ctx, ns, agent, refused)
		g.Expect(after).To(ContainElement(HaveField("Answer", HavePrefix("201 "))), "no store admitted since the quota refused one")
	}).WithTimeout(govMaxAge + govSweep + time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	found, missing = countLostWrites(ctx, c, ns, name, ids)
	Expect(found).To(BeZero(), "an item outlived its age and one sweep")
	Expect(missing).To(Equal(govQuota))
	tl.mark("the first %d items are gone %s after the first store; since the first refusal: %s", govQuota,
		time.Since(first).Round(time.Second), summarizeAnswers(agentAnswers(ctx, ns, agent, refused)))
}
