//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// The adapter's NetworkPolicy, enforced: the local cluster runs kube-network-policies
// (docs/local-cluster.md, NetworkPolicy), so a pod the policy does not admit cannot open a
// connection to the adapter at all, and the ones it admits (the manager, the conformance
// Job, bound workloads) still work. Every "cannot" comes with a "can" from the same probe
// pod, so a probe that never connects to anything cannot pass for enforcement.

const (
	// netpolQueue is the nfqueue the cluster's rules feed the agent (hack/cluster/netpol.go).
	netpolQueue = "98"
	// connectTimeout bounds each probe: a dropped SYN is retried by the kernel for longer
	// than any spec should wait; a connection the policy admits opens in milliseconds.
	connectTimeout = 4
)

// probePod is a busybox pod that idles so specs can exec nc in it; restricted-compliant, so
// it runs in the operator's test namespaces too.
func probePod(ns, name string, podLabels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: podLabels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532)},
			Containers: []corev1.Container{{
				Name: "probe", Image: helperImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/bin/sh", "-c", "sleep 3600"},
				SecurityContext: hardened(),
			}},
		},
	}
}

// startProbe creates a probe pod and waits until it runs.
func startProbe(ctx context.Context, c client.Client, pod *corev1.Pod) {
	GinkgoHelper()
	Expect(c.Create(ctx, pod)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, pod) })
	kubectl(ctx, "wait", "-n", pod.Namespace, "--for=condition=Ready", "pod/"+pod.Name, "--timeout=2m")
}

// connects reports whether the probe pod opens a TCP connection to addr within
// connectTimeout seconds; busybox nc runs true once connected (its -e takes the rest of the
// command line, so it comes last) and exits 1 on a timeout or a refusal.
func connects(ctx context.Context, ns, pod, addr string) bool {
	GinkgoHelper()
	host, port, err := net.SplitHostPort(addr)
	Expect(err).NotTo(HaveOccurred())
	out := kubectl(ctx, "exec", "-n", ns, pod, "--", "/bin/sh", "-c",
		fmt.Sprintf("nc -w %d %s %s -e /bin/true && echo CONNECTED || echo BLOCKED", connectTimeout, host, port))
	fmt.Fprintf(GinkgoWriter, "%s/%s -> %s: %s", ns, pod, addr, out)
	return strings.Contains(out, "CONNECTED")
}

// adapterAddrs are the adapter pod's address and its Service's, both on port 8080.
func adapterAddrs(ctx context.Context, c client.Client, ns, name string) (podAddr, svcAddr string) {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{
		"memory.agentmem.io/adapter": name, "app.kubernetes.io/component": "adapter"})).To(Succeed())
	Expect(pods.Items).NotTo(BeEmpty())
	Expect(pods.Items[0].Status.PodIP).NotTo(BeEmpty())
	svc := &corev1.Service{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc)).To(Succeed())
	return net.JoinHostPort(pods.Items[0].Status.PodIP, "8080"), net.JoinHostPort(svc.Spec.ClusterIP, "8080")
}

// dnsAddr is CoreDNS's TCP port behind kube-dns: an address no policy restricts, the probes'
// positive control.
var dnsAddr = net.JoinHostPort(clusterDNSIP, "53")

