//go:build scale

package memoryadapter

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/softlimit"
)

// The scale benchmark (opt-in: `-tags scale`; docs/operator.md#scale has the command and the
// recorded figures). It measures the operator and asserts only its own setup, loudly: the
// manager binary (cmd/main.go) runs in its own process as the manager's ServiceAccount, so
// its RSS and its API requests are its own; the benchmark plays the kubelet (one running pod
// per adapter at a loopback address of its own, Deployments made available, conformance Jobs
// finished with a passing report) and the adapters (one HTTP server that answers
// /v1/evidence only at the address of a pod that exists). Every tenth adapter's evidence
// read hangs until the reader gives up.

// scaleHangEvery makes every scaleHangEvery-th adapter one whose evidence reads hang: 10%.
const scaleHangEvery = 10

// scalePod is one adapter pod the benchmark serves evidence for.
type scalePod struct {
	hang  bool
	reads []time.Time
	// invalid makes the pod answer with evidence that invalidates its manifest.
	invalid bool
}

// scaleEvidence answers GET /v1/evidence for the pods it knows, telling them apart by the
// local address the client dialed: one listener on 0.0.0.0 serves every loopback pod IP, so
// a read reaches an adapter only at its own pod's address, as in a cluster.
type scaleEvidence struct {
	report  []byte
	invalid []byte
	port    int
	srv     *http.Server
	mu      sync.Mutex
	pods    map[string]*scalePod // by pod IP
	// stray counts requests at an address no pod holds, or of another path: a setup error.
	stray atomic.Int64
	hung  atomic.Int64
}

func startScaleEvidence(manifestHash string) *scaleEvidence {
	report, err := json.Marshal(memory.EvidenceReport{Adapter: "sqlite", AdapterVersion: "bench", ManifestHash: manifestHash,
		ServiceVersion: "3.50.4", ManifestValid: true, Probes: []memory.ProbeResult{{Name: "json1", OK: true}}, ObservedAt: time.Now()})
	Expect(err).NotTo(HaveOccurred())
	l, err := net.Listen("tcp", "0.0.0.0:0")
	Expect(err).NotTo(HaveOccurred())
	e := &scaleEvidence{report: report, invalid: invalidReport(manifestHash), port: l.Addr().(*net.TCPAddr).Port, pods: map[string]*scalePod{}}
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() { _ = e.srv.Serve(l) }()
	return e
}

// add starts answering at ip, once the pod holding it exists.
func (e *scaleEvidence) add(ip string, hang bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pods[ip] = &scalePod{hang: hang}
}

// ServeHTTP implements http.Handler.
func (e *scaleEvidence) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ip string
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		ip = a.IP.String()
	}
	e.mu.Lock()
	p := e.pods[ip]
	var report []byte
	if p != nil && !p.hang {
		p.reads = append(p.reads, time.Now())
		report = e.reportFor(p)
	}
	e.mu.Unlock()
	switch {
	case p == nil || r.URL.Path != "/v1/evidence":
		if e.stray.Add(1) <= 5 {
			fmt.Fprintf(GinkgoWriter, "stray evidence request: %s %s at %s\n", r.Method, r.URL.Path, ip)
		}
		http.NotFound(w, r)
	case !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer "):
		w.WriteHeader(http.StatusUnauthorized)
	case p.hang:
		e.hung.Add(1)
		<-r.Context().Done() // until the reader's deadline closes the connection
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(report)
	}
}

// intervals returns the time between consecutive reads of each healthy pod at or after
// since, and the pods read fewer than twice in that time.
func (e *scaleEvidence) intervals(since time.Time) (all []time.Duration, short int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.pods {
		if p.hang {
			continue
		}
		var prev time.Time
		n := 0
		for _, t := range p.reads {
			if t.Before(since) {
				continue
			}
			if n > 0 {
				all = append(all, t.Sub(prev))
			}
			prev = t
			n++
		}
		if n < 2 {
			short++
		}
	}
	slices.Sort(all)
	return all, short
}

func (e *scaleEvidence) stop() { _ = e.srv.Close() }

// quantile is the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// managerProcess is the manager binary running against envtest as the manager's
// ServiceAccount, with plain-HTTP metrics and pprof on loopback ports.
type managerProcess struct {
	cmd                  *exec.Cmd
	logPath              string
	metricsURL, pprofURL string
	// doorbellURL is where the adapters' servers would ring the manager.
	doorbellURL string
	exited      chan struct{}
	exitErr     error
}

