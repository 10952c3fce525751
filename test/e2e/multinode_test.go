//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// Three nodes (issue 27): the local cluster brought up with MAO_NODES=3 (make
// test-e2e-multinode, the test command's multi-node stage). The first node shares the host's
// network with the control plane; mao-node-2 and mao-node-3 each have a network namespace of
// their own, which hack/cluster can cut off (cut-node) as a failed switch port would.

// leaderLeaseName is the Lease the manager's replicas compete for (cmd/main.go).
const leaderLeaseName = "memory-adapter-operator.memory.agentmem.io"

// multiNodeLabel marks the specs that need three nodes; the single-node stage filters them out.
const multiNodeLabel = "multinode"

// nodeCount is the number of nodes the cluster has registered.
func nodeCount(ctx context.Context) int {
	GinkgoHelper()
	nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	return len(nodes.Items)
}

// podNodes names each pod's node, for timelines.
func podNodes(pods []corev1.Pod) string {
	parts := make([]string, 0, len(pods))
	for _, p := range pods {
		parts = append(parts, p.Name+"@"+p.Spec.NodeName)
	}
	return strings.Join(parts, ", ")
}

// conditionTrack polls an adapter's condition every 200 ms from a goroutine and keeps each
// change, so a spec can say for how long it was False; stop returns the changes.
type conditionTrack struct {
	stop func() []conditionChange
}

// conditionChange is one observed value of a condition and when it was first seen.
type conditionChange struct {
	At      time.Time
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

func trackCondition(ctx context.Context, c client.Client, key types.NamespacedName, condType string) conditionTrack {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan []conditionChange, 1)
	go func() {
		defer GinkgoRecover()
		var changes []conditionChange
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			got := &memoryv1alpha1.MemoryAdapter{}
			if err := c.Get(ctx, key, got); err == nil {
				if cond := meta.FindStatusCondition(got.Status.Conditions, condType); cond != nil {
					if n := len(changes); n == 0 || changes[n-1].Status != cond.Status || changes[n-1].Reason != cond.Reason {
						changes = append(changes, conditionChange{At: time.Now(), Status: cond.Status, Reason: cond.Reason, Message: cond.Message})
					}
				}
			}
			select {
			case <-ctx.Done():
				done <- changes
				return
			case <-tick.C:
			}
		}
	}()
	return conditionTrack{stop: func() []conditionChange { cancel(); return <-done }}
}

// notTrueFor sums the time the tracked condition was not True up to end.
func notTrueFor(changes []conditionChange, end time.Time) time.Duration {
	var total time.Duration
	for i, ch := range changes {
		if ch.Status == metav1.ConditionTrue {
			continue
		}
		until := end
		if i+1 < len(changes) {
			until = changes[i+1].At
		}
		total += until.Sub(ch.At)
	}
	return total
}

func describeChanges(changes []conditionChange, from time.Time) string {
	parts := make([]string, 0, len(changes))
	for _, ch := range changes {
		parts = append(parts, fmt.Sprintf("+%.1fs %s %s", ch.At.Sub(from).Seconds(), ch.Status, ch.Reason))
	}
	return strings.Join(parts, "; ")
}

var _ = Describe("three nodes: adapters survive a lost node, and roll and drain without a failed call", Serial, Ordered, Label(multiNodeLabel), func() {
	var (
		c  client.Client
		ns string
	)
	BeforeAll(func(ctx SpecContext) {
		Expect(nodeCount(ctx)).To(Equal(3), "these specs need the three-node cluster: make test-e2e-multinode brings it up (MAO_NODES=3)")
		c, ns = adapterNamespace(ctx, "nodes-")
	}, NodeTimeout(15*time.Minute))
	AfterAll(func(ctx SpecContext) { deleteAdapterNamespace(ctx, c, ns) }, NodeTimeout(10*time.Minute))
	AfterEach(func() { printDiagnostics(ns, operatorNamespace) })

	It("places an adapter and its conformance run on a node tainted for agents through spec.template", func(ctx SpecContext) {
		placementSpec(ctx, c, ns)
	}, SpecTimeout(10*time.Minute))

	// The cuts come last: the rollout is measured on nodes that were never cut.
	It("rolls a two-replica adapter to a new image under a bound agent's load without one failed call; a drain stops at the budget when the replacement has nowhere to run, and drains a node onto the others", func(ctx SpecContext) {
		rolloutSpec(ctx, c, ns)
	}, SpecTimeout(15*time.Minute))

	It("names the stopped node and the data claim of a SQLite adapter while its kubelet is down, and reads back every acknowledged item after", func(ctx SpecContext) {
		lostNodeSpec(ctx, c, ns)
	}, SpecTimeout(15*time.Minute))

	It("cuts the node of one of a PostgreSQL adapter's two replicas: the agent's calls go on through the client retry, and the replacement starts on a live node", func(ctx SpecContext) {
		cutReplicaSpec(ctx, c, ns)
	}, SpecTimeout(15*time.Minute))

	It("moves the manager's leadership off a cut node without rewriting a steady adapter's status", func(ctx SpecContext) {
		leaderSpec(ctx, c, ns)
	}, SpecTimeout(15*time.Minute))
})

