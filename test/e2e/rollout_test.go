//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/onsi/ginkgo/v2"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// rolledVersion is the adapter image version the rollout spec upgrades to; not the day-one
// upgrade spec's, so neither depends on which ran first.
const rolledVersion = "e2e-rolled"

// failedAnswers are the calls of a --read-back watcher that did not succeed: a store other
// than 201, a retrieve other than an equal 200, or no answer at all.
func failedAnswers(answers []agentAnswer) []agentAnswer {
	var out []agentAnswer
	for _, a := range answers {
		ok := (a.Op == "store" && a.Answer == "201 application/json -") || (a.Op == "retrieve" && a.Answer == "200 application/json -")
		if !ok {
			out = append(out, a)
		}
	}
	return out
}

// answersThrough waits until the agent's log holds a call made after until (so every call
// made before it is logged too) and returns the answers made since.
func answersThrough(ctx context.Context, ns, agent string, since, until time.Time) []agentAnswer {
	GinkgoHelper()
	var answers []agentAnswer
	Eventually(func(g Gomega) {
		answers = agentAnswers(ctx, ns, agent, since)
		g.Expect(answers).To(ContainElement(HaveField("At", BeTemporally(">", until))), "no call logged since %s", until.Format(time.RFC3339Nano))
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	return answers
}

// servingAdapterPods lists the adapter's pods that are ready and not being deleted.
func servingAdapterPods(ctx context.Context, c client.Client, ns, name string) []corev1.Pod {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"memory.agentmem.io/adapter": name, "app.kubernetes.io/component": "adapter"})).To(Succeed())
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				out = append(out, p)
			}
		}
	}
	return out
}