// freeLoopbackAddr is a loopback address with a port free at the time of the call.
func freeLoopbackAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// writeKubeconfig writes c (client certificate or token, and impersonation) as a kubeconfig.
func writeKubeconfig(c *rest.Config, path string) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	kc.AuthInfos["manager"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken,
		Impersonate: c.Impersonate.UserName, ImpersonateGroups: c.Impersonate.Groups}
	kc.Contexts["manager"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "manager"}
	kc.CurrentContext = "manager"
	Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
}

// startManagerProcess builds cmd/main.go and runs it in dir. The webhook server stays off
// through the switch `make run` uses (ENABLE_WEBHOOKS=false): its port is fixed (9443) on a
// machine other suites share, and no webhook configuration here would send it a request.
func startManagerProcess(dir string) *managerProcess {
	bin := filepath.Join(dir, "manager")
	build := exec.Command("go", "build", "-o", bin, "../../../cmd")
	build.Stdout, build.Stderr = GinkgoWriter, GinkgoWriter
	Expect(build.Run()).To(Succeed())
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(managerCfg, kubeconfig)
	metricsAddr, pprofAddr, doorbellAddr := freeLoopbackAddr(), freeLoopbackAddr(), freeLoopbackAddr()
	m := &managerProcess{logPath: filepath.Join(dir, "manager.log"), metricsURL: "http://" + metricsAddr + "/metrics",
		pprofURL: "http://" + pprofAddr + "/debug/pprof/", doorbellURL: "http://" + doorbellAddr + "/v1/doorbell", exited: make(chan struct{})}
	logFile, err := os.Create(m.logPath)
	Expect(err).NotTo(HaveOccurred())
	m.cmd = exec.Command(bin, "--leader-elect=false", "--metrics-bind-address="+metricsAddr, "--metrics-secure=false",
		"--pprof-bind-address="+pprofAddr, "--health-probe-bind-address=0", "--token-key-secret="+tokenKeyRef.String(),
		"--doorbell-bind-address="+doorbellAddr, "--doorbell-url="+m.doorbellURL)
	// The soft limit the deployed manager runs with (softlimit.For its container's 256Mi,
	// config/manager/manager.yaml); outside a container it sets none.
	softLimit := cmp.Or(os.Getenv("MAO_SCALE_GOMEMLIMIT"), fmt.Sprintf("%dMiB", softlimit.For(256<<20)>>20))
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+operatorNamespace, "ENABLE_WEBHOOKS=false", "GOMEMLIMIT="+softLimit)
	GinkgoWriter.Printf("manager GOMEMLIMIT=%s\n", softLimit)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	Expect(m.cmd.Start()).To(Succeed())
	go func() {
		m.exitErr = m.cmd.Wait()
		_ = logFile.Close()
		close(m.exited)
	}()
	Eventually(func() error {
		m.checkRunning()
		_, err := m.get(m.metricsURL)
		return err
	}, timeout, poll).Should(Succeed())
	return m
}

// checkRunning fails the spec, with the end of the manager's log, if the manager exited.
func (m *managerProcess) checkRunning() {
	GinkgoHelper()
	select {
	case <-m.exited:
		b, _ := os.ReadFile(m.logPath)
		Fail(fmt.Sprintf("the manager exited (%v); its log ends:\n%s", m.exitErr, b[max(0, len(b)-4000):]))
	default:
	}
}

func (m *managerProcess) get(url string) ([]byte, error) {
	resp, err := http.Get(url) //nolint:gosec // a loopback URL the benchmark chose
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}