// cutReplicaSpec: a two-replica PostgreSQL adapter with one replica on a node of its own
// namespace; that node is cut off while a bound agent on the first node stores and reads back
// every 200 ms. Measured: the agent's failed calls, how long Available was not True, and when
// the replacement was ready on a live node.
func cutReplicaSpec(ctx context.Context, c client.Client, ns string) {
	const name = "pgcut"
	tl := newTimeline("cut-replica")
	_, conn := startStoppable(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=")
	Expect(c.Create(ctx, connectionSecret(ctx, ns, "pgcut-db", name, conn))).To(Succeed())
	ma := networkedAdapter(ns, name, memoryv1alpha1.BackendPostgres, "postgres", "immediate")
	ma.Spec.Replicas = ptr.To[int32](2)
	Expect(c.Create(ctx, ma)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
	waitAvailable(ctx, ns, name)
	pods := servingAdapterPods(ctx, c, ns, name)
	Expect(pods).To(HaveLen(2))
	Expect(pods[0].Spec.NodeName).NotTo(Equal(pods[1].Spec.NodeName), "the replicas spread over nodes: %s", podNodes(pods))
	victim := ""
	for _, p := range pods {
		if p.Spec.NodeName != nodeName {
			victim = p.Spec.NodeName
		}
	}
	tl.mark("Available with replicas %s; cutting %s", podNodes(pods), victim)

	By("a bound agent on the first node stores and reads back every 200 ms")
	agent := startWatchingAgentOn(ctx, c, ns, name, nodeName, "--interval=200ms", "--read-back", "--keep-alive")
	key := types.NamespacedName{Namespace: ns, Name: name}
	track := trackCondition(ctx, c, key, memoryv1alpha1.ConditionAvailable)

	By("cutting " + victim + " off the network")
	cut := false
	DeferCleanup(func(ctx SpecContext) {
		if cut {
			out, err := clusterTool(ctx, "reconnect-node", victim)
			Expect(err).NotTo(HaveOccurred(), "reconnecting %s:\n%s", victim, out)
		}
	}, NodeTimeout(5*time.Minute))
	out, err := clusterTool(ctx, "cut-node", victim)
	Expect(err).NotTo(HaveOccurred(), "cut-node:\n%s", out)
	cut = true
	cutAt := tl.mark("%s cut", victim)

	var replacement corev1.Pod
	Eventually(func(g Gomega) {
		live := 0
		for _, p := range servingAdapterPods(ctx, c, ns, name) {
			if p.Spec.NodeName != victim {
				live++
				if !slices.ContainsFunc(pods, func(o corev1.Pod) bool { return o.Name == p.Name }) {
					replacement = p
				}
			}
		}
		g.Expect(replacement.Name).NotTo(BeEmpty(), "no replacement ready yet")
		g.Expect(live).To(Equal(2))
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
	ready := tl.mark("replacement %s ready on %s, %.0f s after the cut", replacement.Name, replacement.Spec.NodeName, time.Since(cutAt).Seconds())
	Expect(replacement.Spec.NodeName).NotTo(Equal(victim))
	// A replacement that restarted before it was ready says why: its last container log is
	// the only account of the time it took (the cluster's logs are gone with the stage).
	for _, st := range replacement.Status.ContainerStatuses {
		if st.RestartCount > 0 {
			prev, err := runKubectl(ctx, "logs", "-n", ns, replacement.Name, "-c", st.Name, "--previous", "--tail=20")
			tl.mark("replacement container %s restarted %d times; its last run's log (%v):\n%s", st.Name, st.RestartCount, err, prev)
		}
	}
	waitAvailable(ctx, ns, name)
	end := time.Now()
	changes := track.stop()
	tl.mark("Available from the cut on: %s (not True for %.1f s)", describeChanges(changes, cutAt), notTrueFor(changes, end).Seconds())
	answers := answersThrough(ctx, ns, agent, cutAt.Add(-time.Second), ready)
	failed := failedAnswers(answers)
	tl.mark("the agent's calls from the cut to the replacement (%.0f s): %s", ready.Sub(cutAt).Seconds(), summarizeAnswers(answers))
	for _, f := range failed {
		tl.mark("failed call at +%.1fs: %s %s %s", f.At.Sub(cutAt).Seconds(), f.Op, f.Answer, f.Detail)
	}
	Expect(len(answers)).To(BeNumerically(">=", int(ready.Sub(cutAt)/time.Second)), "the agent kept calling")
	// Until the node lifecycle controller marks the cut node's pods not ready, the Service
	// still sends new connections to the cut replica half the time. What the documented
	// client retry cannot cover, and nothing else, may fail in that window: the one call in
	// flight on a pooled connection to the cut replica (its request was sent, so it is not
	// sent again), and a call whose every attempt drew the cut replica (refused at once:
	// the host has no route to a cut node; 1 in 8 per new connection with three attempts).
	dropped := cutAt.Add(2 * time.Minute)
	for _, ch := range changes {
		if ch.Reason == memoryv1alpha1.ReasonNodeUnavailable {
			dropped = ch.At
			break
		}
	}
	inFlight := 0
	for _, f := range failed {
		Expect(f.At).To(BeTemporally("<", dropped.Add(5*time.Second)), "a call failed after the Service dropped the cut replica: %+v", f)
		switch {
		case strings.Contains(f.Answer, "reused true, request sent true"):
			inFlight++
		case strings.Contains(f.Answer, "request sent false"):
		default:
			Fail(fmt.Sprintf("a call failed other than on the cut replica's connection: %+v", f))
		}
	}
	Expect(inFlight).To(BeNumerically("<=", 1), "more than the one call in flight on the cut replica's pooled connection failed after being sent")
	tl.mark("failed: %d (in flight on the cut replica's connection: %d; every attempt to the cut replica: %d); the Service dropped it %.0f s after the cut",
		len(failed), inFlight, len(failed)-inFlight, dropped.Sub(cutAt).Seconds())

	By("reconnecting " + victim)
	out, err = clusterTool(ctx, "reconnect-node", victim)
	Expect(err).NotTo(HaveOccurred(), "reconnect-node:\n%s", out)
	cut = false
	tl.mark("%s Ready again", victim)
	kubectl(ctx, "rollout", "status", "-n", ns, "deployment/"+name, "--timeout=3m")
}

// leaderSpec: both manager replicas on nodes of their own namespace, the leader's node cut:
// the other replica takes the lease, and a steady adapter's status is left as it was.
func leaderSpec(ctx context.Context, c client.Client, ns string) {
	const name = "steady"
	tl := newTimeline("leader")
	By("placing both manager replicas off the first node")
	kubectl(ctx, "cordon", nodeName)
	DeferCleanup(func(ctx SpecContext) { _, _ = runKubectl(ctx, "uncordon", nodeName) })
	kubectl(ctx, "rollout", "restart", "-n", operatorNamespace, "deployment/"+managerDeployment)
	kubectl(ctx, "rollout", "status", "-n", operatorNamespace, "deployment/"+managerDeployment, "--timeout=5m")
	kubectl(ctx, "uncordon", nodeName)
	leaseKey := types.NamespacedName{Namespace: operatorNamespace, Name: leaderLeaseName}
	var holder string
	Eventually(func(g Gomega) {
		// The restart's old pods must be gone: a stopping leader releases the lease, and a
		// lease read from it would be handed over before any cut.
		pods := &corev1.PodList{}
		g.Expect(c.List(ctx, pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(2), "the restart's old manager pods are still there")
		lease := &coordinationv1.Lease{}
		g.Expect(c.Get(ctx, leaseKey, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		holder = *lease.Spec.HolderIdentity
		g.Expect(managerPodNode(ctx, c, holder)).NotTo(BeEmpty(), "the lease holder %s is not a running manager pod", holder)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	leaderNode := managerPodNode(ctx, c, holder)
	Expect(leaderNode).NotTo(Equal(nodeName))
	tl.mark("leader %s on %s", holder, leaderNode)

	By("a steady SQLite adapter, off the leader's node")
	kubectl(ctx, "cordon", leaderNode)
	ma := networkedAdapter(ns, name, memoryv1alpha1.BackendSQLite, "sqlite", "immediate")
	ma.Spec.Backend.ConnectionSecretRef = nil
	Expect(c.Create(ctx, ma)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
	waitAvailable(ctx, ns, name)
	kubectl(ctx, "uncordon", leaderNode)
	key := types.NamespacedName{Namespace: ns, Name: name}
	before := &memoryv1alpha1.MemoryAdapter{}
	Expect(c.Get(ctx, key, before)).To(Succeed())
	tl.mark("%s Available on %s", name, podNodes(servingAdapterPods(ctx, c, ns, name)))

	By("cutting the leader's node")
	cut := false
	DeferCleanup(func(ctx SpecContext) {
		if cut {
			out, err := clusterTool(ctx, "reconnect-node", leaderNode)
			Expect(err).NotTo(HaveOccurred(), "reconnecting %s:\n%s", leaderNode, out)
		}
	}, NodeTimeout(5*time.Minute))
	out, err := clusterTool(ctx, "cut-node", leaderNode)
	Expect(err).NotTo(HaveOccurred(), "cut-node:\n%s", out)
	cut = true
	cutAt := tl.mark("%s cut", leaderNode)
	var newHolder string
	Eventually(func(g Gomega) {
		lease := &coordinationv1.Lease{}
		g.Expect(c.Get(ctx, leaseKey, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		newHolder = *lease.Spec.HolderIdentity
		g.Expect(newHolder).NotTo(Equal(holder))
	}).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	took := tl.mark("%s holds the lease, %.1f s after the cut", newHolder, time.Since(cutAt).Seconds())
	// The leader renews every 2 s and its lease lasts 15 s: a lease taken sooner than it can
	// have expired was handed over, not taken from the cut node.
	Expect(took.Sub(cutAt)).To(BeNumerically(">", 5*time.Second), "the lease moved before it could expire")

	By("the new leader leaves the steady adapter's status as it was")
	// Two health periods and a resync's worth of the new leader's work.
	Consistently(func(g Gomega) {
		got := &memoryv1alpha1.MemoryAdapter{}
		g.Expect(c.Get(ctx, key, got)).To(Succeed())
		for _, want := range before.Status.Conditions {
			have := meta.FindStatusCondition(got.Status.Conditions, want.Type)
			g.Expect(have).NotTo(BeNil())
			g.Expect(have.Status).To(Equal(want.Status), "%s", want.Type)
			g.Expect(have.LastTransitionTime).To(Equal(want.LastTransitionTime), "%s changed: %s %s", want.Type, have.Reason, have.Message)
		}
		g.Expect(got.Status.Conformance).To(Equal(before.Status.Conformance), "the recorded run is the same")
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	tl.mark("conditions and the recorded run unchanged for 30 s after the takeover (%.1f s after the cut)", time.Since(took).Seconds()+took.Sub(cutAt).Seconds())

	By("reconnecting " + leaderNode)
	out, err = clusterTool(ctx, "reconnect-node", leaderNode)
	Expect(err).NotTo(HaveOccurred(), "reconnect-node:\n%s", out)
	cut = false
	kubectl(ctx, "rollout", "status", "-n", operatorNamespace, "deployment/"+managerDeployment, "--timeout=5m")
}

// managerPodNode is the node of the running manager pod that holds the lease as holder ("" when
// there is none, or it is stopping).
func managerPodNode(ctx context.Context, c client.Client, holder string) string {
	pod := &corev1.Pod{}
	// A lease holder identity is "<pod name>_<uuid>".
	podName, _, _ := strings.Cut(holder, "_")
	if err := c.Get(ctx, types.NamespacedName{Namespace: operatorNamespace, Name: podName}, pod); err != nil ||
		pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return ""
	}
	return pod.Spec.NodeName
}
