//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// A real Prometheus (Debian's binary, hack/prometheus-bin.sh) on the host scrapes the
// manager's HTTPS metrics endpoint with a ServiceAccount token bound to the metrics-reader
// ClusterRole, at the pods the ServiceMonitor would find (the metrics Service's EndpointSlices,
// port https), loads the shipped alert rules, and sees MemoryAdapterUnavailable fire during a
// real outage and resolve after it.

const (
	// metricsService and metricsReaderRole are config/default's names.
	metricsService    = "memory-adapter-operator-controller-manager-metrics-service"
	metricsReaderRole = "memory-adapter-operator-metrics-reader"
	// unavailableFor replaces MemoryAdapterUnavailable's 10 minutes in the spec's copy of
	// the rules: the expression is the shipped one, only the wait is shorter.
	unavailableFor = "20s"
)

// promAlert is one entry of Prometheus's /api/v1/alerts.
type promAlert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
}

// promGet GETs a Prometheus API path and decodes its data field into out.
func promGet(g Gomega, base, path string, out any) {
	body := httpGet(g, base+path)
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	g.Expect(json.Unmarshal(body, &env)).To(Succeed(), "GET %s: %s", path, body)
	g.Expect(env.Status).To(Equal("success"), "GET %s: %s", path, body)
	g.Expect(json.Unmarshal(env.Data, out)).To(Succeed(), "GET %s: %s", path, body)
}

// unavailableAlert returns the MemoryAdapterUnavailable alert for ns/name, or nil.
func unavailableAlert(g Gomega, base, ns, name string) *promAlert {
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	promGet(g, base, "/api/v1/alerts", &data)
	for i, a := range data.Alerts {
		if a.Labels["alertname"] == "MemoryAdapterUnavailable" && a.Labels["namespace"] == ns && a.Labels["name"] == name {
			return &data.Alerts[i]
		}
	}
	return nil
}

// testRules writes the shipped rules file with MemoryAdapterUnavailable's `for:` set to
// unavailableFor and every other field as shipped, and returns its path.
func testRules(dir string) string {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "alerts.rules.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var rules struct {
		Groups []struct {
			Name  string           `json:"name"`
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	Expect(yaml.UnmarshalStrict(b, &rules)).To(Succeed())
	changed := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r["alert"] == "MemoryAdapterUnavailable" {
				Expect(r["for"]).To(Equal("10m"), "the shipped wait docs/operator.md states")
				r["for"] = unavailableFor
				changed++
			}
		}
	}
	Expect(changed).To(Equal(1))
	out, err := yaml.Marshal(rules)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "rules.yaml")
	Expect(os.WriteFile(path, out, 0o600)).To(Succeed())
	return path
}

// scraperToken creates ServiceAccount name in ns and returns a token of it; bound says
// whether it is bound to the metrics-reader ClusterRole first.
func scraperToken(ctx context.Context, c client.Client, ns, name string, bound bool) string {
	GinkgoHelper()
	Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	if bound {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		}
		Expect(c.Create(ctx, crb)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, crb) })
	}
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// scrapeStatus GETs the manager's /metrics at addr with token and returns the HTTP status.
func scrapeStatus(ctx context.Context, addr, token string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// The manager's certificate is self-signed (no --metrics-cert-path in config/default).
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed, as the ServiceMonitor's insecureSkipVerify
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// metricsTargets writes a file_sd target list of the manager's metrics endpoints as the
// ServiceMonitor finds them: every address of the metrics Service's EndpointSlices at the
// port named https, labelled with its pod. Debian builds Prometheus without Kubernetes
// service discovery (kubernetes_sd_configs is not in its config schema), so the spec reads
// the EndpointSlices itself. It returns the number of targets.
func metricsTargets(ctx context.Context, path string) int {
	GinkgoHelper()
	list, err := clientset.DiscoveryV1().EndpointSlices(operatorNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + metricsService,
	})
	Expect(err).NotTo(HaveOccurred())
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	var groups []group
	for _, sl := range list.Items {
		for _, port := range sl.Ports {
			if port.Name == nil || *port.Name != "https" || port.Port == nil {
				continue
			}
			for _, ep := range sl.Endpoints {
				pod := ""
				if ep.TargetRef != nil {
					pod = ep.TargetRef.Name
				}
				for _, addr := range ep.Addresses {
					groups = append(groups, group{Targets: []string{net.JoinHostPort(addr, fmt.Sprint(*port.Port))}, Labels: map[string]string{"pod": pod}})
				}
			}
		}
	}
	b, err := json.Marshal(groups)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(path, b, 0o600)).To(Succeed())
	return len(groups)
}

