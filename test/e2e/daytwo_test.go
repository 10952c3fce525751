//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// Day two (issue 28): what a platform engineer reads in status when something they can fix
// goes wrong, and that status stays true across a manager restart.

// describeConditions is one line per condition, for failure messages and timelines.
func describeConditions(conds []metav1.Condition) string {
	parts := make([]string, 0, len(conds))
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, " | ")
}

var _ = Describe("day two: status explains failures and stays true", func() {
	var (
		c  client.Client
		ns string
	)
	AfterEach(func() { printDiagnostics(ns, operatorNamespace) })

	// Each in a namespace of its own, beside any other spec.
	Describe("beside other specs", func() {
		namespacePerSpec("daytwo-", &c, &ns)

		It("the TLS-mismatch PostgreSQL adapter's Deployed message names the TLS error", func(ctx SpecContext) {
			_, conn := startStoppable(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=")
			secret := connectionSecret(ctx, ns, "pgtls-db", "pgtls", conn)
			// Read before Create, which replaces the object with the stored one (data, not stringData).
			dsn := secret.StringData["dsn"]
			Expect(c.Create(ctx, secret)).To(Succeed())
			ma := networkedAdapter(ns, "pgtls", memoryv1alpha1.BackendPostgres, "postgres", "immediate")
			ma.Spec.Backend.Postgres = &memoryv1alpha1.PostgresOptions{SSLMode: "require"}
			Expect(c.Create(ctx, ma)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
			tl := newTimeline("tls-mismatch")
			tl.mark("pgtls created with sslMode require against a server without TLS")

			u, err := url.Parse(dsn)
			Expect(err).NotTo(HaveOccurred())
			password, ok := u.User.Password()
			Expect(ok).To(BeTrue(), "the throwaway server's DSN has a password")
			Expect(password).NotTo(BeEmpty())

			var d metav1.Condition
			Eventually(func(g Gomega) {
				d = condition(ctx, c, ns, "pgtls", memoryv1alpha1.ConditionDeployed)
				g.Expect(d.Status).To(Equal(metav1.ConditionFalse), "Deployed %s: %s", d.Reason, d.Message)
				// A crash loop is its own reason, with the same text through every restart.
				g.Expect(d.Reason).To(Equal(memoryv1alpha1.ReasonAdapterCrashLooping), d.Message)
				g.Expect(d.Message).To(ContainSubstring("keeps exiting"))
				g.Expect(d.Message).To(ContainSubstring("it last exited 1 (Error)"))
				// pgx's words for a server that answers the SSLRequest with N.
				g.Expect(d.Message).To(ContainSubstring("server refused TLS connection"))
			}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
			tl.mark("Deployed=False %s: %s", d.Reason, d.Message)
			Expect(d.Message).NotTo(ContainSubstring(password), "the message carries the password")
			Expect(d.Message).NotTo(ContainSubstring(dsn), "the message carries the DSN")
			a := condition(ctx, c, ns, "pgtls", memoryv1alpha1.ConditionAvailable)
			Expect(a.Status).To(Equal(metav1.ConditionFalse))
			Expect(a.Message).To(ContainSubstring("server refused TLS connection"), "Available quotes Deployed")
			Expect(a.Message).NotTo(ContainSubstring(password))
			tl.mark("Available=False %s", a.Reason)
			// kstatus and Argo CD read Stalled: a person must fix the spec or the server.
			Expect(condition(ctx, c, ns, "pgtls", memoryv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionTrue))
			Expect(condition(ctx, c, ns, "pgtls", memoryv1alpha1.ConditionReady).Reason).To(Equal(memoryv1alpha1.ReasonAdapterCrashLooping))
		}, SpecTimeout(10*time.Minute))

		It("a manifest mismatch names the field", func(ctx SpecContext) {
			// The External sample, its server started with one filter fewer than spec.manifest
			// claims: the server publishes supported_filters ["branch_id"].
			b, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", "memory_v1alpha1_memoryadapter_external.yaml"))
			Expect(err).NotTo(HaveOccurred())
			ma := &memoryv1alpha1.MemoryAdapter{}
			Expect(yaml.Unmarshal(b, ma)).To(Succeed())
			ma.Name, ma.Namespace = "mismatch", ns
			Expect(ma.Spec.Manifest.SupportedFilters).To(Equal([]memoryv1alpha1.FilterKey{"branch_id", "source"}))
			narrow := func(args []string) []string {
				GinkgoHelper()
				out := make([]string, len(args))
				n := 0
				for i, a := range args {
					if a == "--supported-filters=branch_id,source" {
						a = "--supported-filters=branch_id"
						n++
					}
					out[i] = a
				}
				Expect(n).To(Equal(1), "the sample's args set --supported-filters once: %v", args)
				return out
			}
			ma.Spec.Backend.External.Args = narrow(ma.Spec.Backend.External.Args)
			ma.Spec.Backend.External.HarnessArgs = narrow(ma.Spec.Backend.External.HarnessArgs)
			Expect(c.Create(ctx, ma)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
			tl := newTimeline("manifest-mismatch")
			tl.mark("mismatch created: spec.manifest supportedFilters [branch_id, source], the server serves [branch_id]")

			const differs = `supported_filters: ["branch_id"], expected ["branch_id","source"]`
			var conf metav1.Condition
			Eventually(func(g Gomega) {
				conf = condition(ctx, c, ns, "mismatch", memoryv1alpha1.ConditionConformant)
				g.Expect(conf.Status).To(Equal(metav1.ConditionFalse), "Conformant %s: %s", conf.Reason, conf.Message)
				g.Expect(conf.Message).To(ContainSubstring(differs))
			}).WithTimeout(availableDeadline).WithPolling(time.Second).Should(Succeed())
			tl.mark("Conformant=False %s: %s", conf.Reason, conf.Message)
			// Healthy reads the served manifest's hash from the evidence, and names the fields the
			// run found; Available, which puts evidence first, says the same, as kubectl get -o wide
			// shows it.
			Eventually(func(g Gomega) {
				got := &memoryv1alpha1.MemoryAdapter{}
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), got)).To(Succeed())
				g.Expect(got.Status.Conformance).NotTo(BeNil())
				g.Expect(got.Status.Conformance.Message).To(ContainSubstring(differs), "the recorded run says which field differs")
				h := meta.FindStatusCondition(got.Status.Conditions, memoryv1alpha1.ConditionHealthy)
				g.Expect(h).NotTo(BeNil())
				g.Expect(h.Reason).To(Equal(memoryv1alpha1.ReasonManifestMismatch), "Healthy: %s", h.Message)
				g.Expect(h.Message).To(HaveSuffix("found it differs in "+differs), "Healthy ends with the differing fields")
				a := meta.FindStatusCondition(got.Status.Conditions, memoryv1alpha1.ConditionAvailable)
				g.Expect(a).NotTo(BeNil())
				g.Expect(a.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(a.Message).To(ContainSubstring(differs))
				tl.mark("Healthy=%s %s: %s", h.Status, h.Reason, h.Message)
				tl.mark("Available=%s %s: %s", a.Status, a.Reason, a.Message)
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		}, SpecTimeout(15*time.Minute))

		It("serves adapters over TLS: the binding's ca.crt verifies them, and a renewal drops no call", longSpec, func(ctx SpecContext) {
			tlsRenewalSpec(ctx, c, ns)
		}, SpecTimeout(12*time.Minute))

		It("rotates an adapter's token: the bound agent follows its projected binding, the old token works through the grace period only, no pod restarts", longSpec, func(ctx SpecContext) {
			tokenRotationSpec(ctx, c, ns)
		}, SpecTimeout(10*time.Minute))

		It("governs a scope: stores past the quota get 507 quota_exceeded and lose nothing acknowledged; retention removes every item within its age and one sweep, never before", longSpec, func(ctx SpecContext) {
			governanceSpec(ctx, c, ns)
		}, SpecTimeout(10*time.Minute))

		It("gives each ServiceAccount its own binding: a read-only one is refused every store with 403, sub-scopes see only their own items, an unlisted ServiceAccount stays gated", func(ctx SpecContext) {
			accessSpec(ctx, c, ns)
		}, SpecTimeout(10*time.Minute))
	})

})

// managerRestartSpec deletes every manager pod at once while the server pg of the PostgreSQL
// adapter pgrestart is down and a conformance rerun of sqlite-memory is under way (both
// adapters made by the caller in ns): no reading
// of the adapter's conditions is false across the restart, the new leader starts no second
// Job for the rerun and records it, and no outage is taken for a new version to verify.
func managerRestartSpec(ctx SpecContext, c client.Client, ns string, pg hostServer) {
	ma := &memoryv1alpha1.MemoryAdapter{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pgrestart"}, ma)).To(Succeed())
	// Gone with the spec, so the failover spec after it watches only adapters it keeps steady.
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
	waitAvailable(ctx, ns, "pgrestart")
	Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
	run := ma.Status.Conformance.JobName
	Expect(jobsOf(ctx, c, ns, "pgrestart")).To(HaveLen(1))
	tl := newTimeline("restart-during-outage")
	tl.mark("pgrestart Available, verified by job %s", run)

	evidenceReasons := []string{memoryv1alpha1.ReasonEvidenceInvalidatesManifest, memoryv1alpha1.ReasonCapabilityProbeFailed}
	// outageTruth is what must hold at every reading during the outage: deployed, the
	// recorded run passing, and Available False on the evidence's reason.
	outageTruth := func(conds []metav1.Condition) string {
		d := meta.FindStatusCondition(conds, memoryv1alpha1.ConditionDeployed)
		if d == nil || d.Status != metav1.ConditionTrue {
			return "Deployed not True: " + describeConditions(conds)
		}
		cf := meta.FindStatusCondition(conds, memoryv1alpha1.ConditionConformant)
		if cf == nil || cf.Status != metav1.ConditionTrue || !strings.Contains(cf.Message, "job "+run+" passed") {
			return "Conformant not True on job " + run + ": " + describeConditions(conds)
		}
		a := meta.FindStatusCondition(conds, memoryv1alpha1.ConditionAvailable)
		h := meta.FindStatusCondition(conds, memoryv1alpha1.ConditionHealthy)
		if a == nil || h == nil || a.Status != metav1.ConditionFalse || h.Status != metav1.ConditionFalse ||
			!slices.Contains(evidenceReasons, a.Reason) || a.Reason != h.Reason {
			return "Available not False on the evidence: " + describeConditions(conds)
		}
		return ""
	}

	By("stopping the PostgreSQL server")
	pg.do(ctx, "stop")
	tl.mark("server stopped")
	Eventually(func(g Gomega) {
		ma := &memoryv1alpha1.MemoryAdapter{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pgrestart"}, ma)).To(Succeed())
		g.Expect(outageTruth(ma.Status.Conditions)).To(BeEmpty())
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	a := condition(ctx, c, ns, "pgrestart", memoryv1alpha1.ConditionAvailable)
	tl.mark("Available=False %s: %s", a.Reason, a.Message)

	By("a rerun under way on sqlite-memory as well")
	newJobs := jobsSince(ctx, c, ns, "sqlite-memory")
	kubectl(ctx, "annotate", "-n", ns, "madp/sqlite-memory", "memory.agentmem.io/rerun-conformance=manager-restart", "--overwrite")
	Eventually(newJobs).WithTimeout(time.Minute).Should(HaveLen(1))
	tl.mark("rerun Job %v started on sqlite-memory", newJobs())

	By("deleting both manager pods while the server is down and the rerun runs")
	watch := watchConditions(ctx, c, ns, []string{"pgrestart"}, time.Second, outageTruth)
	old := map[string]bool{}
	for _, p := range managerPods(ctx, c) {
		old[p.Name] = true
	}
	Expect(old).To(HaveLen(2), "two manager replicas")
	kubectl(ctx, "delete", "pod", "-n", operatorNamespace, "-l", "control-plane=controller-manager", "--wait=false")
	deleted := tl.mark("manager pods %v deleted", slices.Sorted(maps.Keys(old)))
	var holder string
	Eventually(func(g Gomega) {
		holder = leaseHolder(ctx, c)
		g.Expect(holder).NotTo(BeEmpty())
		g.Expect(old).NotTo(HaveKey(holder), "the Lease is still held by a deleted pod")
	}).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	acquired := tl.mark("Lease held by the new pod %s", holder)
	// An adapter created now is written only by the new leader: when its conditions
	// appear, the new leader has reconciled (and the watch has read pgrestart throughout).
	probe := networkedAdapter(ns, "restart-probe", memoryv1alpha1.BackendPostgres, "postgres", "immediate")
	Expect(c.Create(ctx, probe)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, probe) })
	Eventually(func(g Gomega) {
		got := &memoryv1alpha1.MemoryAdapter{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(probe), got)).To(Succeed())
		g.Expect(got.Status.Conditions).NotTo(BeEmpty())
	}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	wrote := tl.mark("the new leader wrote status (lease +%.1fs)", time.Since(acquired).Seconds())
	Eventually(func(g Gomega) {
		pods := managerPods(ctx, c)
		g.Expect(pods).To(HaveLen(2))
		for _, p := range pods {
			g.Expect(old).NotTo(HaveKey(p.Name))
			g.Expect(podReady(p)).To(BeTrue(), "manager pod %s is not Ready", p.Name)
		}
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
	tl.mark("both new manager pods Ready (+%.1fs after the deletion)", time.Since(deleted).Seconds())
	// Long enough for the new leader's prober to read the evidence again (health period
	// 3 s, failure threshold 2) and write what it found, and for it to have started a second
	// Job for the rerun if it were going to.
	Consistently(func(g Gomega) {
		ma := &memoryv1alpha1.MemoryAdapter{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pgrestart"}, ma)).To(Succeed())
		g.Expect(outageTruth(ma.Status.Conditions)).To(BeEmpty())
		g.Expect(newJobs()).To(HaveLen(1), "no duplicate Job for the rerun")
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	bad, reads := watch.result()
	tl.mark("%d readings of pgrestart from the deletion to %.1fs after the new leader's first write, %d not true", reads, time.Since(wrote).Seconds(), len(bad))
	Expect(bad).To(BeEmpty(), "a reading showed a false state across the restart")
	Expect(reads).To(BeNumerically(">", 10))
	Expect(condition(ctx, c, ns, "pgrestart", memoryv1alpha1.ConditionAvailable).Reason).To(BeElementOf(evidenceReasons))

	By("the new leader finishes the rerun it inherited, without a second Job")
	Eventually(func(g Gomega) {
		ma := &memoryv1alpha1.MemoryAdapter{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sqlite-memory"}, ma)).To(Succeed())
		g.Expect(ma.Status.Conformance.RerunToken).To(Equal("manager-restart"))
	}).WithTimeout(availableDeadline).WithPolling(2 * time.Second).Should(Succeed())
	waitAvailable(ctx, ns, "sqlite-memory")
	Expect(newJobs()).To(HaveLen(1), "no duplicate Job")
	tl.mark("sqlite-memory Available on the inherited rerun")

	By("resuming the server: Available again, with no new run")
	pg.do(ctx, "resume")
	tl.mark("server resumed")
	waitAvailable(ctx, ns, "pgrestart")
	tl.mark("Available=True")
	Expect(jobsOf(ctx, c, ns, "pgrestart")).To(HaveLen(1), "a restart during an outage is no new version to verify")
	Expect(c.Get(ctx, client.ObjectKeyFromObject(ma), ma)).To(Succeed())
	Expect(ma.Status.Conformance.JobName).To(Equal(run))
}