// scrape returns the manager's metrics in the text format.
func (m *managerProcess) scrape() string {
	GinkgoHelper()
	b, err := m.get(m.metricsURL)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// saveProfile writes the manager's pprof profile name (with query) to path.
func (m *managerProcess) saveProfile(name, path string) {
	b, err := m.get(m.pprofURL + name)
	if err != nil {
		fmt.Fprintf(GinkgoWriter, "pprof %s: %v\n", name, err)
		return
	}
	_ = os.WriteFile(path, b, 0o600)
}

// status returns a field of /proc/PID/status, such as VmHWM (the peak RSS).
func (m *managerProcess) status(field string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func (m *managerProcess) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

// metricValues sums the samples of a metric in the text format by the value of one label
// (all under "" when label is empty), keeping the samples whose labels contain every filter.
func metricValues(text, name, label string, filters ...string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok || slices.ContainsFunc(filters, func(f string) bool { return !strings.Contains(labels, f) }) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		key := ""
		if label != "" {
			if _, after, found := strings.Cut(labels, label+`="`); found {
				key, _, _ = strings.Cut(after, `"`)
			}
		}
		out[key] += v
	}
	return out
}

// apiWrites is the manager's mutating API requests so far, by method.
func apiWrites(text string) map[string]float64 {
	w := metricValues(text, "rest_client_requests_total", "method")
	delete(w, http.MethodGet)
	return w
}

func diff(after, before map[string]float64) (map[string]float64, float64) {
	d, total := map[string]float64{}, 0.0
	for k, v := range after {
		if v-before[k] != 0 {
			d[k] = v - before[k]
			total += v - before[k]
		}
	}
	return d, total
}

func passingCompactReport() []byte {
	rep := conformance.CompactReport{SuiteVersion: conformance.SuiteVersion, AdapterID: "sqlite", Result: conformance.Passed, StartTime: time.Now().UTC()}
	for _, id := range memoryv1alpha1.AllConformanceCaseIDs {
		rep.Cases = append(rep.Cases, conformance.CompactCase{ID: conformance.CaseID(id), Outcome: conformance.Passed})
		rep.Counts.Passed++
	}
	b, err := json.Marshal(rep)
	Expect(err).NotTo(HaveOccurred())
	return b
}

// inParallel runs the tasks on workers goroutines; a failed expectation in a task fails the
// spec (GinkgoRecover) and the others still run.
func inParallel(workers int, tasks []func()) {
	ch := make(chan func())
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range ch {
				func() {
					defer GinkgoRecover()
					t()
				}()
			}
		}()
	}
	for _, t := range tasks {
		ch <- t
	}
	close(ch)
	wg.Wait()
	Expect(CurrentSpecReport().Failed()).To(BeFalse(), "a setup step failed (above)")
}

// scaleKubelet plays the kubelet and the Job controller for the benchmark's namespace.
type scaleKubelet struct {
	ns       string
	ev       *scaleEvidence
	report   []byte
	index    map[string]int // adapter name -> its number
	mu       sync.Mutex
	running  map[string]bool // adapters whose pod runs
	finished map[string]bool // Jobs finished
}

// podIP is adapter i's pod address: a loopback address of its own, outside 127.0.0.0/16,
// where other suites on the machine listen.
func podIP(i int) string {
	return fmt.Sprintf("127.%d.%d.%d", 100+i/62500, (i/250)%250, i%250+1)
}

// pass does one round of the kubelet's work; it reports whether there was any.
func (k *scaleKubelet) pass(ctx context.Context) bool {
	deps := &appsv1.DeploymentList{}
	listPatiently(ctx, deps, client.InNamespace(k.ns))
	jobs := &batchv1.JobList{}
	listPatiently(ctx, jobs, client.InNamespace(k.ns))
	var tasks []func()
	k.mu.Lock()
	for _, d := range deps.Items {
		if !k.running[d.Name] {
			tasks = append(tasks, func() { k.runPod(ctx, d) })
		}
		if d.Status.AvailableReplicas != 1 || d.Status.ObservedGeneration != d.Generation {
			tasks = append(tasks, func() { markAvailable(ctx, client.ObjectKeyFromObject(&d)) })
		}
	}
	for _, j := range jobs.Items {
		if !k.finished[j.Name] {
			tasks = append(tasks, func() {
				finishJob(ctx, j, k.report, true)
				k.mu.Lock()
				k.finished[j.Name] = true
				k.mu.Unlock()
			})
		}
	}
	k.mu.Unlock()
	inParallel(16, tasks)
	return len(tasks) > 0
}

// runPod creates the adapter's pod from its Deployment's template, with the container port
// named http set to the evidence server's, marks it running at the adapter's address, and
// lets the evidence server answer there once the pod exists.
func (k *scaleKubelet) runPod(ctx context.Context, d appsv1.Deployment) {
	i, ok := k.index[d.Name]
	Expect(ok).To(BeTrue(), "a Deployment %s of no adapter the benchmark created", d.Name)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name + "-0", Labels: d.Spec.Template.Labels},
		Spec: *d.Spec.Template.Spec.DeepCopy()}
	named := 0
	for ci := range pod.Spec.Containers {
		for pi := range pod.Spec.Containers[ci].Ports {
			if p := &pod.Spec.Containers[ci].Ports[pi]; p.Name == "http" {
				p.ContainerPort = int32(k.ev.port)
				named++
			}
		}
	}
	Expect(named).To(Equal(1), "the adapter's pod template has no single container port named http")
	if err := k8sClient.Create(ctx, pod); !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred(), "create pod %s", pod.Name)
	}
	// The pod exists now; it answers before the controller can see it running.
	k.ev.add(podIP(i), i%scaleHangEvery == scaleHangEvery-1)
	setPodReady(ctx, pod, podIP(i), true)
	k.mu.Lock()
	k.running[d.Name] = true
	k.mu.Unlock()
}

