//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/adapters/postgres"
	"github.com/agentmem/memory-adapter-operator/adapters/redis"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/gate"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond/condtest"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// The operator loop on the real cluster: the manager installed by `make deploy`, adapters
// verified by real conformance Jobs, and real causes (a stopped PostgreSQL server, an image
// upgrade, a deleted pod, a deleted manager) observed by the operator on its own.

const (
	availableDeadline = 8 * time.Minute
	upgradedVersion   = "e2e-upgraded"
)

// loadAdapterImage builds the adapter image again with another version stamped in (what
// `memory-adapter version` and the evidence report), loads it into the cluster's containerd,
// and returns its name: a new release of the adapter, for the upgrade specs.
func loadAdapterImage(ctx context.Context, version string) string {
	GinkgoHelper()
	img := strings.TrimSuffix(adapterImage, ":dev") + ":" + version
	out, err := run(ctx, filepath.Join(clusterDir, "tools", "images"), "-version", version,
		"-out", filepath.Join(clusterDir, "images"), "-load", containerdSockets(ctx),
		img+"=./cmd/memory-adapter:/memory-adapter")
	Expect(err).NotTo(HaveOccurred(), "building %s:\n%s", img, out)
	return img
}

// kubectl runs the project-built kubectl against the local cluster, as a user would.
func kubectl(ctx context.Context, args ...string) string {
	GinkgoHelper()
	out, err := runKubectl(ctx, args...)
	Expect(err).NotTo(HaveOccurred(), "kubectl %s:\n%s", strings.Join(args, " "), out)
	return out
}

// runKubectl runs the cluster's kubectl from the repository root against the local cluster.
func runKubectl(ctx context.Context, args ...string) (string, error) {
	b, err := os.ReadFile(filepath.Join(clusterDir, "bin-dir"))
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(strings.TrimSpace(string(b)), "kubectl"), args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(clusterDir, "admin.kubeconfig"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// waitAvailable is the user's check: kubectl wait on the Available condition. When it times
// out, the failure carries the adapter's status (conditions, the recorded run's cases) and its
// Jobs: the adapter and its Jobs may be gone by the time anyone reads the log.
func waitAvailable(ctx context.Context, ns, name string) {
	GinkgoHelper()
	out, err := runKubectl(ctx, "wait", "-n", ns, "--for=condition=Available", "madp/"+name, fmt.Sprintf("--timeout=%s", availableDeadline))
	if err != nil {
		Fail(fmt.Sprintf("kubectl wait -n %s --for=condition=Available madp/%s --timeout=%s: %v: %s\nits status: %s\nits Jobs:\n%s",
			ns, name, availableDeadline, err, strings.TrimSpace(out),
			kubectlQuiet(ctx, "get", "madp", "-n", ns, name, "-o", "jsonpath={.status}"),
			kubectlQuiet(ctx, "get", "jobs", "-n", ns, "-l", "memory.agentmem.io/adapter="+name, "-o", "wide")))
	}
}

func loopClient() client.Client {
	GinkgoHelper()
	s := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(s)).To(Succeed())
	Expect(memoryv1alpha1.AddToScheme(s)).To(Succeed())
	c, err := client.New(restConfig, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// adapterStore is a client of the adapter's Service from the host, authenticated with the
// token of the adapter's binding Secret.
func adapterStore(ctx context.Context, c client.Client, ns, name string) *remote.Store {
	GinkgoHelper()
	sec := &corev1.Secret{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-binding"}, sec)).To(Succeed())
	svc := &corev1.Service{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc)).To(Succeed())
	// From the node the Service is reached by its address; over TLS (the default) the
	// certificate is checked against the binding's ca.crt for the Service's name, as a bound
	// pod checks it.
	scheme, serverName := "http", ""
	if len(sec.Data["ca.crt"]) > 0 {
		scheme, serverName = "https", fmt.Sprintf("%s.%s.svc", name, ns)
	}
	var st *remote.Store
	Eventually(func() error {
		var err error
		st, err = remote.New(ctx, remote.Options{BaseURL: fmt.Sprintf("%s://%s:8080", scheme, svc.Spec.ClusterIP), Token: string(sec.Data["token"]),
			CACert: sec.Data["ca.crt"], ServerName: serverName})
		return err
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return st
}

// adapterHTTPClient is a client that reaches an adapter's pods as the operator does: over
// TLS (the default) trusting the binding's ca.crt for the Service's name; plain otherwise.
// It returns the client and the URL scheme.
func adapterHTTPClient(g Gomega, sec *corev1.Secret, ns, name string) (*http.Client, string) {
	tr := &http.Transport{Proxy: nil}
	if len(sec.Data["ca.crt"]) == 0 {
		return &http.Client{Timeout: 5 * time.Second, Transport: tr}, "http"
	}
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(sec.Data["ca.crt"])).To(BeTrue(), "the binding's ca.crt holds a certificate")
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: fmt.Sprintf("%s.%s.svc", name, ns)}
	return &http.Client{Timeout: 5 * time.Second, Transport: tr}, "https"
}

func condition(ctx context.Context, c client.Client, ns, name, t string) metav1.Condition {
	GinkgoHelper()
	ma := &memoryv1alpha1.MemoryAdapter{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ma)).To(Succeed())
	if cond := meta.FindStatusCondition(ma.Status.Conditions, t); cond != nil {
		return *cond
	}
	return metav1.Condition{}
}

func jobsOf(ctx context.Context, c client.Client, ns, name string) []batchv1.Job {
	GinkgoHelper()
	jobs := &batchv1.JobList{}
	Expect(c.List(ctx, jobs, client.InNamespace(ns), client.MatchingLabels{"memory.agentmem.io/adapter": name, "app.kubernetes.io/component": "conformance"})).To(Succeed())
	return jobs.Items
}

// expectRunPassed reads ma again and expects its recorded conformance result to be run's
// pass for serviceVersion: nothing failed, something passed.
func expectRunPassed(ctx context.Context, g Gomega, c client.Client, ma *memoryv1alpha1.MemoryAdapter, run, serviceVersion string) {
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
	r := ma.Status.Conformance
	g.Expect(r.JobName).To(Equal(run))
	g.Expect(r.ServiceVersion).To(Equal(serviceVersion))
	g.Expect(r.Failed).To(BeZero(), "cases: %+v; %s", r.Cases, r.Message)
	g.Expect(r.Passed).To(BeNumerically(">", 0))
	g.Expect(r.Message).To(BeEmpty())
}

// jobsSince returns a function naming the adapter's conformance Jobs created after this call.
// They are told apart by UID: the controller prunes finished Jobs beyond its history, so a
// count of all Jobs drops when a run finishes.
func jobsSince(ctx context.Context, c client.Client, ns, name string) func() []string {
	GinkgoHelper()
	known := map[types.UID]bool{}
	for _, j := range jobsOf(ctx, c, ns, name) {
		known[j.UID] = true
	}
	return func() []string {
		var names []string
		for _, j := range jobsOf(ctx, c, ns, name) {
			if !known[j.UID] {
				names = append(names, j.Name)
			}
		}
		return names
	}
}

// hostServer is a throwaway backend server on the host that a spec can stop and resume on
// the same port, which the Service-without-selector keeps pointing at.
type hostServer struct{ script, dir string }

// do runs `hack/<script> <verb> <dir> [args...]` (stop, resume, upgrade <version>).
func (h hostServer) do(ctx context.Context, verb string, args ...string) {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "hack", h.script), append([]string{verb, h.dir}, args...)...)
	cmd.Env = append(os.Environ(), "LISTEN_ADDR="+nodeIP)
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Run()).To(Succeed(), "hack/%s %s", h.script, verb)
}

// startStoppable starts `hack/<script> start` with env added to the environment (for example
// PG_NPM_VERSION) and returns the server and the value of its output line starting with prefix.
func startStoppable(ctx context.Context, script, prefix string, env ...string) (hostServer, string) {
	GinkgoHelper()
	base, err := os.MkdirTemp("", "mao-e2e-loop-")
	Expect(err).NotTo(HaveOccurred())
	Expect(os.Chmod(base, 0o755)).To(Succeed())
	h := hostServer{script: script, dir: filepath.Join(base, "server")}
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "hack", script), "start", h.dir)
	cmd.Env = append(append(os.Environ(), "LISTEN_ADDR="+nodeIP), env...)
	cmd.Stderr = GinkgoWriter
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) { h.do(ctx, "stop"); _ = os.RemoveAll(base) })
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return h, v
		}
	}
	Fail("no " + prefix + " line from hack/" + script)
	return h, ""
}