// adapterTargets writes a file_sd target list of adapter name's pods in ns at their metrics
// port, labelled as config/prometheus/podmonitor.yaml labels them (namespace, pod, and the
// adapter's name as adapter): Debian's Prometheus has no Kubernetes discovery, so the spec
// lists the pods itself. The host is outside every pod NetworkPolicy; the NetworkPolicy spec
// checks that the monitoring namespace, and only it, reaches the port. It returns the number
// of targets.
func adapterTargets(ctx context.Context, c client.Client, ns, name, path string) int {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{
		"memory.agentmem.io/adapter": name, "app.kubernetes.io/component": "adapter"})).To(Succeed())
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	var groups []group
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		groups = append(groups, group{
			Targets: []string{net.JoinHostPort(p.Status.PodIP, "9090")},
			Labels:  map[string]string{"namespace": ns, "pod": p.Name, "adapter": p.Labels["memory.agentmem.io/adapter"]},
		})
	}
	b, err := json.Marshal(groups)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(path, b, 0o600)).To(Succeed())
	return len(groups)
}

// dashboardQueries returns every query of the shipped Grafana dashboard with its variables
// replaced as Grafana would for "All": the interval and range by 1m, the namespace and
// adapter selectors by .*.
func dashboardQueries() []string {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "config", "monitoring", "dashboards", "memory-adapters.json"))
	Expect(err).NotTo(HaveOccurred())
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	Expect(json.Unmarshal(b, &d)).To(Succeed())
	r := strings.NewReplacer("$__rate_interval", "1m", "$__range", "1m", "$namespace", ".*", "$adapter", ".*")
	var out []string
	for _, p := range d.Panels {
		Expect(p.Targets).NotTo(BeEmpty(), "panel %q has no query", p.Title)
		for _, t := range p.Targets {
			out = append(out, r.Replace(t.Expr))
		}
	}
	return out
}

// seriesNames are the metric names a PromQL expression reads from the operator's two
// families (memory_adapter_..., memory_adapter_operator_...), a histogram's _bucket included.
func seriesNames(expr string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(expr, func(r rune) bool {
		return r != '_' && r != ':' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9')
	}) {
		if strings.HasPrefix(f, "memory_adapter_") {
			out = append(out, f)
		}
	}
	return out
}

