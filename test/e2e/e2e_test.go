//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// Deadlines are generous: the machine is shared and two cores are slow to start pods; a
// healthy cluster meets each in seconds.
const (
	podDeadline     = 3 * time.Minute
	serviceDeadline = 2 * time.Minute
	jobDeadline     = 5 * time.Minute
	poll            = 500 * time.Millisecond
)

// hardened is the container security context the operator uses for adapter pods; the
// images must run under it (non-root user, no shell needed, read-only root).
func hardened() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func labels(app string) map[string]string { return map[string]string{"app.kubernetes.io/name": app} }

var _ = Describe("the local cluster", Ordered, func() {
	var (
		ctx       context.Context
		clusterIP string
	)
	BeforeAll(func() { ctx = context.Background() })

	AfterEach(func() { printDiagnostics(namespace) })

	It("runs the adapter Deployment until Available and answers through its Service", func() {
		const name = "adapter"
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels(name)},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels(name)},
					Spec: corev1.PodSpec{
						Containers: []corev1.Container{{
							Name:            "adapter",
							Image:           adapterImage,
							ImagePullPolicy: corev1.PullIfNotPresent,
							Args:            []string{"serve", "--backend", "inmemory", "--listen", ":8080", "--insecure-no-token"},
							Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
							ReadinessProbe: &corev1.Probe{
								ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
								PeriodSeconds: 2,
							},
							SecurityContext: hardened(),
						}},
					},
				},
			},
		}
		_, err := clientset.AppsV1().Deployments(namespace).Create(ctx, dep, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		svc, err := clientset.CoreV1().Services(namespace).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: corev1.ServiceSpec{
				Selector: labels(name),
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		clusterIP = svc.Spec.ClusterIP
		Expect(clusterIP).To(HavePrefix("10.96.0."))

		By("waiting for the Deployment to become Available (controller-manager, scheduler, kubelet, readiness probe)")
		Eventually(func(g Gomega) {
			d, err := clientset.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Status.Conditions).To(ContainElement(And(
				HaveField("Type", appsv1.DeploymentAvailable), HaveField("Status", corev1.ConditionTrue))))
			g.Expect(d.Status.ReadyReplicas).To(Equal(int32(1)))
		}).WithTimeout(podDeadline).WithPolling(poll).Should(Succeed())

		pods, err := clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		Expect(err).NotTo(HaveOccurred())
		Expect(pods.Items).To(HaveLen(1))
		pod := pods.Items[0]
		Expect(pod.Spec.NodeName).To(Equal(nodeName))
		Expect(pod.Status.PodIP).To(HavePrefix("10.244.0."), "the pod has an address on the CNI bridge, in its own network namespace")
		Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
		Expect(pod.Status.ContainerStatuses[0].ContainerID).To(HavePrefix("containerd://"))

		By("calling the adapter through the Service's ClusterIP (kube-proxy iptables rules)")
		var manifest memory.Manifest
		Eventually(func(g Gomega) {
			body := httpGet(g, fmt.Sprintf("http://%s/healthz", clusterIP))
			g.Expect(body).NotTo(BeEmpty())
			body = httpGet(g, fmt.Sprintf("http://%s/v1/manifest", clusterIP))
			g.Expect(json.Unmarshal(body, &manifest)).To(Succeed())
		}).WithTimeout(serviceDeadline).WithPolling(poll).Should(Succeed())
		Expect(manifest.Validate()).To(Succeed(), "the adapter publishes a coherent manifest")

		By("resolving the Service's name through cluster DNS (CoreDNS behind kube-dns " + clusterDNSIP + ")")
		resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, net.JoinHostPort(clusterDNSIP, "53"))
		}}
		Eventually(func(g Gomega) {
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			addrs, err := resolver.LookupHost(lctx, fmt.Sprintf("%s.%s.svc.cluster.local", name, namespace))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(addrs).To(ConsistOf(clusterIP))
		}).WithTimeout(serviceDeadline).WithPolling(poll).Should(Succeed())

		By("reading the container's log through the API server and the kubelet")
		Eventually(func(g Gomega) {
			raw, err := clientset.CoreV1().Pods(namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(raw)).To(ContainSubstring(`"msg":"Serving"`))
			g.Expect(string(raw)).To(ContainSubstring(manifest.Hash()))
		}).WithTimeout(serviceDeadline).WithPolling(poll).Should(Succeed())
	})

	It("completes a conformance Job whose termination message reaches pod status", func() {
		Expect(clusterIP).NotTo(BeEmpty(), "needs the adapter Service of the previous spec")
		const name = "conformance"
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To[int32](0),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels(name)},
					Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{
							Name:            "conformance",
							Image:           adapterImage,
							ImagePullPolicy: corev1.PullIfNotPresent,
							// --server-url goes through the Service from inside a pod: the
							// name resolves through cluster DNS, then ClusterIP -> kube-proxy
							// -> the adapter pod.
							Args: []string{"conformance", "--backend", "inmemory", "--report-file", "",
								"--server-url", "http://adapter." + namespace + ".svc.cluster.local"},
							TerminationMessagePolicy: corev1.TerminationMessageReadFile,
							SecurityContext:          hardened(),
						}},
					},
				},
			},
		}
		_, err := clientset.BatchV1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("waiting for the Job to complete")
		Eventually(func(g Gomega) {
			j, err := clientset.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(j.Status.Conditions).NotTo(ContainElement(HaveField("Type", batchv1.JobFailed)), "the Job failed")
			g.Expect(j.Status.Conditions).To(ContainElement(And(
				HaveField("Type", batchv1.JobComplete), HaveField("Status", corev1.ConditionTrue))))
		}).WithTimeout(jobDeadline).WithPolling(poll).Should(Succeed())

		By("reading the compact report from the pod's termination message")
		pods, err := clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
		Expect(err).NotTo(HaveOccurred())
		Expect(pods.Items).To(HaveLen(1))
		st := pods.Items[0].Status.ContainerStatuses
		Expect(st).To(HaveLen(1))
		Expect(st[0].State.Terminated).NotTo(BeNil())
		Expect(st[0].State.Terminated.ExitCode).To(BeZero())
		report, err := conformance.ParseCompact([]byte(st[0].State.Terminated.Message))
		Expect(err).NotTo(HaveOccurred(), "termination message: %q", st[0].State.Terminated.Message)
		Expect(report.Result).To(Equal(conformance.Outcome("Passed")))
		Expect(report.Cases).To(HaveLen(len(conformance.Cases())))
		Expect(report.Counts.Failed).To(BeZero())
	})

	It("keeps a pod with a scheduling gate Pending until the gate is removed", func() {
		const gate = "memory.agentmem.io/e2e"
		pod := func(name string, gated bool) *corev1.Pod {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels(name)},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name: "main", Image: pauseImage, ImagePullPolicy: corev1.PullIfNotPresent,
						SecurityContext: hardened(),
					}},
				},
			}
			if gated {
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: gate}}
			}
			return p
		}
		_, err := clientset.CoreV1().Pods(namespace).Create(ctx, pod("gated", true), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			p, err := clientset.CoreV1().Pods(namespace).Get(ctx, "gated", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.Conditions).To(ContainElement(And(
				HaveField("Type", corev1.PodScheduled), HaveField("Status", corev1.ConditionFalse),
				HaveField("Reason", corev1.PodReasonSchedulingGated))))
		}).WithTimeout(podDeadline).WithPolling(poll).Should(Succeed())

		By("scheduling an ungated pod created after it, proving the scheduler is active")
		_, err = clientset.CoreV1().Pods(namespace).Create(ctx, pod("ungated", false), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			p, err := clientset.CoreV1().Pods(namespace).Get(ctx, "ungated", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.NodeName).To(Equal(nodeName))
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithTimeout(podDeadline).WithPolling(poll).Should(Succeed())

		gated, err := clientset.CoreV1().Pods(namespace).Get(ctx, "gated", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(gated.Spec.NodeName).To(BeEmpty(), "the scheduler bound a gated pod")
		Expect(gated.Status.Phase).To(Equal(corev1.PodPending))

		By("removing the gate")
		gated.Spec.SchedulingGates = nil
		_, err = clientset.CoreV1().Pods(namespace).Update(ctx, gated, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			p, err := clientset.CoreV1().Pods(namespace).Get(ctx, "gated", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.NodeName).To(Equal(nodeName))
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithTimeout(podDeadline).WithPolling(poll).Should(Succeed())
	})
})