// ContinueOnFailure: past the first spec each one probes on its own, and a wrong policy should
// show every direction it gets wrong, not only the first. Its specs run in order on one process
// for over a minute in all, so the group counts as long.
var _ = Describe("the adapter's NetworkPolicy, enforced by kube-network-policies", Ordered, ContinueOnFailure, longSpec, func() {
	const adapter = "sqlite-memory"
	var (
		c       client.Client
		ns      string
		otherNS string
	)
	BeforeAll(func(ctx SpecContext) {
		// Enforcement is the premise of every spec here: without the agent's queue the
		// "cannot" specs would fail for the wrong reason and the "can" ones prove nothing.
		b, err := os.ReadFile("/proc/net/netfilter/nfnetlink_queue")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Fields(string(b))).To(ContainElement(netpolQueue), "no process reads nfqueue %s: the cluster's NetworkPolicy agent is not running", netpolQueue)
		c, ns = adapterNamespace(ctx, "netpol-")
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "netpol-other-"}}
		Expect(c.Create(ctx, other)).To(Succeed())
		otherNS = other.Name
		Eventually(func() error {
			return c.Get(ctx, types.NamespacedName{Namespace: otherNS, Name: "default"}, &corev1.ServiceAccount{})
		}).WithTimeout(time.Minute).Should(Succeed())
	}, NodeTimeout(5*time.Minute))
	AfterAll(func(ctx SpecContext) {
		if otherNS != "" {
			_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNS}})
		}
		deleteAdapterNamespace(ctx, c, ns)
	}, NodeTimeout(10*time.Minute))
	AfterEach(func() { printDiagnostics(ns, otherNS, operatorNamespace) })

	It("admits the manager and the conformance Job: the SQLite sample passes its run and is Available with the policy enforced", func(ctx SpecContext) {
		kubectl(ctx, "apply", "-n", ns, "-f", "config/samples/memory_v1alpha1_memoryadapter_sqlite.yaml")
		waitAvailable(ctx, ns, adapter)
		np := &networkingv1.NetworkPolicy{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: adapter}, np)).To(Succeed(), "the adapter has no NetworkPolicy: nothing here is under test")
		ma := &memoryv1alpha1.MemoryAdapter{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: adapter}, ma)).To(Succeed())
		// The report reaches status only if the Job's pod reached the adapter's pod.
		Expect(ma.Status.Conformance).NotTo(BeNil())
		Expect(ma.Status.Conformance.Cases).To(HaveLen(17))
		Expect(ma.Status.Conformance.Failed).To(BeZero())
		// Available is the manager's own evidence read of the adapter's pod, made after the run.
		Expect(condition(ctx, c, ns, adapter, "Available").Status).To(Equal(metav1.ConditionTrue))
		Expect(condition(ctx, c, ns, adapter, "Healthy").Status).To(Equal(metav1.ConditionTrue))
	}, SpecTimeout(12*time.Minute))

	It("refuses a pod of another namespace, at the adapter's pod and at its Service", func(ctx SpecContext) {
		podAddr, svcAddr := adapterAddrs(ctx, c, ns, adapter)
		startProbe(ctx, c, probePod(otherNS, "outsider", nil))
		Expect(connects(ctx, otherNS, "outsider", dnsAddr)).To(BeTrue(), "the probe reaches nothing: it proves nothing about the policy")
		Expect(connects(ctx, otherNS, "outsider", podAddr)).To(BeFalse(), "a pod of another namespace opened a connection to the adapter's pod")
		Expect(connects(ctx, otherNS, "outsider", svcAddr)).To(BeFalse(), "a pod of another namespace opened a connection to the adapter's Service")
	}, SpecTimeout(5*time.Minute))

	It("refuses an unbound pod of the adapter's own namespace, even one naming the adapter in its labels", func(ctx SpecContext) {
		podAddr, svcAddr := adapterAddrs(ctx, c, ns, adapter)
		// The adapter label alone is what a workload carries before the webhook binds it;
		// only bound-to (set by the webhook) and the conformance component are admitted.
		startProbe(ctx, c, probePod(ns, "unbound", map[string]string{"memory.agentmem.io/adapter": adapter}))
		Expect(connects(ctx, ns, "unbound", dnsAddr)).To(BeTrue(), "the probe reaches nothing: it proves nothing about the policy")
		Expect(connects(ctx, ns, "unbound", podAddr)).To(BeFalse(), "an unbound pod opened a connection to the adapter's pod")
		Expect(connects(ctx, ns, "unbound", svcAddr)).To(BeFalse(), "an unbound pod opened a connection to the adapter's Service")
	}, SpecTimeout(5*time.Minute))

	It("admits the bound agent: the webhook's bound-to label lets it store through the Service", func(ctx SpecContext) {
		pod := startWatchingAgent(ctx, c, ns, adapter)
		p := &corev1.Pod{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod}, p)).To(Succeed())
		Expect(p.Labels).To(HaveKeyWithValue("memory.agentmem.io/bound-to", adapter))
	}, SpecTimeout(5*time.Minute))

	It("admits the monitoring namespace to the adapter's metrics port and nothing else, and nobody else there", func(ctx SpecContext) {
		podAddr, _ := adapterAddrs(ctx, c, ns, adapter)
		host, _, err := net.SplitHostPort(podAddr)
		Expect(err).NotTo(HaveOccurred())
		metricsAddr := net.JoinHostPort(host, "9090")
		mon := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: monitoringNamespace}}
		Expect(client.IgnoreAlreadyExists(c.Create(ctx, mon))).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, mon) })
		Eventually(func() error {
			return c.Get(ctx, types.NamespacedName{Namespace: monitoringNamespace, Name: "default"}, &corev1.ServiceAccount{})
		}).WithTimeout(time.Minute).Should(Succeed())
		startProbe(ctx, c, probePod(monitoringNamespace, "prometheus", nil))
		Expect(connects(ctx, monitoringNamespace, "prometheus", dnsAddr)).To(BeTrue(), "the probe reaches nothing: it proves nothing about the policy")
		Expect(connects(ctx, monitoringNamespace, "prometheus", metricsAddr)).To(BeTrue(), "the monitoring namespace cannot reach the adapter's metrics port")
		Expect(connects(ctx, monitoringNamespace, "prometheus", podAddr)).To(BeFalse(), "the monitoring namespace opened a connection to the adapter's data port")
		startProbe(ctx, c, probePod(otherNS, "other-scraper", nil))
		Expect(connects(ctx, otherNS, "other-scraper", metricsAddr)).To(BeFalse(), "a pod of another namespace opened a connection to the adapter's metrics port")
	}, SpecTimeout(5*time.Minute))

	It("leaves the manager's metrics endpoint as documented: any pod reaches port 8443, where authentication decides", func(ctx SpecContext) {
		// docs/operator.md, Scraping the manager: no NetworkPolicy guards the endpoint; a
		// scraper's token is checked by the manager (401 without one, 403 without the
		// metrics-reader role; the Prometheus spec checks those answers).
		pods := managerPods(ctx, c)
		Expect(pods).NotTo(BeEmpty())
		startProbe(ctx, c, probePod(otherNS, "scraper", nil))
		for _, p := range pods {
			Expect(connects(ctx, otherNS, "scraper", net.JoinHostPort(p.Status.PodIP, "8443"))).To(BeTrue(), "manager pod %s's metrics port", p.Name)
		}
		code, err := scrapeStatus(ctx, net.JoinHostPort(pods[0].Status.PodIP, "8443"), "")
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(401))
	}, SpecTimeout(5*time.Minute))
})