// networkedAdapter is a MemoryAdapter on a host server exposed as a Service, with short health
// periods so the operator notices an outage within seconds.
func networkedAdapter(ns, name string, t memoryv1alpha1.BackendType, adapter string, consistency memoryv1alpha1.SearchConsistency) *memoryv1alpha1.MemoryAdapter {
	return &memoryv1alpha1.MemoryAdapter{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: memoryv1alpha1.MemoryAdapterSpec{
			Manifest: memoryv1alpha1.ManifestSpec{
				Adapter:           adapter,
				NativeItemFields:  []memoryv1alpha1.ItemField{"id", "created_at", "metadata", "content", "tags"},
				SupportedFilters:  []memoryv1alpha1.FilterKey{"branch_id", "source"},
				SearchConsistency: consistency,
				RetrieveFidelity:  "full", SearchFidelity: "full", SearchReturnsTags: true, PreservesMetadata: true,
			},
			Backend: memoryv1alpha1.BackendSpec{Type: t, Scope: "agents", ConnectionSecretRef: &memoryv1alpha1.SecretKeyReference{Name: name + "-conn"}},
			// The default grace, three periods (9 s), is shorter than one evidence read that
			// times out (5 s) plus the next period and the reconcile that follows: on a loaded
			// machine a single slow read turned Healthy Unknown (EvidenceStale) in the middle
			// of an outage. 15 s outlasts that; two failed reads still say EvidenceUnreachable.
			Health: &memoryv1alpha1.HealthSpec{Period: memoryv1alpha1.NewDuration(3 * time.Second), FailureThreshold: ptr.To[int32](2),
				StalenessGrace: memoryv1alpha1.NewDuration(15 * time.Second)},
		},
	}
}

// connectionSecret exposes a host server (its connection URL conn names the node's address)
// as Service svc, and returns the Secret <adapter>-conn holding the URL through that Service.
func connectionSecret(ctx context.Context, ns, svc, adapter, conn string) *corev1.Secret {
	GinkgoHelper()
	hostPort := exposeHostService(ctx, ns, svc, urlPort(conn))
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: adapter + "-conn"},
		StringData: map[string]string{"dsn": withHost(conn, hostPort)}}
}

// gateName is the scheduling gate the operator's pod webhook adds (internal/webhook).
const gateName = "memory.agentmem.io/adapter-ready"

// podsOfJob lists the pods the Job controller created for job.
func podsOfJob(ctx context.Context, c client.Client, ns, job string) []corev1.Pod {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: job})).To(Succeed())
	return pods.Items
}

// schedulingGated reports whether the pod is held by the adapter-ready gate, as the scheduler
// reports it (PodScheduled False, reason SchedulingGated).
func schedulingGated(p corev1.Pod) bool {
	hasGate := false
	for _, g := range p.Spec.SchedulingGates {
		hasGate = hasGate || g.Name == gateName
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled {
			return hasGate && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonSchedulingGated
		}
	}
	return false
}