// printDiagnostics prints, when the current spec failed, what a person would look at first:
// the pods' status and the events of each namespace, and the node components' last log lines.
func printDiagnostics(namespaces ...string) {
	if !CurrentSpecReport().Failed() || clientset == nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ns := range namespaces {
		if pods, err := clientset.CoreV1().Pods(ns).List(dctx, metav1.ListOptions{}); err == nil {
			for _, p := range pods.Items {
				b, _ := json.MarshalIndent(p.Status, "", "  ")
				fmt.Fprintf(GinkgoWriter, "--- pod %s/%s (node %q) status:\n%s\n", ns, p.Name, p.Spec.NodeName, b)
				for _, c := range p.Spec.Containers {
					tail := int64(30)
					logs, err := clientset.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail}).DoRaw(dctx)
					if err == nil {
						fmt.Fprintf(GinkgoWriter, "--- logs of %s/%s container %s:\n%s\n", ns, p.Name, c.Name, logs)
					}
				}
			}
		}
		// The adapters' own account: conditions, the recorded run and its cases.
		fmt.Fprintf(GinkgoWriter, "--- MemoryAdapters in %s:\n%s\n", ns, kubectlQuiet(dctx, "get", "madp", "-n", ns,
			"-o", `jsonpath={range .items[*]}{.metadata.name}{": "}{.status}{"\n"}{end}`))
		if evs, err := clientset.CoreV1().Events(ns).List(dctx, metav1.ListOptions{}); err == nil {
			for _, e := range evs.Items {
				fmt.Fprintf(GinkgoWriter, "--- event %s %s %s/%s %s: %s\n", ns, e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
	for _, c := range []string{"kubelet", "containerd", "kube-proxy", "kube-network-policies", "kube-controller-manager", "kube-scheduler"} {
		fmt.Fprintf(GinkgoWriter, "--- %s log tail:\n%s\n", c, tailFile(filepath.Join(clusterDir, "logs", c+".log"), 25))
	}
}

// httpGet fetches url from the host, failing g on transport errors or non-200 answers.
func httpGet(g Gomega, url string) []byte {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s: %s", url, body)
	return body
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