// listPatiently lists from the API server, retrying an error for up to two minutes: at
// 10,000 adapters on two loaded cores the envtest API server sometimes answers a list of a
// whole namespace with a 504 (one run lost 36 minutes to a single one). An error that lasts
// fails the benchmark, naming itself.
func listPatiently(ctx context.Context, list client.ObjectList, opts ...client.ListOption) {
	GinkgoHelper()
	Eventually(func() error { return k8sClient.List(ctx, list, opts...) }).WithContext(ctx).
		WithTimeout(2 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
}

// tally counts the healthy adapters that are Available and the hanging ones that are not,
// and describes the first adapter in neither state.
func (k *scaleKubelet) tally(ctx context.Context) (healthyAvailable, hangingUnavailable int, first string) {
	list := &memoryv1alpha1.MemoryAdapterList{}
	listPatiently(ctx, list, client.InNamespace(k.ns))
	for _, ma := range list.Items {
		c := conditionOf(&ma, memoryv1alpha1.ConditionAvailable)
		hang := k.index[ma.Name]%scaleHangEvery == scaleHangEvery-1
		switch {
		case !hang && c.Status == metav1.ConditionTrue:
			healthyAvailable++
		case hang && c.Status != metav1.ConditionTrue && conditionOf(&ma, memoryv1alpha1.ConditionHealthy).Status == metav1.ConditionFalse:
			hangingUnavailable++
		case first == "":
			first = fmt.Sprintf("%s (hangs: %t): Available=%s %s: %s", ma.Name, hang, c.Status, c.Reason, c.Message)
		}
	}
	return healthyAvailable, hangingUnavailable, first
}

// expectServices fails unless every adapter has its Service with a cluster IP: a Service the
// API server refused leaves an adapter that no client can reach.
func expectServices(ctx context.Context, ns string, names []string) {
	svcs := &corev1.ServiceList{}
	listPatiently(ctx, svcs, client.InNamespace(ns))
	has := map[string]bool{}
	for _, s := range svcs.Items {
		has[s.Name] = s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone
	}
	var missing []string
	for _, n := range names {
		if !has[n] {
			missing = append(missing, n)
		}
	}
	Expect(missing).To(BeEmpty(), "%d of %d adapters have no Service with a cluster IP", len(missing), len(names))
}

func adapterCount() int {
	v := os.Getenv("MAO_SCALE_ADAPTERS")
	if v == "" {
		return 1000
	}
	n, err := strconv.Atoi(v)
	Expect(err).NotTo(HaveOccurred())
	Expect(n).To(BeNumerically(">=", scaleHangEvery))
	return n
}

var _ = Describe("the controller at scale", Label("scale"), Ordered, func() {
	It("brings N adapters to Available, keeps the period, and then writes nothing", func(ctx SpecContext) {
		n := adapterCount()
		out := os.Getenv("MAO_SCALE_OUT")
		if out == "" {
			out = filepath.Join(os.TempDir(), fmt.Sprintf("mao-scale-%d-%s", n, time.Now().UTC().Format("20060102T150405")))
		}
		Expect(os.MkdirAll(out, 0o755)).To(Succeed())
		fmt.Fprintf(GinkgoWriter, "manager log and profiles in %s\n", out)

		// The machine's load tells what else competed for its cores during the run.
		loadAtStart, _ := os.ReadFile("/proc/loadavg")
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scale-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		ev := startScaleEvidence(sqliteAdapter("x", "x").Spec.Manifest.Hash())
		defer ev.stop()
		mgr := startManagerProcess(out)
		defer mgr.stop()

		names := make([]string, n)
		k := &scaleKubelet{ns: ns.Name, ev: ev, report: passingCompactReport(), index: map[string]int{},
			running: map[string]bool{}, finished: map[string]bool{}}
		for i := range names {
			names[i] = fmt.Sprintf("a%05d", i)
			k.index[names[i]] = i
		}
		newAdapter := fmt.Sprintf("a%05d", n) // created in the steady state, never served
		k.index[newAdapter] = n

		start := time.Now()
		tasks := make([]func(), n)
		for i, name := range names {
			tasks[i] = func() {
				ma := sqliteAdapter(ns.Name, name)
				ma.Spec.Health = nil // the default period, as users run it
				// The fake pods answer plain HTTP: the figures of docs/operator.md#scale were
				// measured before TLS became the default, and stay comparable this way.
				ma.Spec.TLS = &memoryv1alpha1.TLSSpec{Mode: memoryv1alpha1.TLSDisabled}
				Expect(k8sClient.Create(ctx, ma)).To(Succeed())
			}
		}
		inParallel(8, tasks)
		created := time.Since(start)

		By("playing the kubelet until the healthy adapters are Available and the hanging ones Healthy=False")
		healthy := n - n/scaleHangEvery
		deadline := start.Add(80 * time.Minute)
		var toAvailable, toUnhealthy time.Duration
		for {
			mgr.checkRunning()
			if k.pass(ctx) {
				time.Sleep(time.Second)
				continue
			}
			h, u, first := k.tally(ctx)
			if h == healthy && toAvailable == 0 {
				toAvailable = time.Since(start)
			}
			if u == n-healthy && toUnhealthy == 0 {
				toUnhealthy = time.Since(start)
			}
			if toAvailable > 0 && toUnhealthy > 0 {
				break
			}
			Expect(time.Now().Before(deadline)).To(BeTrue(), "%d of %d healthy Available, %d of %d hanging Healthy=False; first other: %s",
				h, healthy, u, n-healthy, first)
			time.Sleep(5 * time.Second)
		}
		steadyFrom := time.Now()
		expectServices(ctx, ns.Name, names)
		Expect(ev.stray.Load()).To(BeZero(), "evidence reads at an address no adapter pod holds")

		// What each status write carries: the API server decodes, merges, validates and
		// re-encodes the whole object, and tracks its managed fields, on every patch.
		sample := &memoryv1alpha1.MemoryAdapter{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: names[0]}, sample)).To(Succeed())
		sampleJSON, err := json.Marshal(sample)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(out, "adapter-sample.json"), sampleJSON, 0o600)).To(Succeed())
		managedJSON, err := json.Marshal(sample.ManagedFields)
		Expect(err).NotTo(HaveOccurred())
		statusJSON, err := json.Marshal(sample.Status)
		Expect(err).NotTo(HaveOccurred())

		By("one steady minute")
		before := mgr.scrape()
		profiled := make(chan struct{})
		go func() {
			defer close(profiled)
			mgr.saveProfile("profile?seconds=55", filepath.Join(out, "steady.cpu.pprof"))
		}()
		time.Sleep(time.Minute) // a measurement window, not a wait for a condition
		after := mgr.scrape()
		<-profiled
		writesByMethod, writes := diff(apiWrites(after), apiWrites(before))
		_, reconciles := diff(metricValues(after, "controller_runtime_reconcile_total", "", `controller="memoryadapter"`),
			metricValues(before, "controller_runtime_reconcile_total", "", `controller="memoryadapter"`))

		By("a new adapter in the steady state: time to its first reconcile")
		ma := sqliteAdapter(ns.Name, newAdapter)
		ma.Spec.Health = nil
		ma.Spec.TLS = &memoryv1alpha1.TLSSpec{Mode: memoryv1alpha1.TLSDisabled}
		created1 := time.Now()
		Expect(k8sClient.Create(ctx, ma)).To(Succeed())
		var firstReconcile time.Duration
		Eventually(func(g Gomega) {
			got := &memoryv1alpha1.MemoryAdapter{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ma), got)).To(Succeed())
			g.Expect(got.Status.Conditions).NotTo(BeEmpty())
			firstReconcile = time.Since(created1)
		}, timeout, 20*time.Millisecond).Should(Succeed())

		intervals, short := ev.intervals(steadyFrom)
		Expect(ev.stray.Load()).To(BeZero(), "evidence reads at an address no adapter pod holds")

		By("evidence that changes: time from the change (and its ring) to Available")
		verdict := measureVerdictLatency(ctx, ns.Name, k, names, mgr.doorbellURL, mgr.scrape, scaleVerdictSpread, scaleVerdictSpacing)
		// The burst is bound by the API server (the manager idles meanwhile), so its CPU
		// profile during the burst is what says where that time goes.
		serverProfiled := make(chan struct{})
		go func() {
			defer close(serverProfiled)
			defer GinkgoRecover()
			saveAPIServerProfile(ctx, 20*time.Second, filepath.Join(out, "apiserver-burst.cpu.pprof"))
		}()
		burst := measureVerdictLatency(ctx, ns.Name, k, names, mgr.doorbellURL, mgr.scrape, scaleVerdictBurst, 0)
		<-serverProfiled
		Expect(ev.stray.Load()).To(BeZero(), "evidence reads at an address no adapter pod holds")
		hwm, rss := mgr.status("VmHWM"), mgr.status("VmRSS")
		// The RSS's two parts: the Go runtime's (anonymous, what GOMEMLIMIT bounds) and the
		// binary's pages (file-backed, outside it; softlimit.BinaryPages leaves room for them).
		rssAnon, rssFile := mgr.status("RssAnon"), mgr.status("RssFile")
		mgr.saveProfile("heap", filepath.Join(out, "heap.pprof"))
		total := metricValues(after, "controller_runtime_reconcile_total", "", `controller="memoryadapter"`)[""]

		result := &strings.Builder{}
		loadAtEnd, _ := os.ReadFile("/proc/loadavg")
		fmt.Fprintf(result, "%s, %d CPUs; load average at start %s, at end %s", time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(),
			strings.TrimSpace(string(loadAtStart)), strings.TrimSpace(string(loadAtEnd)))
		fmt.Fprintf(result, "\nan Available adapter is %d bytes of JSON (status %d, managed fields %d)\n", len(sampleJSON), len(statusJSON), len(managedJSON))
		fmt.Fprintf(result, "\nsteady minute: writes by method %v, %.0f reconciles, %d hung reads so far; %d healthy adapters read fewer than twice since all were Available\n",
			writesByMethod, reconciles, ev.hung.Load(), short)
		fmt.Fprintf(result, "\n| adapters (10%% hanging) | created in | healthy all Available after | hanging all Healthy=False after | reconciles per adapter | interval between reads p50 / p99 / max (goal ≤ 36 s) | new adapter's first reconcile (goal ≤ 2 s) | API writes in the steady minute (goal 0) | manager peak RSS (goal ≤ 256 MiB at 10,000) | RSS at the end: anonymous / the binary's pages |\n|---|---|---|---|---|---|---|---|---|---|\n")
		fmt.Fprintf(result, "| %d | %s | %s | %s | %.1f | %s / %s / %s | %s | %.0f | %s (now %s) | %s / %s |\n", n, created.Round(time.Second),
			toAvailable.Round(time.Second), toUnhealthy.Round(time.Second),
			total/float64(n), quantile(intervals, 0.5).Round(10*time.Millisecond), quantile(intervals, 0.99).Round(10*time.Millisecond),
			quantile(intervals, 1).Round(10*time.Millisecond), firstReconcile.Round(time.Millisecond), writes, hwm, rss, rssAnon, rssFile)
		fmt.Fprintf(result, "\nverdict after an evidence change, each adapter ringing the doorbell (goal p99 ≤ 5 s): %s; and %s\n",
			verdict.describe(fmt.Sprintf("%d adapters one every %s", scaleVerdictSpread, scaleVerdictSpacing)),
			burst.describe(fmt.Sprintf("%d adapters at once", scaleVerdictBurst)))
		fmt.Fprint(GinkgoWriter, result.String())
		Expect(os.WriteFile(filepath.Join(out, "result.md"), []byte(result.String()), 0o600)).To(Succeed())
		AddReportEntry("scale", fmt.Sprintf("adapters=%d available_after=%s interval_p50=%s interval_p99=%s intervals=%d short=%d first_reconcile=%s steady_writes=%.0f writes_by_method=%v steady_reconciles=%.0f peak_rss=%s out=%s verdict_false_p99=%s verdict_true_p99=%s rings=%d",
			n, toAvailable.Round(time.Second), quantile(intervals, 0.5), quantile(intervals, 0.99), len(intervals), short, firstReconcile, writes, writesByMethod, reconciles, hwm, out,
			quantile(verdict.toFalse, 0.99), quantile(verdict.toTrue, 0.99), verdict.rings+burst.rings))
	}, SpecTimeout(120*time.Minute))
})