// freePort returns a loopback port nothing listens on now.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var _ = Describe("Prometheus on the manager's metrics", Ordered, func() {
	var (
		c  client.Client
		ns string
	)
	BeforeAll(func(ctx SpecContext) { c, ns = adapterNamespace(ctx, "prom-") }, NodeTimeout(5*time.Minute))
	AfterAll(func(ctx SpecContext) { deleteAdapterNamespace(ctx, c, ns) }, NodeTimeout(10*time.Minute))
	AfterEach(func() { printDiagnostics(ns, operatorNamespace) })

	It("scrapes both manager pods with a metrics-reader token and fires MemoryAdapterUnavailable through a PostgreSQL outage, resolving it after", longSpec, func(ctx SpecContext) {
		promBin, err := run(ctx, "hack/prometheus-bin.sh")
		Expect(err).NotTo(HaveOccurred(), "hack/prometheus-bin.sh could not provide Debian's prometheus")
		promBin = strings.TrimSpace(promBin)

		By("checking the endpoint's authorization: a token without the metrics-reader binding is refused")
		pods := managerPods(ctx, c)
		Expect(pods).NotTo(BeEmpty())
		podAddr := net.JoinHostPort(pods[0].Status.PodIP, "8443")
		unbound := scraperToken(ctx, c, ns, "unbound", false)
		Eventually(func(g Gomega) {
			st, err := scrapeStatus(ctx, podAddr, unbound)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st).To(Equal(http.StatusForbidden))
		}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		token := scraperToken(ctx, c, ns, "prometheus", true)
		// The binding reaches the manager's SubjectAccessReviews once the API server's RBAC
		// cache has it: wait for that rather than for a fixed time.
		Eventually(func(g Gomega) {
			st, err := scrapeStatus(ctx, podAddr, token)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st).To(Equal(http.StatusOK))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		By("bringing up a PostgreSQL adapter on a host server")
		pg, conn := startStoppable(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=")
		Expect(c.Create(ctx, connectionSecret(ctx, ns, "pg", "pgprom", conn))).To(Succeed())
		Expect(c.Create(ctx, networkedAdapter(ns, "pgprom", memoryv1alpha1.BackendPostgres, "postgres", "immediate"))).To(Succeed())
		waitAvailable(ctx, ns, "pgprom")
		tl := newTimeline("prometheus")
		tl.mark("pgprom Available")

		By("starting Prometheus on the host with the shipped rules (MemoryAdapterUnavailable for: " + unavailableFor + ")")
		dir, err := os.MkdirTemp("", "mao-e2e-prometheus-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = os.RemoveAll(dir) })
		Expect(os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600)).To(Succeed())
		Expect(metricsTargets(ctx, filepath.Join(dir, "targets.json"))).To(Equal(len(managerPods(ctx, c))), "one target per manager pod")
		Expect(adapterTargets(ctx, c, ns, "pgprom", filepath.Join(dir, "adapters.json"))).To(Equal(1), "one target per adapter pod")
		cfg := fmt.Sprintf(`global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files:
- %s
scrape_configs:
- job_name: memory-adapter-operator
  scheme: https
  authorization:
    credentials_file: %s
  tls_config:
    insecure_skip_verify: true
  file_sd_configs:
  - files: [%s]
- job_name: memory-adapters
  scheme: http
  file_sd_configs:
  - files: [%s]
`, testRules(dir), filepath.Join(dir, "token"), filepath.Join(dir, "targets.json"), filepath.Join(dir, "adapters.json"))
		Expect(os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600)).To(Succeed())
		out, err := exec.CommandContext(ctx, filepath.Join(promBin, "promtool"), "check", "config", filepath.Join(dir, "prometheus.yml")).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "promtool check config:\n%s", out)
		port := freePort()
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
		Expect(err).NotTo(HaveOccurred())
		prom := exec.Command(filepath.Join(promBin, "prometheus"),
			"--config.file="+filepath.Join(dir, "prometheus.yml"),
			"--storage.tsdb.path="+filepath.Join(dir, "data"),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
		prom.Stdout, prom.Stderr = logFile, logFile
		Expect(prom.Start()).To(Succeed())
		DeferCleanup(func() {
			_ = prom.Process.Kill()
			_ = prom.Wait()
			_ = logFile.Close()
			if CurrentSpecReport().Failed() {
				fmt.Fprintf(GinkgoWriter, "--- prometheus log tail:\n%s\n", tailFile(logFile.Name(), 40))
			}
		})
		Eventually(func(g Gomega) { httpGet(g, base+"/-/ready") }).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		tl.mark("Prometheus ready on %s", base)

		By("waiting until every manager pod is a healthy target and the adapter's Available series is scraped")
		Eventually(func(g Gomega) {
			var data struct {
				ActiveTargets []struct {
					Labels    map[string]string `json:"labels"`
					Health    string            `json:"health"`
					LastError string            `json:"lastError"`
				} `json:"activeTargets"`
			}
			promGet(g, base, "/api/v1/targets?state=active", &data)
			jobs := map[string]int{}
			for _, t := range data.ActiveTargets {
				g.Expect(t.Health).To(Equal("up"), "target %s: %s", t.Labels["pod"], t.LastError)
				jobs[t.Labels["job"]]++
			}
			g.Expect(jobs).To(Equal(map[string]int{"memory-adapter-operator": len(managerPods(ctx, c)), "memory-adapters": 1}))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		query := func(g Gomega, q string) []map[string]any {
			var data struct {
				Result []map[string]any `json:"result"`
			}
			promGet(g, base, "/api/v1/query?query="+url.QueryEscape(q), &data)
			return data.Result
		}
		Eventually(func(g Gomega) {
			g.Expect(query(g, fmt.Sprintf(`memory_adapter_operator_adapter_condition{namespace=%q,name="pgprom",condition="Available",status="True",reason="AdapterAvailable"}`, ns))).NotTo(BeEmpty())
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		// Every replica exports the condition series, the standby from its own cache too.
		Eventually(func(g Gomega) {
			g.Expect(query(g, fmt.Sprintf(`count by (pod) (memory_adapter_operator_adapter_condition{namespace=%q,name="pgprom",condition="Available"})`, ns))).To(HaveLen(len(managerPods(ctx, c))))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		tl.mark("every manager pod scraped (up) and exporting pgprom's Available=True series")

		By("scraping the adapter's metrics port: calls (the manager's evidence reads, a refused call) and evidence")
		adapterMA := &memoryv1alpha1.MemoryAdapter{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pgprom"}, adapterMA)).To(Succeed())
		adapterAddr, _ := adapterAddrs(ctx, c, ns, "pgprom")
		// A call without a token: its 401 is a typed problem, so the errors series exists.
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // no secret is sent; only the status is read
		resp, err := hc.Get(render.URLScheme(adapterMA) + "://" + adapterAddr + "/v1/manifest")
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
		Eventually(func(g Gomega) {
			g.Expect(query(g, fmt.Sprintf(`memory_adapter_requests_total{namespace=%q,adapter="pgprom",route="getEvidence",code="200"}`, ns))).NotTo(BeEmpty())
			g.Expect(query(g, fmt.Sprintf(`memory_adapter_errors_total{namespace=%q,adapter="pgprom"}`, ns))).NotTo(BeEmpty())
			g.Expect(query(g, fmt.Sprintf(`memory_adapter_manifest_valid{namespace=%q,adapter="pgprom"} == 1`, ns))).NotTo(BeEmpty())
			g.Expect(query(g, fmt.Sprintf(`time() - memory_adapter_evidence_timestamp_seconds{namespace=%q,adapter="pgprom"} < 60`, ns))).NotTo(BeEmpty())
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		tl.mark("adapter pgprom scraped on its metrics port: calls, errors, manifest valid, fresh evidence")

		By("checking every query of the shipped dashboard against the scraped series")
		var names []string
		promGet(Default, base, "/api/v1/label/__name__/values", &names)
		for _, q := range dashboardQueries() {
			var data struct {
				Result []map[string]any `json:"result"`
			}
			promGet(Default, base, "/api/v1/query?query="+url.QueryEscape(q), &data)
			used := seriesNames(q)
			Expect(used).NotTo(BeEmpty(), "dashboard query %q reads none of the operator's series", q)
			for _, n := range used {
				Expect(names).To(ContainElement(n), "dashboard query %q reads %s, which neither the manager nor the adapter exported", q, n)
			}
		}
		Expect(unavailableAlert(Default, base, ns, "pgprom")).To(BeNil())

		By("stopping the PostgreSQL server")
		pg.do(ctx, "stop")
		tl.mark("server stopped")
		var pending *promAlert
		Eventually(func(g Gomega) {
			pending = unavailableAlert(g, base, ns, "pgprom")
			g.Expect(pending).NotTo(BeNil())
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		a := condition(ctx, c, ns, "pgprom", memoryv1alpha1.ConditionAvailable)
		tl.mark("alert %s (active since %s); Available=%s %s", pending.State, pending.ActiveAt.UTC().Format("15:04:05"), a.Status, a.Reason)
		var firing *promAlert
		Eventually(func(g Gomega) {
			firing = unavailableAlert(g, base, ns, "pgprom")
			g.Expect(firing).NotTo(BeNil(), "the alert ended before it fired")
			g.Expect(firing.State).To(Equal("firing"))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		fired := tl.mark("alert firing: %v", firing.Labels)
		// One episode however the reason moved: the alert kept the activeAt it started with,
		// and fired no earlier than its `for:` after it.
		Expect(firing.ActiveAt).To(BeTemporally("~", pending.ActiveAt, time.Second))
		forDur, err := time.ParseDuration(unavailableFor)
		Expect(err).NotTo(HaveOccurred())
		Expect(fired.Sub(firing.ActiveAt)).To(BeNumerically(">=", forDur))
		Expect(firing.Labels).To(Equal(map[string]string{
			"alertname": "MemoryAdapterUnavailable", "namespace": ns, "name": "pgprom", "severity": "warning",
		}))
		// The adapter saw the outage too: its probes failed and its own evidence went invalid.
		Eventually(func(g Gomega) {
			g.Expect(query(g, fmt.Sprintf(`memory_adapter_probe_failures_total{namespace=%q,adapter="pgprom"} > 0`, ns))).NotTo(BeEmpty())
			g.Expect(query(g, fmt.Sprintf(`memory_adapter_manifest_valid{namespace=%q,adapter="pgprom"} == 0`, ns))).NotTo(BeEmpty())
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		By("resuming the server on the same port")
		pg.do(ctx, "resume")
		tl.mark("server resumed")
		waitAvailable(ctx, ns, "pgprom")
		tl.mark("Available=True")
		Eventually(func(g Gomega) {
			g.Expect(unavailableAlert(g, base, ns, "pgprom")).To(BeNil())
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		tl.mark("alert resolved (gone from /api/v1/alerts)")
	}, SpecTimeout(20*time.Minute))
})