// rolloutSpec is a two-replica PostgreSQL adapter upgraded to a new image, then drained, while
// a bound agent stores and reads back every 200 ms over pooled connections: not one call may
// fail, the new version is trusted (Available) only after its own conformance run, a drain
// stops at the PodDisruptionBudget when a replacement has nowhere to run, and a drain with
// room moves a replica to another node. It needs more than one node.
func rolloutSpec(ctx context.Context, c client.Client, ns string) {
	const name = "pgroll"
	tl := newTimeline("rollout")
	_, conn := startStoppable(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=")
	Expect(c.Create(ctx, connectionSecret(ctx, ns, "pgroll-db", name, conn))).To(Succeed())
	ma := networkedAdapter(ns, name, memoryv1alpha1.BackendPostgres, "postgres", "immediate")
	ma.Spec.Replicas = ptr.To[int32](2)
	Expect(c.Create(ctx, ma)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
	waitAvailable(ctx, ns, name)
	key := types.NamespacedName{Namespace: ns, Name: name}
	pdb := &policyv1.PodDisruptionBudget{}
	Expect(c.Get(ctx, key, pdb)).To(Succeed())
	Expect(*pdb.Spec.MaxUnavailable).To(HaveField("IntVal", int32(1)))
	Expect(servingAdapterPods(ctx, c, ns, name)).To(HaveLen(2))
	tl.mark("Available with 2 ready replicas and a PodDisruptionBudget")

	By("a bound agent stores and reads back every 200 ms, keeping its connections")
	agent := startWatchingAgent(ctx, c, ns, name, "--interval=200ms", "--read-back", "--keep-alive")
	since := time.Now()
	tl.mark("agent %s calls", agent)

	By("upgrading the adapter image")
	img := loadAdapterImage(ctx, rolledVersion)
	Expect(c.Get(ctx, key, ma)).To(Succeed())
	oldVersion := ma.Status.AdapterVersion
	patch := client.MergeFrom(ma.DeepCopy())
	ma.Spec.Image = ptr.To(img)
	Expect(c.Patch(ctx, ma, patch)).To(Succeed())
	upgraded := tl.mark("spec.image set to %s (was version %s)", img, oldVersion)
	// Polled every 200 ms until the new version is Available: Available must never be True
	// for a version no run has verified.
	var trustedEarly []string
	Eventually(func(g Gomega) {
		got := &memoryv1alpha1.MemoryAdapter{}
		g.Expect(c.Get(ctx, key, got)).To(Succeed())
		available := meta.IsStatusConditionTrue(got.Status.Conditions, memoryv1alpha1.ConditionAvailable)
		if available && got.Status.Conformance != nil && got.Status.Conformance.AdapterVersion != got.Status.AdapterVersion {
			trustedEarly = append(trustedEarly, fmt.Sprintf("Available with adapter version %q, verified %q", got.Status.AdapterVersion, got.Status.Conformance.AdapterVersion))
		}
		g.Expect(got.Status.AdapterVersion).To(Equal(rolledVersion))
		g.Expect(got.Status.Conformance.AdapterVersion).To(Equal(rolledVersion))
		g.Expect(available).To(BeTrue())
	}).WithTimeout(availableDeadline).WithPolling(200 * time.Millisecond).Should(Succeed())
	Expect(trustedEarly).To(BeEmpty(), "the new version was trusted before its run")
	kubectl(ctx, "rollout", "status", "-n", ns, "deployment/"+name, "--timeout=3m")
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"memory.agentmem.io/adapter": name, "app.kubernetes.io/component": "adapter"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(2), "the old pods are gone")
		for _, p := range pods.Items {
			g.Expect(p.Spec.Containers[0].Image).To(Equal(img))
		}
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	rolled := tl.mark("rolled: both pods run %s, Available after the new version's run", img)
	var run int
	for _, j := range jobsOf(ctx, c, ns, name) {
		if j.Spec.Template.Spec.Containers[0].Image == img {
			run++
		}
	}
	Expect(run).To(Equal(1), "exactly one run verifies the new version")
	answers := answersThrough(ctx, ns, agent, since, rolled)
	tl.mark("the agent's calls from before the upgrade to after it (%.0f s): %s", rolled.Sub(since).Seconds(), summarizeAnswers(answers))
	Expect(len(answers)).To(BeNumerically(">=", int(rolled.Sub(upgraded)/time.Second)), "the agent kept calling through the rollout")
	Expect(failedAnswers(answers)).To(BeEmpty(), "calls that failed during the rollout")

	drainFrom := time.Now()
	drain := func(node, timeout string) (string, error) {
		return runKubectl(ctx, "drain", node, "--pod-selector=memory.agentmem.io/adapter="+name+",app.kubernetes.io/component=adapter",
			"--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+timeout)
	}
	nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	uncordonAll := func(ctx context.Context) {
		for _, n := range nodes.Items {
			_, _ = runKubectl(ctx, "uncordon", n.Name)
		}
	}
	DeferCleanup(func(ctx SpecContext) { uncordonAll(ctx) })

	By("draining both replicas' nodes with every node cordoned: the budget lets one replica go and holds the other")
	// With nowhere to run, the first evicted replica's replacement stays Pending, so the
	// second eviction must be refused for as long as the drain tries. The spread is
	// ScheduleAnyway, so both replicas may share a node: then one drain meets both.
	Expect(nodeCount(ctx)).To(BeNumerically(">", 1), "rolloutSpec drains a node onto the others: it runs on the three-node cluster")
	pods := servingAdapterPods(ctx, c, ns, name)
	Expect(pods).To(HaveLen(2))
	first, second := pods[0].Spec.NodeName, pods[1].Spec.NodeName
	for _, n := range nodes.Items {
		kubectl(ctx, "cordon", n.Name)
	}
	if first != second {
		out, err := drain(first, "2m")
		Expect(err).NotTo(HaveOccurred(), "the budget lets the first replica go:\n%s", out)
	}
	out, err := drain(second, "20s")
	tl.mark("every node cordoned; replicas on %s and %s; the last kubectl drain returned (%v)", first, second, err)
	Expect(err).To(HaveOccurred(), "the drain cannot finish: the budget holds the last serving replica:\n%s", out)
	Expect(out).To(ContainSubstring("disruption budget"))
	Expect(servingAdapterPods(ctx, c, ns, name)).To(HaveLen(1), "one replica was evicted and one kept")
	Expect(c.Get(ctx, key, pdb)).To(Succeed())
	Expect(pdb.Status.DisruptionsAllowed).To(BeZero())
	uncordonAll(ctx)
	kubectl(ctx, "rollout", "status", "-n", ns, "deployment/"+name, "--timeout=3m")
	tl.mark("uncordoned: 2 ready replicas again (%s)", podNodes(servingAdapterPods(ctx, c, ns, name)))

	By("draining the node of one replica: its replacement starts on another node")
	node := servingAdapterPods(ctx, c, ns, name)[0].Spec.NodeName
	out, err = drain(node, "3m")
	tl.mark("kubectl drain %s returned (%v)", node, err)
	Expect(err).NotTo(HaveOccurred(), "kubectl drain:\n%s", out)
	Eventually(func(g Gomega) {
		pods := servingAdapterPods(ctx, c, ns, name)
		g.Expect(pods).To(HaveLen(2))
		for _, p := range pods {
			g.Expect(p.Spec.NodeName).NotTo(Equal(node), "pod %s is on the drained node", p.Name)
		}
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	tl.mark("2 ready replicas, none on %s: %s", node, podNodes(servingAdapterPods(ctx, c, ns, name)))
	kubectl(ctx, "uncordon", node)
	kubectl(ctx, "rollout", "status", "-n", ns, "deployment/"+name, "--timeout=3m")
	dep := &appsv1.Deployment{}
	Expect(c.Get(ctx, key, dep)).To(Succeed())
	Expect(dep.Status.ReadyReplicas).To(Equal(int32(2)))
	back := tl.mark("uncordoned: 2 ready replicas again")
	answers = answersThrough(ctx, ns, agent, drainFrom, back)
	tl.mark("the agent's calls through the drain (%.0f s): %s", back.Sub(drainFrom).Seconds(), summarizeAnswers(answers))
	Expect(failedAnswers(answers)).To(BeEmpty(), "calls that failed during the drain")
}

// clusterTool runs the local cluster's own tool (hack/cluster, built by cluster-up.sh) with
// the cluster's binaries, for the commands that make node faults.
func clusterTool(ctx context.Context, args ...string) (string, error) {
	b, err := os.ReadFile(filepath.Join(clusterDir, "bin-dir"))
	if err != nil {
		return "", err
	}
	return run(ctx, filepath.Join(clusterDir, "tools", "cluster"),
		append([]string{"-dir", clusterDir, "-bin-dir", strings.TrimSpace(string(b)), "-timeout", "5m"}, args...)...)
}

// lostNodeSpec stops the kubelet of the node under a SQLite adapter with acknowledged items:
// Deployed must name the node and the data claim while it is down, and every acknowledged
// item must read back once the node is back.
func lostNodeSpec(ctx context.Context, c client.Client, ns string) {
	const name = "sqlnode"
	tl := newTimeline("lost-node")
	ma := networkedAdapter(ns, name, memoryv1alpha1.BackendSQLite, "sqlite", "immediate")
	ma.Spec.Backend.ConnectionSecretRef = nil
	Expect(c.Create(ctx, ma)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
	waitAvailable(ctx, ns, name)
	st := adapterStore(ctx, c, ns, name)
	var stored []memory.Item
	for i := range 20 {
		it := memory.NewItem([]byte(fmt.Sprintf(`{"n":%d}`, i)), "lost-node")
		_, err := st.Store(ctx, it)
		Expect(err).NotTo(HaveOccurred())
		stored = append(stored, it)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-data"}, pvc)).To(Succeed())
	node := pvc.Annotations["volume.kubernetes.io/selected-node"]
	Expect(node).NotTo(BeEmpty(), "the scheduler records the node of a local-path volume")
	tl.mark("Available; 20 items acknowledged; claim %s on node %s", pvc.Name, node)

	By("stopping the node's kubelet")
	down := false
	DeferCleanup(func(ctx SpecContext) {
		// Whatever failed, the node must come back for the specs after this one.
		if down {
			out, err := clusterTool(ctx, "start-node", node)
			Expect(err).NotTo(HaveOccurred(), "starting the node again:\n%s", out)
		}
	}, NodeTimeout(5*time.Minute))
	out, err := clusterTool(ctx, "stop-node", node)
	Expect(err).NotTo(HaveOccurred(), "stop-node:\n%s", out)
	down = true
	stopped := tl.mark("kubelet stopped")
	key := types.NamespacedName{Namespace: ns, Name: name}
	Eventually(func(g Gomega) {
		got := &memoryv1alpha1.MemoryAdapter{}
		g.Expect(c.Get(ctx, key, got)).To(Succeed())
		d := meta.FindStatusCondition(got.Status.Conditions, memoryv1alpha1.ConditionDeployed)
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Reason).To(Equal(memoryv1alpha1.ReasonNodeUnavailable), "Deployed: %s", d.Message)
		g.Expect(d.Message).To(And(ContainSubstring("node "+node), ContainSubstring("data claim "+pvc.Name)))
		g.Expect(meta.IsStatusConditionFalse(got.Status.Conditions, memoryv1alpha1.ConditionAvailable)).To(BeTrue())
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	Expect(c.Get(ctx, key, ma)).To(Succeed())
	named := tl.mark("Deployed=False NodeUnavailable, %.0f s after the stop: %s", time.Since(stopped).Seconds(),
		meta.FindStatusCondition(ma.Status.Conditions, memoryv1alpha1.ConditionDeployed).Message)

	By("starting the kubelet again")
	out, err = clusterTool(ctx, "start-node", node)
	Expect(err).NotTo(HaveOccurred(), "start-node:\n%s", out)
	down = false
	back := tl.mark("node Ready again (down %.0f s, named for %.0f s)", time.Since(stopped).Seconds(), time.Since(named).Seconds())
	waitAvailable(ctx, ns, name)
	tl.mark("Available again, %.0f s after the node", time.Since(back).Seconds())
	st = adapterStore(ctx, c, ns, name)
	for _, want := range stored {
		got, err := st.Retrieve(ctx, want.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).NotTo(BeNil(), "item %s was acknowledged before the stop", want.ID)
		Expect(got.Equal(want)).To(BeTrue(), "item %s came back as %+v", want.ID, got)
	}
	tl.mark("all 20 acknowledged items read back")
}
