package memoryadapter

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	// The spec opens the adapter's SQLite file itself to plant the fault.
	_ "modernc.org/sqlite"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// The evidence path does not depend on readiness: a real `memory-adapter serve` plays the
// adapter pod, listening at the pod's own address (a loopback address of its own, on the
// adapter port), and the controller reads it there, never through the Service. A trigger
// on SQLite's write-probe table makes the backend refuse writes for real, and the pod is
// marked not ready, as a kubelet would after a failed readiness probe.
var _ = Describe("evidence read at each pod's address", Ordered, func() {
	var (
		ctx  = context.Background()
		key  types.NamespacedName
		dir  string
		serv *exec.Cmd
		ip   string
	)
	BeforeAll(func() {
		stop := startManager()
		DeferCleanup(stop)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "perpod-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		key = types.NamespacedName{Namespace: ns.Name, Name: "perpod"}
		dir = GinkgoT().TempDir()
		// A loopback address of this spec's own: the adapter port is fixed, and other
		// suites on the machine may listen on it at 127.0.0.1.
		ip = fmt.Sprintf("127.%d.%d.%d", 10+rand.IntN(200), rand.IntN(250), 2+rand.IntN(250))
	})
	AfterAll(func() {
		if serv != nil && serv.Process != nil {
			_ = serv.Process.Kill()
			_ = serv.Wait()
		}
	})

	It("names the evidence in Available while the invalid pod is not ready", func() {
		ma := sqliteAdapter(key.Namespace, key.Name)
		ma.Labels = map[string]string{perPodEvidence: "true"}
		// The local server stands in for the pod in plain HTTP (the e2e suite reads real pods
		// over TLS); this is also the opted-out configuration, which status must name.
		ma.Spec.TLS = &memoryv1alpha1.TLSSpec{Mode: memoryv1alpha1.TLSDisabled}
		Expect(k8sClient.Create(ctx, ma)).To(Succeed())

		By("serving the adapter at the pod's address with the token the operator derived")
		binding := &corev1.Secret{}
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-binding"}, binding)
		}, timeout, poll).Should(Succeed())
		tokenFile := filepath.Join(dir, "token")
		Expect(os.WriteFile(tokenFile, binding.Data["token"], 0o600)).To(Succeed())
		dbPath := filepath.Join(dir, "perpod.db")
		serv = exec.Command(adapterBin, "serve", "--backend", "sqlite", "--sqlite-path", dbPath,
			"--adapter-id", "sqlite", "--supported-filters=branch_id,source", "--scope", "agents",
			"--listen", fmt.Sprintf("%s:%d", ip, render.AdapterPort), "--token-file", tokenFile, "--probe-period", "300ms")
		serv.Stdout, serv.Stderr = GinkgoWriter, GinkgoWriter
		Expect(serv.Start()).To(Succeed())
		podURL := fmt.Sprintf("http://%s:%d", ip, render.AdapterPort)
		Eventually(func() (int, error) {
			resp, err := http.Get(podURL + "/healthz")
			if err != nil {
				return 0, err
			}
			_ = resp.Body.Close()
			return resp.StatusCode, nil
		}, timeout, poll).Should(Equal(http.StatusOK))

		By("playing the kubelet: a running, ready pod at that address, and the Deployment available")
		dep := &appsv1.Deployment{}
		Eventually(func() error { return k8sClient.Get(ctx, key, dep) }, timeout, poll).Should(Succeed())
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-pod-0", Labels: dep.Spec.Template.Labels},
			Spec: *dep.Spec.Template.Spec.DeepCopy()}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		setPodReady(ctx, pod, ip, true)
		markAvailable(ctx, key)

		By("verifying it with a real conformance run against the same server")
		job := waitForNewJob(ctx, key)
		finishJob(ctx, job, realReportAgainst(ctx, key, podURL, tokenFile), true)
		Eventually(func(g Gomega) {
			got := getMA(key)
			g.Expect(conditionOf(got, memoryv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue), "%+v", got.Status.Conditions)
			g.Expect(conditionOf(got, memoryv1alpha1.ConditionHealthy).Message).To(ContainSubstring("probes passed"))
			g.Expect(got.Status.TLS).NotTo(BeNil())
			g.Expect(got.Status.TLS.Mode).To(Equal(memoryv1alpha1.TLSDisabled), "status says the endpoint is plain HTTP")
		}, timeout, poll).Should(Succeed())
		Expect(string(binding.Data["url"])).To(HavePrefix("http://"))
		Expect(binding.Data).NotTo(HaveKey("ca.crt"))

		By("making SQLite refuse the write probe's row, and the pod not ready with 0 of 1 available")
		// The server writes its probe row every second: wait out its lock instead of failing
		// with SQLITE_BUSY.
		db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(10000)")
		Expect(err).NotTo(HaveOccurred())
		_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS memory_write_probe (scope TEXT PRIMARY KEY, token TEXT NOT NULL);
			CREATE TRIGGER refuse_writes BEFORE INSERT ON memory_write_probe BEGIN SELECT RAISE(ABORT, 'writes refused by the spec'); END;`)
		Expect(err).NotTo(HaveOccurred())
		Expect(db.Close()).To(Succeed())
		setPodReady(ctx, pod, ip, false)
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, d)).To(Succeed())
			d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UnavailableReplicas = 0, 0, 1
			g.Expect(k8sClient.Status().Update(ctx, d)).To(Succeed())
		}, timeout, poll).Should(Succeed())

		By("Available names the failed write probe, not the Deployment, for as long as it lasts")
		evidenceReason := func(g Gomega) {
			got := getMA(key)
			a := conditionOf(got, memoryv1alpha1.ConditionAvailable)
			g.Expect(a.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(a.Reason).To(BeElementOf(memoryv1alpha1.ReasonCapabilityProbeFailed, memoryv1alpha1.ReasonEvidenceInvalidatesManifest), a.Message)
			g.Expect(a.Message).To(ContainSubstring("write"))
			g.Expect(conditionOf(got, memoryv1alpha1.ConditionDeployed).Reason).To(Equal(memoryv1alpha1.ReasonDeploymentProgressing))
			g.Expect(got.Status.Evidence).NotTo(BeNil())
			g.Expect(got.Status.Evidence.FailedProbes).To(ContainElement("write"))
		}
		Eventually(evidenceReason, timeout, poll).Should(Succeed())
		Consistently(evidenceReason, 3*time.Second, 200*time.Millisecond).Should(Succeed())

		By("the trigger gone, the same pod's evidence upholds the manifest again")
		db, err = sql.Open("sqlite", dbPath)
		Expect(err).NotTo(HaveOccurred())
		_, err = db.ExecContext(ctx, `DROP TRIGGER refuse_writes`)
		Expect(err).NotTo(HaveOccurred())
		Expect(db.Close()).To(Succeed())
		setPodReady(ctx, pod, ip, true)
		markAvailable(ctx, key)
		Eventually(func(g Gomega) {
			got := getMA(key)
			g.Expect(conditionOf(got, memoryv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue), "%+v", got.Status.Conditions)
		}, timeout, poll).Should(Succeed())
		Expect(conformanceJobs(ctx, key)).To(HaveLen(1), "a write outage is not a new version to verify")
	})
})

// setPodReady sets the pod's status as a kubelet would: running at ip, ready or not.
func setPodReady(ctx context.Context, pod *corev1.Pod, ip string, ready bool) {
	GinkgoHelper()
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	Eventually(func(g Gomega) {
		p := &corev1.Pod{}
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, p)).To(Succeed())
		p.Status.Phase, p.Status.PodIP, p.Status.PodIPs = corev1.PodRunning, ip, []corev1.PodIP{{IP: ip}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.Now()}}
		g.Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())
	}, timeout, poll).Should(Succeed())
}
