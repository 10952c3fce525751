//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// The taint and the node label of the placement spec: a node pool kept for agents.
const (
	agentsTaintKey   = "e2e.memory.agentmem.io/dedicated"
	agentsPoolLabel  = "e2e.memory.agentmem.io/pool"
	agentsPoolValue  = "agents"
	agentsTaintValue = "agents"
)

// setAgentsPool taints node for agents and labels it as their pool, or undoes both.
func setAgentsPool(ctx context.Context, c client.Client, node string, on bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		n := &corev1.Node{}
		g.Expect(c.Get(ctx, types.NamespacedName{Name: node}, n)).To(Succeed())
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == agentsTaintKey })
		delete(n.Labels, agentsPoolLabel)
		if on {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: agentsTaintKey, Value: agentsTaintValue, Effect: corev1.TaintEffectNoSchedule})
			n.Labels[agentsPoolLabel] = agentsPoolValue
		}
		g.Expect(c.Update(ctx, n)).To(Succeed())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}

// placementSpec: one node tainted for agents and labelled as their pool; a SQLite adapter
// whose template selects that pool and tolerates the taint becomes Available there, its
// conformance run's pod beside it, which only the inherited toleration lets in.
func placementSpec(ctx context.Context, c client.Client, ns string) {
	const name = "placed"
	nodes := &corev1.NodeList{}
	Expect(c.List(ctx, nodes)).To(Succeed())
	names := make([]string, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	node := names[len(names)-1]
	setAgentsPool(ctx, c, node, true)
	DeferCleanup(func(ctx SpecContext) { setAgentsPool(ctx, c, node, false) }, NodeTimeout(2*time.Minute))

	ma := networkedAdapter(ns, name, memoryv1alpha1.BackendSQLite, "sqlite", "immediate")
	ma.Spec.Backend.ConnectionSecretRef = nil
	ma.Spec.Template = &memoryv1alpha1.AdapterPodTemplate{
		Metadata: &memoryv1alpha1.AdapterPodMetadata{Labels: map[string]string{"cost-center": "agents"}},
		Spec: &memoryv1alpha1.AdapterPodSpec{
			NodeSelector: map[string]string{agentsPoolLabel: agentsPoolValue},
			Tolerations: []corev1.Toleration{{Key: agentsTaintKey, Operator: corev1.TolerationOpEqual, Value: agentsTaintValue,
				Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	Expect(c.Create(ctx, ma)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
	waitAvailable(ctx, ns, name)

	pods := &corev1.PodList{}
	Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"memory.agentmem.io/adapter": name})).To(Succeed())
	var adapter, run int
	for _, p := range pods.Items {
		component := p.Labels["app.kubernetes.io/component"]
		Expect(p.Spec.NodeName).To(Equal(node), "%s pod %s is on %s, not the agents' node %s", component, p.Name, p.Spec.NodeName, node)
		Expect(p.Labels).To(HaveKeyWithValue("cost-center", "agents"))
		switch component {
		case "adapter":
			adapter++
		case "conformance":
			run++
		}
	}
	Expect(adapter).To(BeNumerically(">=", 1), "no adapter pod:\n%s", podNodes(pods.Items))
	Expect(run).To(BeNumerically(">=", 1), "no conformance pod left to show where the run ran:\n%s", podNodes(pods.Items))
	fmt.Fprintf(GinkgoWriter, "placement: adapter and conformance pods on %s\n", node)
}
