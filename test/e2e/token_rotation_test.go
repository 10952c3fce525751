//go:build e2e

package e2e

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// refusedToken reports whether err is the adapter's 401: the token is not (or no longer)
// one it accepts.
func refusedToken(err error) bool {
	var pe *remote.ProblemError
	return errors.As(err, &pe) && pe.Problem.Type == memory.ProblemUnauthorized
}

// adapterRestarts is the adapter's pods by UID with their containers' restart counts: a
// rotation that replaced or restarted a pod changes it.
func adapterRestarts(ctx context.Context, c client.Client, ns, name string) map[types.UID]int32 {
	GinkgoHelper()
	out := map[types.UID]int32{}
	for _, uid := range adapterPodUIDs(ctx, c, ns, name) {
		out[uid] = 0
	}
	pods := &corev1.PodList{}
	Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{
		"memory.agentmem.io/adapter": name, "app.kubernetes.io/component": "adapter"})).To(Succeed())
	for _, p := range pods.Items {
		if _, live := out[p.UID]; live {
			for _, s := range p.Status.ContainerStatuses {
				out[p.UID] += s.RestartCount
			}
		}
	}
	return out
}

// tokenRotationSpec is token rotation on the cluster: spec.token.rotation moves the binding
// to a new token without restarting the adapter's pod; two bound agents that each keep one
// client for their whole run, the Go one (agent-check --watch --keep-alive on
// remote.FromBinding) and the Python one (memory_adapter_client.from_binding in Debian's
// python3), store and read back every two seconds across the rotation and its grace period's
// end without one refusal; a client that kept the old token works through the grace period
// and is refused after it.
func tokenRotationSpec(ctx context.Context, c client.Client, ns string) {
	const name = "rotmem"
	const grace = 40 * time.Second
	tl := newTimeline("token-rotation")
	ma := networkedAdapter(ns, name, memoryv1alpha1.BackendSQLite, "sqlite", "immediate")
	ma.Spec.Backend.ConnectionSecretRef = nil
	Expect(c.Create(ctx, ma)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
	waitAvailable(ctx, ns, name)
	tl.mark("Available")

	By("a client on the node keeps the first token; a bound agent stores every two seconds")
	old := adapterStore(ctx, c, ns, name)
	kept := memory.NewItem([]byte(`"stored with the first token"`), "e2e")
	_, err := old.Store(ctx, kept)
	Expect(err).NotTo(HaveOccurred())
	since := time.Now()
	agent := startWatchingAgent(ctx, c, ns, name, "--keep-alive", "--read-back")
	pyAgent := startAgentPod(ctx, c, pythonAgentPod(ns, name), "")
	pods := adapterRestarts(ctx, c, ns, name)
	Expect(pods).To(HaveLen(1))
	tl.mark("agents %s (Go) and %s (Python) store and read back", agent, pyAgent)

	By("rotating the token")
	Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
	patch := client.MergeFrom(ma.DeepCopy())
	ma.Spec.Token = &memoryv1alpha1.TokenSpec{Rotation: "e2e-1", GracePeriodSeconds: ptr.To(int32(grace / time.Second))}
	Expect(c.Patch(ctx, ma, patch)).To(Succeed())
	tl.mark("spec.token.rotation e2e-1, grace %s", grace)
	var st *memoryv1alpha1.TokenStatus
	Eventually(func(g Gomega) {
		got := &memoryv1alpha1.MemoryAdapter{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), got)).To(Succeed())
		g.Expect(got.Status.Token).NotTo(BeNil())
		g.Expect(got.Status.Token.Rotation).To(Equal("e2e-1"), "pending: %q", got.Status.Token.PendingRotation)
		st = got.Status.Token
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	switched := tl.mark("status: the binding switched (the pod accepted the new token first); the old one is accepted until %s", st.PreviousExpiresAt.UTC().Format(time.RFC3339))
	Expect(st.PreviousExpiresAt).NotTo(BeNil())

	By("the new token works, and the old one too until the grace period ends")
	fresh := adapterStore(ctx, c, ns, name)
	_, err = fresh.Store(ctx, memory.NewItem([]byte(`"stored with the rotated token"`), "e2e"))
	Expect(err).NotTo(HaveOccurred())
	if time.Until(st.PreviousExpiresAt.Time) > 5*time.Second {
		_, err = old.Retrieve(ctx, kept.ID)
		Expect(err).NotTo(HaveOccurred(), "the old token was refused inside its grace period")
		tl.mark("the old token still accepted")
	}

	By("after the grace period the old token is refused, without the pod restarting")
	Eventually(func() bool {
		_, err := old.Retrieve(ctx, kept.ID)
		return refusedToken(err)
	}).WithTimeout(grace + 2*time.Minute).WithPolling(2 * time.Second).Should(BeTrue())
	refused := tl.mark("the old token refused")
	Expect(refused.After(st.PreviousExpiresAt.Time)).To(BeTrue(), "refused before the grace period ended")
	got, err := fresh.Retrieve(ctx, kept.ID)
	Expect(err).NotTo(HaveOccurred())
	Expect(got).NotTo(BeNil())
	Expect(adapterRestarts(ctx, c, ns, name)).To(Equal(pods), "the rotation restarted or replaced the adapter's pod")

	By("both agents picked up the new binding and saw no refusal")
	for _, pod := range []string{agent, pyAgent} {
		Eventually(func(g Gomega) {
			g.Expect(agentAnswers(ctx, ns, pod, refused.Add(2*time.Second))).NotTo(BeEmpty(), "%s: no call since the old token was refused", pod)
		}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		answers := agentAnswers(ctx, ns, pod, since)
		tl.mark("%s's answers: %s (switch at %s)", pod, summarizeAnswers(answers), switched.Format(time.RFC3339))
		Expect(answers).To(ContainElement(HaveField("At", BeTemporally(">", refused))), "%s made no call after the old token was refused", pod)
		for _, a := range answers {
			want := "201 application/json -"
			if a.Op == "retrieve" {
				want = "200 application/json -"
			}
			Expect(a.Answer).To(Equal(want), "%s's %s at %s (%s)", pod, a.Op, a.At.Format(time.RFC3339Nano), a.Detail)
		}
	}
}