// podEventNotes returns the notes of the gate controller's Events on a pod with the reason.
func podEventNotes(ctx context.Context, c client.Client, ns, pod, reason string) []string {
	GinkgoHelper()
	list := &eventsv1.EventList{}
	Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Pod" && e.Regarding.Name == pod && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// expectRedisAgentGated creates an agent pod whose requirements the Available Redis adapter
// redismem does not meet, and checks it stays gated with an Event naming each of them.
func expectRedisAgentGated(ctx context.Context, c client.Client, ns string) {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis-agent",
			Labels:      map[string]string{"memory.agentmem.io/adapter": "redismem"},
			Annotations: map[string]string{"memory.agentmem.io/requires": "searchConsistency=immediate, supportedFilters=source+tenant"}},
		Spec: corev1.PodSpec{
			RestartPolicy:   corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "agent", Image: adapterImage, Args: []string{"agent-check", "--adapter=redismem"},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	Expect(c.Create(ctx, pod)).To(Succeed())
	Eventually(func(g Gomega) {
		// The message also names Available's reason if the adapter's health flaps meanwhile.
		g.Expect(podEventNotes(ctx, c, ns, "redis-agent", "WaitingForAdapter")).To(ContainElement(HaveSuffix(
			`does not meet: searchConsistency=immediate (the manifest says "eventual"); supportedFilters=source+tenant (not supported: tenant)`)))
		p := &corev1.Pod{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), p)).To(Succeed())
		g.Expect(schedulingGated(*p)).To(BeTrue())
		ma := &memoryv1alpha1.MemoryAdapter{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "redismem"}, ma)).To(Succeed())
		g.Expect(ma.Status.Workloads).To(Equal(&memoryv1alpha1.WorkloadCounts{Gated: 1}))
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// installOperator installs the operator with make deploy and waits until the MemoryAdapter
// API is served and the manager has rolled out. The suite's first process calls it once;
// uninstallOperator undoes it.
func installOperator(ctx context.Context) {
	GinkgoHelper()
	if os.Getenv("MAO_E2E_INSTALL") == "none" {
		// The upgrade stage installs the previous build itself, then this one over it.
		By("MAO_E2E_INSTALL=none: the spec installs the operator")
		return
	}
	if installWithHelm() {
		helmInstall(ctx)
	} else {
		By("installing the operator with make deploy")
		makeTarget(ctx, "deploy")
	}
	// A MemoryAdapter is refused until its CRD is established and served, and refused for
	// good while an older copy of the CRD is still terminating: wait for the API, not for a
	// first create to fail.
	kubectl(ctx, "wait", "--for=condition=Established", "crd/memoryadapters.memory.agentmem.io", "--timeout=2m")
	Eventually(func() error {
		_, err := clientset.Discovery().ServerResourcesForGroupVersion("memory.agentmem.io/v1alpha1")
		return err
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "the MemoryAdapter API is not served")
	kubectl(ctx, "rollout", "status", "-n", operatorNamespace, "deployment/"+managerDeployment, "--timeout=5m")
}

// uninstallOperator runs make undeploy and checks that it removes everything: the operator's
// namespace and the MemoryAdapter API. Every namespace holding adapters must be gone first:
// an adapter under deletionPolicy Delete holds its finalizer until the manager has purged its
// scope, and with the manager gone first it would hold the CRD's deletion forever.
func uninstallOperator(ctx context.Context) {
	GinkgoHelper()
	if installWithHelm() {
		helmUninstall(ctx)
	} else {
		By("make undeploy: the operator's namespace and the CRD go")
		makeTarget(ctx, "undeploy")
	}
	Eventually(func() bool {
		_, err := clientset.CoreV1().Namespaces().Get(ctx, operatorNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(poll).Should(BeTrue(), "namespace %s not deleted", operatorNamespace)
	// The next make deploy must find no CRD left terminating: its adapters would be refused
	// ("create not allowed while custom resource definition is terminating").
	Eventually(func() error {
		_, err := clientset.Discovery().ServerResourcesForGroupVersion("memory.agentmem.io/v1alpha1")
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the MemoryAdapter API is still served (%w); adapters left: %s", err, kubectlQuiet(ctx, "get", "madp", "-A", "-o", "custom-columns=NS:.metadata.namespace,NAME:.metadata.name,FINALIZERS:.metadata.finalizers,DELETING:.metadata.deletionTimestamp"))
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}

// adapterNamespace makes a namespace (generated from prefix) whose pods must pass the
// restricted Pod Security Standard, as the adapters' and conformance Jobs' pods are built to,
// for the operator the suite installed. It returns a client and the namespace;
// deleteAdapterNamespace removes it.
func adapterNamespace(ctx context.Context, prefix string) (client.Client, string) {
	GinkgoHelper()
	c := loopClient()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	Expect(c.Create(ctx, n)).To(Succeed())
	Eventually(func() error {
		return c.Get(ctx, types.NamespacedName{Namespace: n.Name, Name: "default"}, &corev1.ServiceAccount{})
	}).WithTimeout(time.Minute).Should(Succeed())
	return c, n.Name
}

// namespacePerSpec gives each spec of the container it is called in a namespace of its own
// (adapterNamespace), deleted after the spec; the spec finds it and its client in ns and c.
// Such specs can run beside any other on Ginkgo's parallel processes.
func namespacePerSpec(prefix string, c *client.Client, ns *string) {
	BeforeEach(func(ctx SpecContext) {
		cl, n := adapterNamespace(ctx, prefix)
		*c, *ns = cl, n
		DeferCleanup(func(ctx SpecContext) { deleteAdapterNamespace(ctx, cl, n) }, NodeTimeout(10*time.Minute))
	}, NodeTimeout(5*time.Minute))
}

// deleteAdapterNamespace deletes the namespace adapterNamespace made (if it got that far) and
// waits until it is gone: the manager must end every adapter's deletion, whatever its
// deletionPolicy and whether or not its backend still answers.
func deleteAdapterNamespace(ctx context.Context, c client.Client, ns string) {
	GinkgoHelper()
	if ns == "" {
		return
	}
	_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	Eventually(func() error {
		err := c.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("namespace %s is still there (%w); adapters in it: %s", ns, err, kubectlQuiet(ctx, "get", "madp", "-n", ns, "-o", "custom-columns=NAME:.metadata.name,FINALIZERS:.metadata.finalizers,DELETING:.metadata.deletionTimestamp"))
	}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}

// kubectlQuiet runs kubectl for a message: its output, or its error, never a failure.
func kubectlQuiet(ctx context.Context, args ...string) string {
	out, err := runKubectl(ctx, args...)
	if err != nil {
		return fmt.Sprintf("%s (%v)", strings.TrimSpace(out), err)
	}
	return strings.TrimSpace(out)
}

var _ = Describe("the operator loop", func() {
	var (
		c  client.Client
		ns string
	)
	AfterEach(func() { printDiagnostics(ns, operatorNamespace) })

	// One namespace through the SQLite and External samples' lives: the specs build on each
	// other (the gated Job waits for the sample, the upgrade and the garbage collection act on it).
	Describe("with the samples", Ordered, func() {
		BeforeAll(func(ctx SpecContext) { c, ns = adapterNamespace(ctx, "loop-") }, NodeTimeout(5*time.Minute))
		AfterAll(func(ctx SpecContext) { deleteAdapterNamespace(ctx, c, ns) }, NodeTimeout(10*time.Minute))

		It("holds an agent Job's pod SchedulingGated until the SQLite adapter is Available; then it runs on the projected binding alone and exits 0", func(ctx SpecContext) {
			By("creating the sample agent Job before its adapter exists")
			kubectl(ctx, "apply", "-n", ns, "-f", "config/samples/agent_gated_job.yaml")
			var pod corev1.Pod
			Eventually(func(g Gomega) {
				pods := podsOfJob(ctx, c, ns, "sqlite-agent")
				g.Expect(pods).To(HaveLen(1))
				pod = pods[0]
				g.Expect(schedulingGated(pod)).To(BeTrue(), "pod %s: gates %v, conditions %v", pod.Name, pod.Spec.SchedulingGates, pod.Status.Conditions)
				g.Expect(podEventNotes(ctx, c, ns, pod.Name, "WaitingForAdapter")).To(ContainElement(`MemoryAdapter "sqlite-memory" does not exist in this namespace yet`))
			}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
			Expect(pod.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", "sqlite-memory-binding")))
			Expect(pod.Spec.Containers[0].VolumeMounts).To(ContainElement(HaveField("MountPath", "/bindings/sqlite-memory")))

			By("creating the SQLite sample: the pod stays gated until Available")
			kubectl(ctx, "apply", "-n", ns, "-f", "config/samples/memory_v1alpha1_memoryadapter_sqlite.yaml")
			Eventually(func(g Gomega) {
				g.Expect(podEventNotes(ctx, c, ns, pod.Name, "WaitingForAdapter")).To(ContainElement(Or(
					HavePrefix(`MemoryAdapter "sqlite-memory" is not Available (`), Equal(`MemoryAdapter "sqlite-memory" has no Available condition yet`))))
				p := &corev1.Pod{}
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&pod), p)).To(Succeed())
				g.Expect(schedulingGated(*p)).To(BeTrue())
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
			waitAvailable(ctx, ns, "sqlite-memory")

			By("the agent runs: it stores and retrieves an item through the Service using only /bindings/sqlite-memory")
			kubectl(ctx, "wait", "-n", ns, "--for=condition=complete", "job/sqlite-agent", "--timeout=5m")
			logs := kubectl(ctx, "logs", "-n", ns, "job/sqlite-agent")
			Expect(logs).To(ContainSubstring(`agent-check: adapter "sqlite" (binding /bindings/sqlite-memory): stored and retrieved item`))
			Expect(podEventNotes(ctx, c, ns, pod.Name, "AdapterReady")).To(ConsistOf(ContainSubstring(`MemoryAdapter "sqlite-memory" is Available and its verified manifest (sha256:`)))
			Eventually(func(g Gomega) {
				ma := &memoryv1alpha1.MemoryAdapter{}
				g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sqlite-memory"}, ma)).To(Succeed())
				g.Expect(ma.Status.Workloads).To(Equal(&memoryv1alpha1.WorkloadCounts{Released: 1}))
				// Both controllers wrote status by now, each through its own path: every
				// status field has one writer, the counts the gate controller's.
				owners, err := condtest.StatusOwners(ma.ManagedFields)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(owners).To(HaveKeyWithValue("f:workloads", []string{gate.FieldOwner}))
				g.Expect(owners).To(HaveKeyWithValue("f:conditions", []string{render.FieldOwner}))
				for field, managers := range owners {
					g.Expect(managers).To(HaveLen(1), "status field %s has writers %v", field, managers)
				}
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		}, SpecTimeout(15*time.Minute))

		It("verifies the SQLite sample with a real conformance Job, and its items survive the pod", func(ctx SpecContext) {
			kubectl(ctx, "apply", "-n", ns, "-f", "config/samples/memory_v1alpha1_memoryadapter_sqlite.yaml")
			waitAvailable(ctx, ns, "sqlite-memory")
			ma := &memoryv1alpha1.MemoryAdapter{}
			Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sqlite-memory"}, ma)).To(Succeed())
			Expect(ma.Status.Conformance).NotTo(BeNil())
			Expect(ma.Status.Conformance.Cases).To(HaveLen(17))
			Expect(ma.Status.Conformance.Failed).To(BeZero())
			fmt.Fprintf(GinkgoWriter, "%s", kubectl(ctx, "get", "madp", "-n", ns))

			By("storing an item through the Service, deleting the pod, and reading it back")
			st := adapterStore(ctx, c, ns, "sqlite-memory")
			item := memory.Item{ID: uuid.New(), Content: []byte(`"kept across pods"`), Metadata: map[string]json.RawMessage{"source": json.RawMessage(`"e2e"`)}, Tags: []string{"e2e"}, CreatedAt: memory.Now()}
			_, err := st.Store(ctx, item)
			Expect(err).NotTo(HaveOccurred())
			kubectl(ctx, "delete", "pod", "-n", ns, "-l", "memory.agentmem.io/adapter=sqlite-memory,app.kubernetes.io/component=adapter", "--wait=true")
			kubectl(ctx, "rollout", "status", "-n", ns, "deployment/sqlite-memory", "--timeout=5m")
			Eventually(func(g Gomega) {
				got, err := st.Retrieve(ctx, item.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).NotTo(BeNil(), "the item did not survive the pod's deletion")
				g.Expect(string(got.Content)).To(Equal(`"kept across pods"`))
			}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		}, SpecTimeout(15*time.Minute))

		It("installs the admission policies with make deploy: the manager's identity cannot read a Secret through a dry-run PATCH", func(ctx SpecContext) {
			victim := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-the-operators", Namespace: ns},
				StringData: map[string]string{"password": "e2e-victim-value"}}
			Expect(c.Create(ctx, victim)).To(Succeed())
			// A raw PATCH, as an attacker holding the token would send it (kubectl patch GETs the
			// object first, which RBAC already refuses).
			asManager := rest.CopyConfig(restConfig)
			asManager.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + operatorNamespace + ":" + managerDeployment}
			cs, err := kubernetes.NewForConfig(asManager)
			Expect(err).NotTo(HaveOccurred())
			out, err := cs.CoreV1().RESTClient().Patch(types.MergePatchType).Namespace(ns).Resource("secrets").Name(victim.Name).
				Param("dryRun", "All").Body([]byte(`{"metadata":{"labels":{"x":"y"}}}`)).DoRaw(ctx)
			Expect(err).To(HaveOccurred(), "the manager's identity patched another Secret:\n%s", out)
			Expect(string(out)).To(ContainSubstring("ValidatingAdmissionPolicy 'memory-adapter-operator-manager-secrets'"))
			Expect(string(out)).NotTo(ContainSubstring("ZTJlLXZpY3RpbS12YWx1ZQ"), "the refusal carries the Secret's data")

			By("nor through a workload with the operator's labels, a foreign image and a volume of that Secret")
			labels := map[string]string{"app.kubernetes.io/managed-by": "memory-adapter-operator", "memory.agentmem.io/adapter": "loot"}
			loot := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "loot", Namespace: ns, Labels: labels},
				Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						AutomountServiceAccountToken: ptr.To(false),
						SecurityContext:              &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
						Volumes:                      []corev1.Volume{{Name: "loot", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: victim.Name}}}},
						Containers: []corev1.Container{{Name: "exfil", Image: "attacker.example/exfil:1", SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						}}},
					},
				}},
			}
			_, err = cs.AppsV1().Deployments(ns).Create(ctx, loot, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			Expect(err).To(HaveOccurred(), "the manager's identity created a Deployment that mounts another Secret under a foreign image")
			Expect(err.Error()).To(ContainSubstring("ValidatingAdmissionPolicy 'memory-adapter-operator-manager-workload-sources'"))
			Expect(err.Error()).To(ContainSubstring("attacker.example/exfil:1"))
		}, SpecTimeout(2*time.Minute))

		It("verifies an upgraded adapter image with a new run before Available returns", func(ctx SpecContext) {
			upgraded := loadAdapterImage(ctx, upgradedVersion)
			kubectl(ctx, "patch", "-n", ns, "madp/sqlite-memory", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"image":%q}}`, upgraded))
			Eventually(func(g Gomega) {
				ma := &memoryv1alpha1.MemoryAdapter{}
				g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sqlite-memory"}, ma)).To(Succeed())
				g.Expect(ma.Status.AdapterVersion).To(Equal(upgradedVersion))
				g.Expect(ma.Status.Conformance.AdapterVersion).To(Equal(upgradedVersion), "Available must wait for a run of the new version")
				g.Expect(meta.IsStatusConditionTrue(ma.Status.Conditions, memoryv1alpha1.ConditionAvailable)).To(BeTrue())
			}).WithTimeout(availableDeadline).WithPolling(2 * time.Second).Should(Succeed())
			var newRuns int
			for _, j := range jobsOf(ctx, c, ns, "sqlite-memory") {
				if j.Spec.Template.Spec.Containers[0].Image == upgraded {
					newRuns++
				}
			}
			Expect(newRuns).To(Equal(1), "exactly one run verifies the new version")
		}, SpecTimeout(15*time.Minute))

		It("verifies an External adapter with its own image as a harness-mode sidecar of the run", func(ctx SpecContext) {
			// The sample brings the project's own image as a foreign server: the kubelet expands
			// the contract's variables, runs the run's token step, the native sidecar and the
			// conformance container, all under Pod Security restricted, and stops the sidecar.
			kubectl(ctx, "apply", "-n", ns, "-f", "config/samples/memory_v1alpha1_memoryadapter_external.yaml")
			waitAvailable(ctx, ns, "external-memory")
			ma := &memoryv1alpha1.MemoryAdapter{}
			Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "external-memory"}, ma)).To(Succeed())
			Expect(ma.Status.Conformance).NotTo(BeNil())
			Expect(ma.Status.Conformance.Cases).To(HaveLen(17))
			Expect(ma.Status.Conformance.Failed).To(BeZero())
			jobs := jobsOf(ctx, c, ns, "external-memory")
			Expect(jobs).NotTo(BeEmpty())
			job := jobs[0]
			Expect(job.Spec.Template.Spec.InitContainers).To(HaveLen(2))
			Expect(job.Spec.Template.Spec.InitContainers[1].Image).To(Equal(*ma.Spec.Image))
			Expect(job.Status.Succeeded).To(Equal(int32(1)), "the Job completes once the conformance container exits")
			fmt.Fprintf(GinkgoWriter, "%s", kubectl(ctx, "get", "madp", "-n", ns, "external-memory"))

			By("storing and reading an item through the Service of the user's server")
			st := adapterStore(ctx, c, ns, "external-memory")
			item := memory.Item{ID: uuid.New(), Content: []byte(`"from the bring-your-own server"`), Metadata: map[string]json.RawMessage{}, Tags: []string{}, CreatedAt: memory.Now()}
			_, err := st.Store(ctx, item)
			Expect(err).NotTo(HaveOccurred())
			got, err := st.Retrieve(ctx, item.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).NotTo(BeNil())
			Expect(string(got.Content)).To(Equal(`"from the bring-your-own server"`))
		}, SpecTimeout(15*time.Minute))

		It("garbage-collects what a deleted adapter owned, and keeps SQLite's data under Retain", func(ctx SpecContext) {
			kubectl(ctx, "delete", "-n", ns, "madp/sqlite-memory", "--wait=true")
			Eventually(func(g Gomega) {
				err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sqlite-memory"}, &appsv1.Deployment{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment: %v", err)
				err = c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sqlite-memory"}, &corev1.Service{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Service: %v", err)
				err = c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sqlite-memory-binding"}, &corev1.Secret{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Secret: %v", err)
				g.Expect(jobsOf(ctx, c, ns, "sqlite-memory")).To(BeEmpty())
			}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sqlite-memory-data"}, &corev1.PersistentVolumeClaim{})).To(Succeed(),
				"deletionPolicy Retain keeps the database volume")
		}, SpecTimeout(10*time.Minute))
	})

	// Each of these brings its own host server and adapter, in a namespace of its own: they run
	// beside any other spec.
	Describe("against host servers", func() {
		namespacePerSpec("loop-", &c, &ns)

		It("verifies PostgreSQL; through a 3-minute outage keeps Available=False on the evidence and answers a bound agent with the typed 503; restores it when the server is back", longestSpec, func(ctx SpecContext) {
			pg, conn := startStoppable(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=")
			pgSecret := connectionSecret(ctx, ns, "pg", "pgmem", conn)
			Expect(c.Create(ctx, pgSecret)).To(Succeed())
			Expect(c.Create(ctx, networkedAdapter(ns, "pgmem", memoryv1alpha1.BackendPostgres, "postgres", "immediate"))).To(Succeed())
			waitAvailable(ctx, ns, "pgmem")
			tl := newTimeline("outage")
			tl.mark("pgmem Available")

			By("running a bound agent that stores through the adapter's Service every 2 s, created while Available so it is released")
			agent := startWatchingAgent(ctx, c, ns, "pgmem")
			tl.mark("agent %s stores (201)", agent)

			By("stopping the PostgreSQL server for 3 minutes")
			pg.do(ctx, "stop")
			stopped := tl.mark("server stopped")
			// The reasons the evidence gives for a backend that is gone: the adapter's own verdict
			// (backend unreachable) or its failed reachability probe. Not EvidenceUnreachable: the
			// readiness probe is /healthz, so the instance stays behind its Service and its
			// evidence stays readable; unreadable evidence here would be the bug of issue 29.
			evidenceReasons := []any{memoryv1alpha1.ReasonEvidenceInvalidatesManifest, memoryv1alpha1.ReasonCapabilityProbeFailed}
			expectOutage := func(g Gomega) {
				h := condition(ctx, c, ns, "pgmem", memoryv1alpha1.ConditionHealthy)
				g.Expect(h.Status).To(Equal(metav1.ConditionFalse), "Healthy %s: %s", h.Reason, h.Message)
				g.Expect(h.Reason).To(BeElementOf(evidenceReasons...), "Healthy: %s", h.Message)
				a := condition(ctx, c, ns, "pgmem", memoryv1alpha1.ConditionAvailable)
				g.Expect(a.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(a.Reason).To(Equal(h.Reason), "Available names the evidence, never a Deployment reason: %s", a.Message)
				g.Expect(condition(ctx, c, ns, "pgmem", memoryv1alpha1.ConditionDeployed).Status).To(Equal(metav1.ConditionTrue))
				// Every call since the stop got the typed refusal: never a refused connection,
				// never a timeout, never a success.
				for _, ans := range agentAnswers(ctx, ns, agent, stopped) {
					g.Expect(ans.Answer).To(Equal(typedUnavailable), "the agent's call at %s", ans.At.Format(time.RFC3339Nano))
				}
			}
			// The verdict follows the adapter's own evidence within seconds (issue 44): its first
			// 503 makes it probe and ring the manager's doorbell, which reads it at once.
			availableIs := func(want metav1.ConditionStatus) time.Time {
				GinkgoHelper()
				Eventually(func() metav1.ConditionStatus {
					return condition(ctx, c, ns, "pgmem", memoryv1alpha1.ConditionAvailable).Status
				}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Equal(want))
				return time.Now()
			}
			wentFalse := availableIs(metav1.ConditionFalse)
			Eventually(expectOutage).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
			a := condition(ctx, c, ns, "pgmem", memoryv1alpha1.ConditionAvailable)
			unavailable := tl.mark("Available=False %s: %s", a.Reason, a.Message)
			// The agent calls every 2 s, so the verdict may even come before its first 503 (another
			// reader, the manager's own read, found the outage first).
			var first503 time.Time
			Eventually(func(g Gomega) {
				answers := agentAnswers(ctx, ns, agent, stopped)
				g.Expect(answers).NotTo(BeEmpty(), "no call of the agent since the stop")
				first503 = answers[0].At
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
			tl.mark("the agent's first 503 at %s; Available=False seen %s from it", first503.Format("15:04:05.000"),
				wentFalse.Sub(first503).Round(10*time.Millisecond))
			// The goal is 5 s (measured: the timeline above); the bound asserted is wider so that a
			// loaded machine does not fail it, yet a verdict waiting for the 30 s period would.
			Expect(wentFalse.Sub(first503)).To(BeNumerically("<=", 10*time.Second),
				"Available must follow the adapter's first 503 within seconds, not a health period (30 s) later")
			// And it did so because the adapter rang: every ring reached the elected manager.
			Eventually(func(g Gomega) {
				rings := doorbellRings(ctx, g, c, ns, "pgmem")
				g.Expect(rings["accepted"]).To(BeNumerically(">=", 2), "the new pod's first evidence and the outage: %v", rings)
				g.Expect(rings["failed"]).To(BeZero(), "rings that never reached the leader: %v", rings)
			}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
			Consistently(expectOutage).WithTimeout(3 * time.Minute).WithPolling(3 * time.Second).Should(Succeed())
			held := tl.mark("held 3 minutes: Available=False on the evidence throughout")
			answers := agentAnswers(ctx, ns, agent, stopped)
			tl.mark("the agent's answers since the stop: %s", summarizeAnswers(answers))
			// One call every 2 s for over 3 minutes; allow for the pod's own scheduling jitter.
			Expect(len(agentAnswers(ctx, ns, agent, unavailable))).To(BeNumerically(">=", int(held.Sub(unavailable)/(3*time.Second))))
			Expect(jobsOf(ctx, c, ns, "pgmem")).To(HaveLen(1), "an outage is not a new version to verify")

			By("resuming it on the same port")
			pg.do(ctx, "resume")
			resumed := tl.mark("server resumed")
			wentTrue := availableIs(metav1.ConditionTrue)
			waitAvailable(ctx, ns, "pgmem")
			tl.mark("Available=True")
			Expect(jobsOf(ctx, c, ns, "pgmem")).To(HaveLen(1), "the same service version needs no new run")
			var firstSuccess time.Time
			Eventually(func(g Gomega) {
				answers := agentAnswers(ctx, ns, agent, resumed)
				i := slices.IndexFunc(answers, func(a agentAnswer) bool { return strings.HasPrefix(a.Answer, "201 ") })
				g.Expect(i).To(BeNumerically(">=", 0), "no store succeeded since the resume: %s", summarizeAnswers(answers))
				firstSuccess = answers[i].At
			}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			tl.mark("the agent stores again: its first success at %s, Available=True seen %s from it", firstSuccess.Format("15:04:05.000"),
				wentTrue.Sub(firstSuccess).Round(10*time.Millisecond))
			// The agent stores every 2 s, so its first success may come after the verdict.
			Expect(wentTrue.Sub(firstSuccess).Abs()).To(BeNumerically("<=", 10*time.Second),
				"Available must follow the adapter's first success within seconds")

			By("reading back every write the adapter acknowledged, before, during and after the outage")
			ids := storedIDs(agentAnswers(ctx, ns, agent, time.Time{}))
			found, missing := countLostWrites(ctx, c, ns, "pgmem", ids)
			tl.mark("read back the %d acknowledged writes: %d intact, %d lost", len(ids), found, missing)
			Expect(missing).To(BeZero(), "an acknowledged write did not survive the outage")
			Expect(found).To(Equal(len(ids)))
		}, SpecTimeout(20*time.Minute))

		It("heals a real PostgreSQL minor upgrade in place (17.9 to 17.10) with no step by anyone: one new run, restarted pods, Available again, data kept", longSpec, func(ctx SpecContext) {
			const (
				from, to       = "17.9.0-beta.17", "17.10.0-beta.17"
				fromSvc, toSvc = "PostgreSQL 17.9", "PostgreSQL 17.10"
				adapter        = "pgup"
			)
			pg, conn := startStoppable(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=", "PG_NPM_VERSION="+from)
			// The server's Service needs a name of its own: the operator names the adapter's
			// Service after the adapter, and would take over one called pgup.
			Expect(c.Create(ctx, connectionSecret(ctx, ns, "pgup-server", adapter, conn))).To(Succeed())
			ma := networkedAdapter(ns, adapter, memoryv1alpha1.BackendPostgres, "postgres", "immediate")
			Expect(c.Create(ctx, ma)).To(Succeed())
			// Gone before its server is (cleanups run last in, first out), so no adapter is left
			// probing a stopped server for the rest of the suite.
			DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
			waitAvailable(ctx, ns, adapter)
			Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: adapter}, ma)).To(Succeed())
			Expect(ma.Status.ServiceVersion).To(Equal(fromSvc))
			Expect(ma.Status.Conformance.ServiceVersion).To(Equal(fromSvc))
			firstRun := ma.Status.Conformance.JobName
			Expect(jobsOf(ctx, c, ns, adapter)).To(HaveLen(1))
			tl := newTimeline("upgrade")
			tl.mark("%s Available on %q, verified by job %s", adapter, fromSvc, firstRun)

			By("storing an item through the adapter before the upgrade")
			st := adapterStore(ctx, c, ns, adapter)
			item := memory.Item{ID: uuid.New(), Content: []byte(`"stored on 17.9"`), Metadata: map[string]json.RawMessage{"source": json.RawMessage(`"e2e"`)}, Tags: []string{"e2e"}, CreatedAt: memory.Now()}
			_, err := st.Store(ctx, item)
			Expect(err).NotTo(HaveOccurred())
			oldPods := adapterPodUIDs(ctx, c, ns, adapter)
			Expect(oldPods).To(HaveLen(1))
			// A bound agent storing and reading back every 200 ms through the whole upgrade: no
			// store may be acknowledged by 17.10 before a run has verified it (issue 45 item 4).
			agent := startAgentPod(ctx, c, agentPod(ns, adapter+"-watcher", adapter, adapterImage,
				[]string{"agent-check", "--adapter=" + adapter, "--watch", "--interval=200ms", "--read-back", "--timeout=30m"}), "")

			By("upgrading the server in place: fast shutdown, the same data directory, address and port, the 17.10 binaries")
			pg.do(ctx, "upgrade", to)
			upgraded := tl.mark("server upgraded to %s (hack/postgres-server.sh upgrade)", to)

			By("the operator alone: ServiceVersionChanged naming both versions")
			Eventually(func(g Gomega) {
				h := condition(ctx, c, ns, adapter, memoryv1alpha1.ConditionHealthy)
				g.Expect(h.Reason).To(Equal(memoryv1alpha1.ReasonServiceVersionChanged), "Healthy %s: %s", h.Reason, h.Message)
				g.Expect(h.Message).To(And(ContainSubstring(fmt.Sprintf("%q", fromSvc)), ContainSubstring(fmt.Sprintf("%q", toSvc))))
				a := condition(ctx, c, ns, adapter, memoryv1alpha1.ConditionAvailable)
				g.Expect(a.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(a.Message).To(And(ContainSubstring(fmt.Sprintf("%q", fromSvc)), ContainSubstring(fmt.Sprintf("%q", toSvc))))
				tl.mark("Healthy=False %s: %s", h.Reason, h.Message)
				tl.mark("Available=False %s: %s", a.Reason, a.Message)
			}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

			By("exactly one new conformance Job, for the new version")
			var newRun string
			Eventually(func(g Gomega) {
				jobs := jobsOf(ctx, c, ns, adapter)
				g.Expect(jobs).To(HaveLen(2))
				for _, j := range jobs {
					if j.Name != firstRun {
						newRun = j.Name
					}
				}
			}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
			tl.mark("new conformance Job %s", newRun)

			By("its pass recorded: 17.10 verified, nothing failed")
			Eventually(func(g Gomega) { expectRunPassed(ctx, g, c, ma, newRun, toSvc) }).
				WithTimeout(availableDeadline).WithPolling(time.Second).Should(Succeed())
			tl.mark("job %s passed %d cases (%d not applicable) for %q", newRun, ma.Status.Conformance.Passed, ma.Status.Conformance.NotApplicable, toSvc)
			// Until the run's Job completed no pod can run on 17.10 as verified (the operator
			// restarts them after it has read the result), so the instance pinned to 17.9
			// answered every store since the server came back on 17.10 with the typed 503,
			// never a 201. The Job's completion time is in whole seconds, rounded down: the
			// window ends no later than the run did.
			var verified time.Time
			for _, j := range jobsOf(ctx, c, ns, adapter) {
				if j.Name == newRun && j.Status.CompletionTime != nil {
					verified = j.Status.CompletionTime.Time
				}
			}
			Expect(verified).NotTo(BeZero(), "job %s has no completion time", newRun)
			var unverified []agentAnswer
			for _, a := range agentAnswers(ctx, ns, agent, upgraded) {
				if a.At.Before(verified) && a.Op == "store" {
					unverified = append(unverified, a)
				}
			}
			tl.mark("the agent's stores between the server's return on %s and the run's pass: %s", to, summarizeAnswers(unverified))
			Expect(unverified).NotTo(BeEmpty(), "the agent made no call while 17.10 was unverified")
			for _, a := range unverified {
				Expect(a.Answer).To(Equal(typedUnavailable), "a store at %s was answered %q (%s) by PostgreSQL 17.10 before any run verified it",
					a.At.Format("15:04:05.000"), a.Answer, a.Detail)
			}

			By("the adapter pods restarted by the operator")
			Eventually(func(g Gomega) {
				ready, what := adapterPodsReady(ctx, c, ns, adapter, oldPods)
				g.Expect(ready).To(BeTrue(), what)
			}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
			tl.mark("adapter pod restarted: new UID %v (was %v)", adapterPodUIDs(ctx, c, ns, adapter), oldPods)

			By("Available again, with no step by the test")
			waitAvailable(ctx, ns, adapter)
			Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: adapter}, ma)).To(Succeed())
			Expect(ma.Status.ServiceVersion).To(Equal(toSvc))
			tl.mark("Available=True on %q", ma.Status.ServiceVersion)
			Expect(jobsOf(ctx, c, ns, adapter)).To(HaveLen(2), "exactly one new run verifies the new version")

			By("the item stored before the upgrade reads back")
			Eventually(func(g Gomega) {
				got, err := st.Retrieve(ctx, item.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).NotTo(BeNil(), "the item stored on 17.9 is gone")
				g.Expect(string(got.Content)).To(Equal(`"stored on 17.9"`))
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
			tl.mark("the item stored on 17.9 read back on 17.10")

			By("reading back every write the agent saw acknowledged, on either version")
			ids := storedIDs(agentAnswers(ctx, ns, agent, time.Time{}))
			found, missing := countLostWrites(ctx, c, ns, adapter, ids)
			tl.mark("read back the %d acknowledged writes: %d intact, %d lost", len(ids), found, missing)
			Expect(missing).To(BeZero(), "an acknowledged write did not survive the upgrade")
		}, SpecTimeout(25*time.Minute))

		It("invalidates an SQLite adapter whose volume stops taking writes, under the running instance and under a fresh one, and recovers", longestSpec, func(ctx SpecContext) {
			const adapter = "sqlro"
			dir, loop := ext4Claim(ctx, c, ns, adapter)
			ma := networkedAdapter(ns, adapter, memoryv1alpha1.BackendSQLite, "sqlite", "immediate")
			ma.Spec.Backend.ConnectionSecretRef = nil
			Expect(c.Create(ctx, ma)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
			waitAvailable(ctx, ns, adapter)
			tl := newTimeline("sqlite-readonly")
			tl.mark("%s Available on a 16 MiB ext4 (%s on %s, errors=remount-ro)", adapter, loop, dir)
			agent := startWatchingAgent(ctx, c, ns, adapter)
			tl.mark("agent %s stores (201)", agent)
			// expectTypedRefusals checks five calls (10 s) after the verdict: every one the typed
			// refusal. After a pod replacement (replaced), calls the Service could not route yet
			// are allowed before the first answer: the fresh pod is Ready before its endpoint is
			// programmed (the endpoint controller, then kube-proxy; seconds on a loaded machine),
			// and until then the cluster refuses the connection, the documented gap of a
			// replacement. Only transport errors, and only before the first HTTP answer.
			expectTypedRefusals := func(since time.Time, replaced bool) {
				GinkgoHelper()
				var unrouted []agentAnswer
				Eventually(func(g Gomega) {
					answers := agentAnswers(ctx, ns, agent, since)
					unrouted = nil
					for replaced && len(answers) > 0 && strings.HasPrefix(answers[0].Answer, "error: ") {
						unrouted, answers = append(unrouted, answers[0]), answers[1:]
					}
					g.Expect(len(answers)).To(BeNumerically(">=", 5), "answers since %s (before them, %d unrouted: %s)",
						since.Format(time.RFC3339Nano), len(unrouted), summarizeAnswers(unrouted))
					for _, ans := range answers {
						g.Expect(ans.Answer).To(Equal(typedUnavailable), "the agent's call at %s (%s)", ans.At.Format(time.RFC3339Nano), ans.Detail)
					}
				}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
				if len(unrouted) > 0 {
					tl.mark("before the fresh pod's route: %s", summarizeAnswers(unrouted))
				}
				tl.mark("the agent's answers since: %s", summarizeAnswers(agentAnswers(ctx, ns, agent, since)))
			}
			// restartPod deletes the adapter's pod and waits for the fresh one: ready, its own
			// evidence a failed write probe (a fresh instance opened on a read-only filesystem
			// finds the file read-only), and the conditions saying so.
			restartPod := func() {
				GinkgoHelper()
				oldPods := adapterPodUIDs(ctx, c, ns, adapter)
				kubectl(ctx, "delete", "pod", "-n", ns, "-l", "memory.agentmem.io/adapter="+adapter+",app.kubernetes.io/component=adapter", "--wait=true")
				tl.mark("pod deleted")
				var msg, pod string
				var write memory.ProbeResult
				Eventually(func(g Gomega) {
					ready, what := adapterPodsReady(ctx, c, ns, adapter, oldPods)
					g.Expect(ready).To(BeTrue(), what)
					pod, write = ownWriteProbe(ctx, g, c, ns, adapter)
					g.Expect(write.OK).To(BeFalse(), "pod %s's write probe: %s", pod, write.Detail)
					g.Expect(write.Detail).To(ContainSubstring("store a probe row: attempt to write a readonly database"))
					msg = expectWriteProbeFailed(ctx, g, c, ns, adapter)
					g.Expect(msg).To(ContainSubstring(write.Detail))
				}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
				expectTypedRefusals(tl.mark("fresh pod %s ready, its write probe %q; Available=False: %s", pod, write.Detail, msg), true)
			}

			By("(a) the running instance: the volume fills up")
			filler := fillUp(dir)
			tl.mark("volume full")
			var msg string
			Eventually(func(g Gomega) { msg = expectWriteProbeFailed(ctx, g, c, ns, adapter) }).
				WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
			expectTypedRefusals(tl.mark("Available=False: %s", msg), false)

			By("(a) room again: the write probe passes and Available returns")
			Expect(os.Remove(filler)).To(Succeed())
			tl.mark("filler removed")
			waitAvailable(ctx, ns, adapter)
			tl.mark("Available=True")

			By("(b) a fresh instance on a read-only volume: a read-only bind mount over the volume's directory, then the pod restarted")
			host(ctx, "mount", "--bind", dir, dir)
			host(ctx, "mount", "-o", "remount,ro,bind", dir)
			tl.mark("volume directory read-only on the host (bind mount)")
			restartPod()

			By("(b) writable again: the bind mount removed, and no step by anyone: the operator replaces the read-only instance's pod")
			readOnlyPods := adapterPodUIDs(ctx, c, ns, adapter)
			host(ctx, "umount", dir)
			writable := tl.mark("bind mount removed: the volume takes writes again, the running instance still cannot (its mount is read-only)")
			waitAvailable(ctx, ns, adapter)
			tl.mark("Available=True %s after the volume took writes again", time.Since(writable).Round(100*time.Millisecond))
			Expect(adapterPodUIDs(ctx, c, ns, adapter)).NotTo(ContainElements(readOnlyPods), "the read-only instance's pod was not replaced")
			dep := &appsv1.Deployment{}
			Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), dep)).To(Succeed())
			Expect(dep.Spec.Template.Annotations).To(HaveKey("memory.agentmem.io/restarted-for-read-only-volume"), "the operator's restart annotation")

			By("(c) the running instance: an error makes the filesystem read-only under it (errors=remount-ro)")
			st := adapterStore(ctx, c, ns, adapter)
			kept := memory.NewItem([]byte(`"stored before the filesystem error"`), "e2e")
			_, err := st.Store(ctx, kept)
			Expect(err).NotTo(HaveOccurred())
			tl.mark("filesystem read-only: %s", goReadOnly(loop, dir))
			Eventually(func(g Gomega) {
				msg = expectWriteProbeFailed(ctx, g, c, ns, adapter)
				// The running connection's write fails in the kernel (SQLite: disk I/O error); a
				// connection opened since finds the file read-only.
				g.Expect(msg).To(Or(ContainSubstring("store a probe row: disk I/O error"), ContainSubstring("store a probe row: attempt to write a readonly database")))
			}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
			expectTypedRefusals(tl.mark("Available=False: %s", msg), false)

			By("(d) a fresh instance on the filesystem the error left read-only: the pod restarted onto it")
			restartPod()

			By("(d) repaired as an administrator would: the adapter scaled to zero, the filesystem unmounted, checked and mounted again, the adapter scaled back")
			Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
			base := ma.DeepCopy()
			ma.Spec.Replicas = ptr.To[int32](0)
			Expect(c.Patch(ctx, ma, client.MergeFrom(base))).To(Succeed())
			Eventually(func(g Gomega) {
				pods := &corev1.PodList{}
				g.Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"memory.agentmem.io/adapter": adapter, "app.kubernetes.io/component": "adapter"})).To(Succeed())
				g.Expect(pods.Items).To(BeEmpty())
			}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
			// With no pod left the last evidence describes an instance that is gone: Available
			// says what the user did.
			var a metav1.Condition
			Eventually(func(g Gomega) {
				a = condition(ctx, c, ns, adapter, memoryv1alpha1.ConditionAvailable)
				g.Expect(a.Reason).To(Equal(memoryv1alpha1.ReasonScaledToZero), "Available %s: %s", a.Reason, a.Message)
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
			tl.mark("scaled to zero, no adapter pod left (Available=%s %s: %s)", a.Status, a.Reason, a.Message)
			code := repairExt4(ctx, loop, dir)
			tl.mark("filesystem checked (e2fsck exit %d) and mounted read-write again", code)
			Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
			base = ma.DeepCopy()
			ma.Spec.Replicas = nil
			Expect(c.Patch(ctx, ma, client.MergeFrom(base))).To(Succeed())
			repaired := tl.mark("scaled back to the default one replica")
			waitAvailable(ctx, ns, adapter)
			tl.mark("Available=True")
			// Available reads the new pod directly; kube-proxy may program the Service's route a
			// moment later, and until it does the call is refused (the cluster rejects an
			// unprogrammed service IP): only that outage is waited out, any answer is final.
			var got *memory.Item
			Eventually(func() error {
				var err error
				got, err = st.Retrieve(ctx, kept.ID)
				if err != nil && !errors.Is(err, memory.ErrUnavailable) {
					return StopTrying("retrieve through the Service").Wrap(err)
				}
				return err
			}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
			Expect(got).NotTo(BeNil(), "the item stored before the filesystem error is gone")
			Expect(string(got.Content)).To(Equal(`"stored before the filesystem error"`))
			Eventually(func(g Gomega) {
				g.Expect(agentAnswers(ctx, ns, agent, repaired)).To(ContainElement(HaveField("Answer", HavePrefix("201 "))))
			}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			tl.mark("the item stored before the error read back; the agent stores again")
			Expect(jobsOf(ctx, c, ns, adapter)).To(HaveLen(1), "a volume that stopped taking writes is not a new version to verify")
		}, SpecTimeout(20*time.Minute))

		It("deletes a PostgreSQL adapter's scope, and only that scope, under deletionPolicy Delete", func(ctx SpecContext) {
			_, conn := startStoppable(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=")
			Expect(c.Create(ctx, connectionSecret(ctx, ns, "pgpurge", "pgdel", conn))).To(Succeed())
			ma := networkedAdapter(ns, "pgdel", memoryv1alpha1.BackendPostgres, "postgres", "immediate")
			ma.Spec.DeletionPolicy = memoryv1alpha1.DeletionDelete
			Expect(c.Create(ctx, ma)).To(Succeed())

			By("storing an item in another scope of the same server, from the host")
			other, err := postgres.Open(ctx, postgres.Options{URL: conn, Scope: "other-team"})
			Expect(err).NotTo(HaveOccurred())
			defer func() { _ = other.Close() }()
			theirs := memory.NewItem([]byte(`"not the adapter's"`), "e2e")
			_, err = other.Store(ctx, theirs)
			Expect(err).NotTo(HaveOccurred())

			By("storing an item through the adapter's Service")
			waitAvailable(ctx, ns, "pgdel")
			Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
			Expect(ma.Finalizers).To(ContainElement("memory.agentmem.io/purge-scope"))
			st := adapterStore(ctx, c, ns, "pgdel")
			mine := memory.NewItem([]byte(`"purged with the adapter"`), "e2e")
			_, err = st.Store(ctx, mine)
			Expect(err).NotTo(HaveOccurred())
			agents, err := postgres.Open(ctx, postgres.Options{URL: conn, Scope: "agents"})
			Expect(err).NotTo(HaveOccurred())
			defer func() { _ = agents.Close() }()
			got, err := agents.Retrieve(ctx, mine.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).NotTo(BeNil(), "the item is on the host server before the deletion")

			By("deleting the adapter: a purge Job runs before it goes")
			kubectl(ctx, "delete", "-n", ns, "madp/pgdel", "--wait=true", "--timeout=5m")
			got, err = agents.Retrieve(ctx, mine.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(BeNil(), "the adapter's scope still holds its item")
			got, err = other.Retrieve(ctx, theirs.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).NotTo(BeNil(), "another scope lost its item")
			// The controller removes the finalizer first and the Job right after.
			Eventually(func(g Gomega) {
				err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pgdel-purge"}, &batchv1.Job{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the purge Job is removed after success: %v", err)
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		}, SpecTimeout(15*time.Minute))

		It("verifies Redis as an eventual adapter, healing by itself once its missing Secret exists", func(ctx SpecContext) {
			_, conn := startStoppable(ctx, "redis-server.sh", "MAO_TEST_REDIS_LISTEN_URL=")
			redisSecret := connectionSecret(ctx, ns, "redis", "redismem", conn)
			Expect(c.Create(ctx, networkedAdapter(ns, "redismem", memoryv1alpha1.BackendRedis, "redis", "eventual"))).To(Succeed())
			Eventually(func(g Gomega) {
				d := condition(ctx, c, ns, "redismem", memoryv1alpha1.ConditionDeployed)
				g.Expect(d.Reason).To(Equal(memoryv1alpha1.ReasonBackendSecretMissing))
				g.Expect(d.Message).To(ContainSubstring("redismem-conn"))
			}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			By("creating the Secret, and nothing else")
			Expect(c.Create(ctx, redisSecret)).To(Succeed())
			waitAvailable(ctx, ns, "redismem")

			By("an agent pod whose requirements Redis does not meet stays gated, with its Event")
			expectRedisAgentGated(ctx, c, ns)
		}, SpecTimeout(15*time.Minute))

		It("ends the deletion of a namespace holding PostgreSQL and Redis adapters under deletionPolicy Delete, and says their items stay", func(ctx SpecContext) {
			n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nsdel-", Labels: map[string]string{
				"pod-security.kubernetes.io/enforce": "restricted",
			}}}
			Expect(c.Create(ctx, n)).To(Succeed())
			doomed := n.Name
			DeferCleanup(func(ctx SpecContext) {
				_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}})
			})
			// Registered after the deletion, so it runs first: the namespace the spec's
			// AfterEach reports on is not this one.
			DeferCleanup(func() { printDiagnostics(doomed) })
			Eventually(func() error {
				return c.Get(ctx, types.NamespacedName{Namespace: doomed, Name: "default"}, &corev1.ServiceAccount{})
			}).WithTimeout(time.Minute).Should(Succeed())

			_, pgConn := startStoppable(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=")
			_, redisConn := startStoppable(ctx, "redis-server.sh", "MAO_TEST_REDIS_LISTEN_URL=")
			adapters := map[string]struct {
				backend     memoryv1alpha1.BackendType
				adapter     string
				consistency memoryv1alpha1.SearchConsistency
				conn        string
			}{
				"pgns":    {memoryv1alpha1.BackendPostgres, "postgres", "immediate", pgConn},
				"redisns": {memoryv1alpha1.BackendRedis, "redis", "eventual", redisConn},
			}
			for name, a := range adapters {
				Expect(c.Create(ctx, connectionSecret(ctx, doomed, name+"-db", name, a.conn))).To(Succeed())
				ma := networkedAdapter(doomed, name, a.backend, a.adapter, a.consistency)
				ma.Spec.DeletionPolicy = memoryv1alpha1.DeletionDelete
				Expect(c.Create(ctx, ma)).To(Succeed())
			}

			By("an item stored through each adapter's Service, read back from the host server")
			pgHost, err := postgres.Open(ctx, postgres.Options{URL: pgConn, Scope: "agents"})
			Expect(err).NotTo(HaveOccurred())
			defer func() { _ = pgHost.Close() }()
			redisHost, err := redis.Open(ctx, redis.Options{URL: redisConn, Scope: "agents"})
			Expect(err).NotTo(HaveOccurred())
			defer func() { _ = redisHost.Close() }()
			hosts := map[string]memory.Store{"pgns": pgHost, "redisns": redisHost}
			items := map[string]memory.Item{}
			for name := range adapters {
				waitAvailable(ctx, doomed, name)
				items[name] = memory.NewItem([]byte(`"stored before the namespace went"`), "e2e")
				_, err := adapterStore(ctx, c, doomed, name).Store(ctx, items[name])
				Expect(err).NotTo(HaveOccurred())
				got, err := hosts[name].Retrieve(ctx, items[name].ID)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).NotTo(BeNil(), "%s: the item is on the host server", name)
			}

			By("deleting the namespace: it must end")
			stopWatch := watchScopePurged(ctx, doomed)
			deleted := time.Now()
			Expect(c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}})).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(c.Get(ctx, types.NamespacedName{Name: doomed}, &corev1.Namespace{}))
			}).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(BeTrue(), "namespace %s is still there", doomed)
			ended := time.Now()
			seen, gone := stopWatch()
			for name := range adapters {
				var reasons []string
				for _, s := range seen[name] {
					reasons = append(reasons, s.cond.Reason)
					fmt.Fprintf(GinkgoWriter, "NSDEL: %s +%s ScopePurged %s %s: %s\n", name, s.at.Sub(deleted).Round(10*time.Millisecond), s.cond.Status, s.cond.Reason, s.cond.Message)
				}
				fmt.Fprintf(GinkgoWriter, "NSDEL: %s gone +%s\n", name, gone[name].Sub(deleted).Round(10*time.Millisecond))
				Expect(reasons).To(ContainElement(memoryv1alpha1.ReasonNamespaceTerminating), "%s: the adapter said why it let go", name)
				Expect(gone).To(HaveKey(name))
			}
			fmt.Fprintf(GinkgoWriter, "NSDEL: namespace %s deleted; gone +%s\n", doomed, ended.Sub(deleted).Round(10*time.Millisecond))

			By("the Events about the namespace, kept in default, name each adapter and scope; the items are still on the servers")
			Eventually(func(g Gomega) {
				g.Expect(namespaceEventNotes(ctx, c, doomed, memoryv1alpha1.ReasonNamespaceTerminating)).To(ConsistOf(
					And(HavePrefix("MemoryAdapter "+doomed+"/pgns (Postgres, deletionPolicy Delete) let go without a purge"), ContainSubstring(`scope "agents": they stay on the server`)),
					And(HavePrefix("MemoryAdapter "+doomed+"/redisns (Redis, deletionPolicy Delete) let go without a purge"), ContainSubstring(`scope "agents": they stay on the server`)),
				))
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
			for name := range adapters {
				got, err := hosts[name].Retrieve(ctx, items[name].ID)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).NotTo(BeNil(), "%s: the Event says the items stay", name)
			}
		}, SpecTimeout(20*time.Minute))
	})

	// These stop manager pods: Serial, so no other spec's adapter sees the restart.
	Describe("across manager restarts", Serial, Ordered, func() {
		// pgrestart's server, which the restart spec stops and resumes.
		var restartServer hostServer
		BeforeAll(func(ctx SpecContext) {
			c, ns = adapterNamespace(ctx, "restart-")
			kubectl(ctx, "apply", "-n", ns, "-f", "config/samples/memory_v1alpha1_memoryadapter_sqlite.yaml")
			kubectl(ctx, "apply", "-n", ns, "-f", "config/samples/memory_v1alpha1_memoryadapter_external.yaml")
			// Each spec's PostgreSQL adapter, on a host server of its own, comes up here beside
			// the samples: their conformance runs overlap instead of following one another in
			// the Serial phase, where nothing else runs. The servers stop after AfterAll.
			var conn string
			restartServer, conn = startStoppable(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=")
			Expect(c.Create(ctx, connectionSecret(ctx, ns, "pgrestart-db", "pgrestart", conn))).To(Succeed())
			Expect(c.Create(ctx, networkedAdapter(ns, "pgrestart", memoryv1alpha1.BackendPostgres, "postgres", "immediate"))).To(Succeed())
			_, conn = startStoppable(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=")
			Expect(c.Create(ctx, connectionSecret(ctx, ns, "pgsteady-db", "pgsteady", conn))).To(Succeed())
			Expect(c.Create(ctx, networkedAdapter(ns, "pgsteady", memoryv1alpha1.BackendPostgres, "postgres", "immediate"))).To(Succeed())
			for _, n := range []string{"sqlite-memory", "external-memory", "pgrestart", "pgsteady"} {
				waitAvailable(ctx, ns, n)
			}
		}, NodeTimeout(15*time.Minute))
		AfterAll(func(ctx SpecContext) { deleteAdapterNamespace(ctx, c, ns) }, NodeTimeout(10*time.Minute))

		It("restarts every manager pod mid-run and mid-outage: no duplicate Job, and no false condition while the server is down", func(ctx SpecContext) {
			managerRestartSpec(ctx, c, ns, restartServer)
		}, SpecTimeout(20*time.Minute))

		It("fails over to the standby manager when the leader pod is deleted mid-run: no duplicate Job, no Available flap", func(ctx SpecContext) {
			// A PostgreSQL adapter whose server nothing stops (BeforeAll's) and the External
			// adapter are the steady ones.
			steady := []string{"pgsteady", "external-memory"}
			for _, n := range steady {
				waitAvailable(ctx, ns, n)
			}
			By("two manager replicas, both Ready: the readiness check of each passes only once its webhook server serves")
			kubectl(ctx, "rollout", "status", "-n", operatorNamespace, "deployment/"+managerDeployment, "--timeout=5m")
			var leader string
			Eventually(func(g Gomega) {
				pods := managerPods(ctx, c)
				g.Expect(pods).To(HaveLen(2))
				for _, p := range pods {
					g.Expect(podReady(p)).To(BeTrue(), "manager pod %s is not Ready", p.Name)
				}
				leader = leaseHolder(ctx, c)
				g.Expect(pods).To(ContainElement(HaveField("Name", leader)), "the Lease is held by a live manager pod")
			}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())

			By("a rerun under way on sqlite-memory when the leader " + leader + " is deleted")
			newJobs := jobsSince(ctx, c, ns, "sqlite-memory")
			kubectl(ctx, "annotate", "-n", ns, "madp/sqlite-memory", "memory.agentmem.io/rerun-conformance=failover", "--overwrite")
			Eventually(newJobs).WithTimeout(time.Minute).Should(HaveLen(1))
			flaps := watchAvailable(ctx, c, ns, steady)
			deleted := time.Now()
			kubectl(ctx, "delete", "pod", "-n", operatorNamespace, leader, "--wait=false")
			var holder string
			Eventually(func(g Gomega) {
				holder = leaseHolder(ctx, c)
				g.Expect(holder).NotTo(BeEmpty())
				g.Expect(holder).NotTo(Equal(leader))
			}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
			acquired := time.Now()
			// Created once the Lease changed hands, so only the new leader can write its status:
			// the old one stopped its controllers before it released the Lease.
			probe := networkedAdapter(ns, "failover-probe", memoryv1alpha1.BackendPostgres, "postgres", "immediate")
			Expect(c.Create(ctx, probe)).To(Succeed())
			Eventually(func(g Gomega) {
				ma := &memoryv1alpha1.MemoryAdapter{}
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(probe), ma)).To(Succeed())
				g.Expect(ma.Status.Conditions).NotTo(BeEmpty())
			}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
			wrote := time.Now()
			fmt.Fprintf(GinkgoWriter, "FAILOVER: leader pod %s deleted; Lease held by %s after %s; the new leader's first status write %s later; %s in all\n",
				leader, holder, acquired.Sub(deleted).Round(10*time.Millisecond), wrote.Sub(acquired).Round(10*time.Millisecond), wrote.Sub(deleted).Round(10*time.Millisecond))

			By("the new leader finishes the run it inherited, without a second Job")
			Consistently(newJobs).WithTimeout(20 * time.Second).WithPolling(time.Second).Should(HaveLen(1))
			Eventually(func(g Gomega) {
				ma := &memoryv1alpha1.MemoryAdapter{}
				g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sqlite-memory"}, ma)).To(Succeed())
				g.Expect(ma.Status.Conformance.RerunToken).To(Equal("failover"))
				g.Expect(meta.IsStatusConditionTrue(ma.Status.Conditions, memoryv1alpha1.ConditionAvailable)).To(BeTrue())
			}).WithTimeout(availableDeadline).WithPolling(time.Second).Should(Succeed())
			Expect(newJobs()).To(HaveLen(1), "no duplicate Job")
			notTrue, reads := flaps.result()
			fmt.Fprintf(GinkgoWriter, "FAILOVER: %d readings of Available on %v across the failover\n", reads, steady)
			Expect(notTrue).To(BeEmpty(), "a steady adapter's Available flapped across the failover")
			Expect(reads).To(BeNumerically(">", 3*len(steady)))

			Expect(c.Delete(ctx, probe)).To(Succeed())
			Expect(c.Delete(ctx, &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pgsteady"}})).To(Succeed())
			kubectl(ctx, "rollout", "status", "-n", operatorNamespace, "deployment/"+managerDeployment, "--timeout=5m")
		}, SpecTimeout(15*time.Minute))
	})
})
