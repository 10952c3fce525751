//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// previousBuild is the build the upgrade spec starts from: until a second release exists, the
// last commit of session 34 (issue 42's first items), built in a worktree with its own
// go.mod and installer. Its binaries report adapter version "prev", so the upgrade changes
// the adapter version every run is keyed on.
const previousBuild = "4bd5ddb"

// upgradeLabel selects the upgrade stage (make test-e2e-upgrade): opt-in, outside make ci.
const upgradeLabel = "upgrade"

// availabilityWatch polls adapters and records every moment one was Available for an
// adapter version that no passing run in its status verified.
type availabilityWatch struct {
	mu         sync.Mutex
	violations []string
	stop       func()
}

func watchAvailability(ctx context.Context, c client.Client, ns string, names []string) *availabilityWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &availabilityWatch{}
	done := make(chan struct{})
	w.stop = func() { cancel(); <-done }
	go func() {
		defer GinkgoRecover()
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, n := range names {
				ma := &memoryv1alpha1.MemoryAdapter{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, ma); err != nil {
					continue
				}
				a := meta.FindStatusCondition(ma.Status.Conditions, memoryv1alpha1.ConditionAvailable)
				if a == nil || a.Status != metav1.ConditionTrue {
					continue
				}
				run := ma.Status.Conformance
				if run == nil || run.Failed != 0 || run.AdapterVersion != ma.Status.AdapterVersion || run.ServiceVersion != ma.Status.ServiceVersion {
					w.mu.Lock()
					w.violations = append(w.violations, fmt.Sprintf("%s %s Available for adapter %q service %q; last run %+v",
						time.Now().Format("15:04:05.000"), n, ma.Status.AdapterVersion, ma.Status.ServiceVersion, run))
					w.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

var _ = Describe("upgrading from the previous build", Label(upgradeLabel), Ordered, func() {
	It("brings SQLite, PostgreSQL and Redis adapters and a gated agent through the upgrade: one run per new adapter version, never Available unverified, nothing lost", func(ctx SpecContext) {
		tl := newTimeline("upgrade")
		By("building the previous build (" + previousBuild + ") in a worktree, its images tagged :prev")
		wt := filepath.Join(GinkgoT().TempDir(), "prev")
		_, err := run(ctx, "git", "worktree", "add", "--detach", wt, previousBuild)
		Expect(err).NotTo(HaveOccurred(), "git worktree add")
		DeferCleanup(func(ctx SpecContext) { _, _ = run(ctx, "git", "worktree", "remove", "--force", wt) })
		prevManager := strings.Replace(managerImage, ":dev", ":prev", 1)
		prevAdapter := strings.Replace(adapterImage, ":dev", ":prev", 1)
		images := exec.CommandContext(ctx, filepath.Join(clusterDir, "tools", "images"),
			"-out", filepath.Join(clusterDir, "images-prev"), "-load", containerdSockets(ctx), "-version", "prev",
			prevAdapter+"=./cmd/memory-adapter:/memory-adapter", prevManager+"=./cmd:/manager")
		images.Dir = wt
		images.Stdout, images.Stderr = GinkgoWriter, GinkgoWriter
		Expect(images.Run()).To(Succeed(), "building the previous images")
		tl.mark("previous images built and loaded")

		By("installing the previous build's installer")
		kubectlPath, err := exec.LookPath("kubectl")
		Expect(err).NotTo(HaveOccurred())
		render := exec.CommandContext(ctx, "hack/render-install.sh", prevManager)
		render.Dir = wt
		render.Env = append(os.Environ(), "MAO_KUBECTL="+kubectlPath, "ADAPTER_IMG="+prevAdapter)
		rendered, err := render.Output()
		Expect(err).NotTo(HaveOccurred(), "the previous build's hack/render-install.sh")
		apply := exec.CommandContext(ctx, kubectlPath, "apply", "--server-side", "--force-conflicts", "-f", "-")
		apply.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(clusterDir, "admin.kubeconfig"))
		apply.Stdin = strings.NewReader(string(rendered))
		apply.Stdout, apply.Stderr = GinkgoWriter, GinkgoWriter
		Expect(apply.Run()).To(Succeed(), "applying the previous installer")
		kubectl(ctx, "wait", "--for=condition=Established", "crd/memoryadapters.memory.agentmem.io", "--timeout=2m")
		kubectl(ctx, "rollout", "status", "-n", operatorNamespace, "deployment/"+managerDeployment, "--timeout=5m")
		tl.mark("previous operator running")

		By("bringing up SQLite, PostgreSQL and Redis adapters and an agent under the previous operator")
		c, ns := adapterNamespace(ctx, "upgrade-")
		DeferCleanup(func(ctx SpecContext) { deleteAdapterNamespace(ctx, c, ns) })
		kubectl(ctx, "apply", "-n", ns, "-f", "config/samples/memory_v1alpha1_memoryadapter_sqlite.yaml")
		_, pgConn := startStoppable(ctx, "postgres-server.sh", "MAO_TEST_POSTGRES_LISTEN_URL=")
		Expect(c.Create(ctx, connectionSecret(ctx, ns, "pg", "pgup", pgConn))).To(Succeed())
		Expect(c.Create(ctx, networkedAdapter(ns, "pgup", memoryv1alpha1.BackendPostgres, "postgres", "immediate"))).To(Succeed())
		_, redisConn := startStoppable(ctx, "redis-server.sh", "MAO_TEST_REDIS_LISTEN_URL=")
		Expect(c.Create(ctx, connectionSecret(ctx, ns, "redis", "redisup", redisConn))).To(Succeed())
		Expect(c.Create(ctx, networkedAdapter(ns, "redisup", memoryv1alpha1.BackendRedis, "redis", "eventual"))).To(Succeed())
		names := []string{"sqlite-memory", "pgup", "redisup"}
		runsBefore := map[string]string{}
		for _, n := range names {
			waitAvailable(ctx, ns, n)
			ma := &memoryv1alpha1.MemoryAdapter{}
			Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, ma)).To(Succeed())
			Expect(ma.Status.AdapterVersion).To(Equal("prev"), "%s runs the previous build", n)
			Expect(ma.Status.Conformance).NotTo(BeNil())
			runsBefore[n] = ma.Status.Conformance.JobName
		}
		tl.mark("three adapters Available under the previous operator (adapter version prev)")
		// An agent on PostgreSQL, which rolls with maxUnavailable 0: every call must succeed or
		// get the typed 503. One on SQLite, which rolls by Recreate (one writer per file) and so
		// has a documented gap: its calls may fail only until it is Available again.
		agent := startWatchingAgent(ctx, c, ns, "pgup")
		sqliteAgent := startWatchingAgent(ctx, c, ns, "sqlite-memory")
		stored := map[string][]uuid.UUID{}
		for _, n := range names {
			st := adapterStore(ctx, c, ns, n)
			for i := range 5 {
				it := memory.NewItem(json.RawMessage(fmt.Sprintf(`"kept through the upgrade %d"`, i)))
				id, err := st.Store(ctx, it)
				Expect(err).NotTo(HaveOccurred(), "storing into %s", n)
				stored[n] = append(stored[n], id)
			}
		}
		tl.mark("5 items stored in each adapter; agents %s and %s storing and reading every period", agent, sqliteAgent)

		By("upgrading to this build with make deploy")
		watch := watchAvailability(ctx, c, ns, names)
		upgradeAt := tl.mark("make deploy (this build) started")
		makeTarget(ctx, "deploy")
		kubectl(ctx, "rollout", "status", "-n", operatorNamespace, "deployment/"+managerDeployment, "--timeout=5m")
		tl.mark("this build's manager rolled out")
		backAt := map[string]time.Time{}
		for _, n := range names {
			Eventually(func(g Gomega) {
				ma := &memoryv1alpha1.MemoryAdapter{}
				g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, ma)).To(Succeed())
				g.Expect(ma.Status.AdapterVersion).To(Equal("dev"))
				g.Expect(ma.Status.Conformance).NotTo(BeNil())
				g.Expect(ma.Status.Conformance.AdapterVersion).To(Equal("dev"))
				a := meta.FindStatusCondition(ma.Status.Conditions, memoryv1alpha1.ConditionAvailable)
				g.Expect(a).NotTo(BeNil())
				g.Expect(a.Status).To(Equal(metav1.ConditionTrue), "%s: %s", a.Reason, a.Message)
			}).WithTimeout(10 * time.Minute).WithPolling(time.Second).Should(Succeed())
			backAt[n] = tl.mark("%s Available again, verified for adapter version dev", n)
		}
		watch.stop()
		Expect(watch.violations).To(BeEmpty(), "an adapter was Available for a version no run verified")

		By("one conformance run per adapter for the new version, every item still there, the agent never blocked")
		for _, n := range names {
			jobs := &batchv1.JobList{}
			Expect(c.List(ctx, jobs, client.InNamespace(ns), client.MatchingLabels{
				"memory.agentmem.io/adapter": n, "app.kubernetes.io/component": "conformance"})).To(Succeed())
			var since []string
			for _, j := range jobs.Items {
				if j.CreationTimestamp.After(upgradeAt) && j.Name != runsBefore[n] {
					since = append(since, j.Name)
				}
			}
			Expect(since).To(HaveLen(1), "%s: conformance Jobs since the upgrade", n)
			st := adapterStore(ctx, c, ns, n)
			for _, id := range stored[n] {
				got, err := st.Retrieve(ctx, id)
				Expect(err).NotTo(HaveOccurred(), "%s: retrieving %s", n, id)
				Expect(got).NotTo(BeNil(), "%s lost item %s in the upgrade", n, id)
			}
		}
		answers := answersThrough(ctx, ns, agent, upgradeAt.Add(-time.Minute), time.Now())
		Expect(answers).NotTo(BeEmpty())
		for _, a := range failedAnswers(answers) {
			Expect(a.Answer).To(HavePrefix("503"), "the PostgreSQL agent got %s %s through the upgrade (%s)", a.Op, a.Answer, a.Detail)
		}
		tl.mark("PostgreSQL agent: %d answers through the upgrade, %d typed 503, no other failure", len(answers), len(failedAnswers(answers)))
		sqliteAnswers := answersThrough(ctx, ns, sqliteAgent, upgradeAt.Add(-time.Minute), time.Now())
		Expect(sqliteAnswers).NotTo(BeEmpty())
		var gapFrom, gapTo time.Time
		for _, a := range failedAnswers(sqliteAnswers) {
			Expect(a.At).To(BeTemporally("<", backAt["sqlite-memory"]), "the SQLite agent failed after its adapter was Available again: %s %s (%s)", a.Op, a.Answer, a.Detail)
			if gapFrom.IsZero() {
				gapFrom = a.At
			}
			gapTo = a.At
		}
		tl.mark("SQLite agent: %d answers, %d failed, all within the Recreate gap (%s to %s), none after Available", len(sqliteAnswers),
			len(failedAnswers(sqliteAnswers)), gapFrom.Format("15:04:05.000"), gapTo.Format("15:04:05.000"))
		// A workload created now is bound by this build's webhook and released by its gate.
		fresh := startAgentPod(ctx, c, agentPod(ns, "after-upgrade", "pgup", adapterImage,
			[]string{"agent-check", "--adapter=pgup", "--watch", "--interval=2s", "--timeout=30m"}), "")
		tl.mark("a new agent pod (%s) bound, released and storing after the upgrade", fresh)

		versions := kubectl(ctx, "get", "crd/memoryadapters.memory.agentmem.io", "-o", "jsonpath={.status.storedVersions}")
		Expect(strings.TrimSpace(versions)).To(Equal(`["v1alpha1"]`), "the CRD's stored versions (docs/operator.md#towards-v1beta1)")
		tl.mark("CRD stored versions %s", versions)
	}, SpecTimeout(45*time.Minute))
})
