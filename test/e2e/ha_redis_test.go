//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// Redis past one server (issue 45): a primary and two replicas under three sentinels, as pods
// (test/e2e/testdata/redis-sentinel), a Redis adapter that connects through the sentinels
// with the replication promise on every replica (min_replicas=2: with 1, a first run lost 5 of
// 43 acknowledged writes, as docs/adapters/redis.md explains), and a bound agent storing and reading back
// every 200 ms through a planned switchover and through the primary's pod killed. What a
// workload may see is a 2xx or the typed 503; every write acknowledged must read back after;
// the verdict must not ask for a new conformance run (the promoted server runs the same
// version).

const (
	sentinelAdapter = "redissent"
	sentinelMaster  = "mymaster"
)

// buildRedisImage packs hack/redis-rootfs.sh's tree (Debian's redis-server and redis-cli)
// as an image tagged with the server's version, loads it into every node and returns its name.
func buildRedisImage(ctx context.Context) string {
	GinkgoHelper()
	root := filepath.Join(clusterDir, "images", "redis-rootfs")
	out, err := run(ctx, "bash", "hack/redis-rootfs.sh", root)
	Expect(err).NotTo(HaveOccurred(), "hack/redis-rootfs.sh failed; its output is above")
	version := strings.TrimSpace(out)
	Expect(version).To(MatchRegexp(`^\d+\.\d+\.\d+$`), "hack/redis-rootfs.sh printed no version")
	ref := "mao.local/redis-server:" + version
	_, err = run(ctx, filepath.Join(clusterDir, "tools", "images"),
		"-out", filepath.Join(clusterDir, "images"), "-load", containerdSockets(ctx),
		ref+"=%"+root+":/usr/bin/redis-server")
	Expect(err).NotTo(HaveOccurred(), "building/loading %s", ref)
	return ref
}

// sentinelCLI runs redis-cli against the sentinel in pod sentinel-<i> (its REDISCLI_AUTH
// carries the password).
func sentinelCLI(ctx context.Context, ns string, i int, args ...string) (string, error) {
	out, err := runKubectl(ctx, append([]string{"exec", "-n", ns, fmt.Sprintf("sentinel-%d", i), "-c", "sentinel", "--",
		"/usr/bin/redis-cli", "-p", "26379", "--no-auth-warning"}, args...)...)
	return strings.TrimSpace(out), err
}

// newPrimary waits up to a minute for the sentinels to name a primary other than before,
// and returns it.
func newPrimary(ctx context.Context, ns, before string) string {
	GinkgoHelper()
	var after string
	Eventually(func() string {
		after = currentPrimary(ctx, ns)
		return after
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).ShouldNot(Or(BeEmpty(), Equal(before)))
	return after
}

// currentPrimary is the primary's address as a sentinel that answers names it.
func currentPrimary(ctx context.Context, ns string) string {
	for i := range 3 {
		out, err := sentinelCLI(ctx, ns, i, "SENTINEL", "get-master-addr-by-name", sentinelMaster)
		if lines := strings.Fields(out); err == nil && len(lines) == 2 {
			return lines[0]
		}
	}
	return ""
}

// availableReading is one change of the adapter's Available condition, as the poller saw it.
type availableReading struct {
	At             time.Time
	Status         metav1.ConditionStatus
	Reason, Detail string
}

// availableRecorder polls the adapter's Available condition every 200 ms and keeps each
// change, the condition timeline the docs' table quotes.
type availableRecorder struct {
	stop     context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	readings []availableReading
}

func recordAvailable(ctx context.Context, c client.Client, ns, name string) *availableRecorder {
	ctx, cancel := context.WithCancel(ctx)
	r := &availableRecorder{stop: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(r.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			ma := &memoryv1alpha1.MemoryAdapter{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ma); err == nil {
				if a := meta.FindStatusCondition(ma.Status.Conditions, memoryv1alpha1.ConditionAvailable); a != nil {
					r.mu.Lock()
					if n := len(r.readings); n == 0 || r.readings[n-1].Status != a.Status || r.readings[n-1].Reason != a.Reason {
						r.readings = append(r.readings, availableReading{At: time.Now(), Status: a.Status, Reason: a.Reason, Detail: a.Message})
					}
					r.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return r
}

// since returns the changes at or after t, with the reading in force at t first.
func (r *availableRecorder) since(t time.Time) []availableReading {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []availableReading
	for i, rd := range r.readings {
		if !rd.At.Before(t) {
			if len(out) == 0 && i > 0 {
				out = append(out, r.readings[i-1])
			}
			out = append(out, rd)
		}
	}
	if len(out) == 0 && len(r.readings) > 0 {
		out = append(out, r.readings[len(r.readings)-1])
	}
	return out
}

func (r *availableRecorder) close() {
	r.stop()
	<-r.done
}

// acceptable reports whether an agent answer is one the contract allows during a failover:
// a stored item (201), an item read back equal (200 ... -), or the typed 503.
func acceptable(a agentAnswer) bool {
	switch {
	case a.Answer == typedUnavailable:
		return true
	case a.Op == "store":
		return strings.HasPrefix(a.Answer, "201 ")
	default:
		return strings.HasPrefix(a.Answer, "200 ") && strings.HasSuffix(a.Answer, " -")
	}
}

// faultRow is one line of the timeline table: what a fault cost a workload.
type faultRow struct {
	fault                string
	promoted             time.Duration // until a sentinel named another primary
	lastFailure          time.Duration // the last non-2xx answer after the fault (0: none)
	writesAgain          time.Duration // the first 201 after the last failure
	unavailable, success int
	available            string
}

var _ = Describe("Redis with Sentinel", Ordered, Label("ha"), longSpec, func() {
	var (
		c       client.Client
		ns      string
		agent   string
		rec     *availableRecorder
		newJobs func() []string
		rows    []faultRow
	)

	BeforeAll(func(ctx SpecContext) {
		c = loopClient()
		ns = namespace
		tl := newTimeline("redis-sentinel setup")
		redisImage := buildRedisImage(ctx)
		tl.mark("image %s built and loaded", redisImage)

		password := randomHex(18)
		auth := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis-auth"},
			StringData: map[string]string{"password": password}}
		Expect(c.Create(ctx, auth)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, auth) })
		applyManifest(ctx, c, ns, filepath.Join(repoRoot, "test", "e2e", "testdata", "redis-sentinel", "redis-sentinel.yaml"),
			"REDIS_IMAGE", redisImage, "HELPER_IMAGE", helperImage)

		By("three data pods and three sentinels ready, the sentinels agreeing on two replicas")
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(c.List(ctx, pods, client.InNamespace(ns), client.HasLabels{"app.kubernetes.io/name"})).To(Succeed())
			ready := 0
			for _, p := range pods.Items {
				if n := p.Labels["app.kubernetes.io/name"]; (n == "redis" || n == "sentinel") && podReady(p) {
					ready++
				}
			}
			g.Expect(ready).To(Equal(6), "ready Redis and sentinel pods")
			for i := range 3 {
				out, err := sentinelCLI(ctx, ns, i, "SENTINEL", "master", sentinelMaster)
				g.Expect(err).NotTo(HaveOccurred(), out)
				fields := strings.Fields(out)
				g.Expect(fields).To(ContainElements("num-slaves", "num-other-sentinels"))
				for j := 0; j+1 < len(fields); j++ {
					switch fields[j] {
					case "num-slaves", "num-other-sentinels":
						g.Expect(fields[j+1]).To(Equal("2"), "sentinel-%d: %s", i, fields[j])
					case "flags":
						g.Expect(fields[j+1]).To(Equal("master"), "sentinel-%d", i)
					}
				}
			}
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		tl.mark("Redis up: primary %s", currentPrimary(ctx, ns))

		hosts := "sentinel-0.sentinel:26379,sentinel-1.sentinel:26379,sentinel-2.sentinel:26379"
		conn := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sentinelAdapter + "-conn"},
			StringData: map[string]string{"dsn": fmt.Sprintf("redis-sentinel://:%s@%s/0?master_name=%s&sentinel_password=%s&min_replicas=2&wait_timeout=500ms",
				password, hosts, sentinelMaster, password)}}
		Expect(c.Create(ctx, conn)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, conn) })
		ma := networkedAdapter(ns, sentinelAdapter, memoryv1alpha1.BackendRedis, "redis", "eventual")
		Expect(c.Create(ctx, ma)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, ma) })
		waitAvailable(ctx, ns, sentinelAdapter)
		tl.mark("adapter Available")
		Expect(jobsOf(ctx, c, ns, sentinelAdapter)).To(HaveLen(1), "one conformance run verified the adapter")
		// The function outlives this node's context: it is asked after each fault.
		newJobs = jobsSince(context.WithoutCancel(ctx), c, ns, sentinelAdapter)

		rec = recordAvailable(context.WithoutCancel(ctx), c, ns, sentinelAdapter)
		DeferCleanup(rec.close)
		pod := watchingAgentPod(ns, sentinelAdapter, "--interval=200ms", "--read-back")
		// Bound with no requirement: Redis's search is eventual, and the point is the calls.
		pod.Annotations["memory.agentmem.io/requires"] = ""
		agent = startAgentPod(ctx, c, pod, "")
		tl.mark("agent %s storing every 200 ms", agent)
	})

	// measure waits for the agent to store again after the fault that began at start and
	// held until promoted, checks every answer since start, and returns the fault's row.
	measure := func(ctx context.Context, tl *timeline, fault string, start, promoted time.Time) faultRow {
		GinkgoHelper()
		var answers []agentAnswer
		// Steady again: ten stores in a row acknowledged after the promotion.
		Eventually(func(g Gomega) {
			answers = agentAnswers(ctx, ns, agent, start)
			run := 0
			for _, a := range answers {
				switch {
				case a.Op != "store" || a.At.Before(promoted):
				case strings.HasPrefix(a.Answer, "201 "):
					run++
				default:
					run = 0
				}
			}
			g.Expect(run).To(BeNumerically(">=", 10), "stores acknowledged in a row since the promotion: %s", summarizeAnswers(answers))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		row := faultRow{fault: fault, promoted: promoted.Sub(start)}
		var lastFailure time.Time
		why := map[string]int{}
		for _, a := range answers {
			Expect(acceptable(a)).To(BeTrue(), "%s at %s was answered %q (%s): only a 2xx or the typed 503 may reach a workload",
				a.Op, a.At.Format("15:04:05.000"), a.Answer, a.Detail)
			if a.Answer == typedUnavailable {
				row.unavailable++
				lastFailure = a.At
				d := a.Detail
				if len(d) > 160 {
					d = d[:160] + "…"
				}
				why[d]++
			} else {
				row.success++
			}
		}
		for _, a := range answers {
			if a.Op == "store" && strings.HasPrefix(a.Answer, "201 ") && !a.At.Before(lastFailure) {
				row.writesAgain = a.At.Sub(start)
				break
			}
		}
		if !lastFailure.IsZero() {
			row.lastFailure = lastFailure.Sub(start)
		}
		var parts []string
		for _, rd := range rec.since(start) {
			if rd.Status != metav1.ConditionTrue {
				Expect(rd.Reason).NotTo(Or(BeEmpty(), Equal("AdapterAvailable")), "Available=%s must carry an evidence reason: %s", rd.Status, rd.Detail)
			}
			parts = append(parts, fmt.Sprintf("%s %s at %+.1fs", rd.Status, rd.Reason, rd.At.Sub(start).Seconds()))
		}
		row.available = strings.Join(parts, "; ")
		for d, n := range why {
			tl.mark("%s: %d x typed 503 %q", fault, n, d)
		}
		tl.mark("%s: %s; writes again at +%.1fs; Available: %s", fault, summarizeAnswers(answers), row.writesAgain.Seconds(), row.available)
		Expect(newJobs()).To(BeEmpty(), "a promotion onto the same Redis version needs no new conformance run")
		return row
	}

	It("follows a planned switchover (SENTINEL FAILOVER): only 2xx or the typed 503, writes again within seconds", func(ctx SpecContext) {
		tl := newTimeline("redis-sentinel switchover")
		before := currentPrimary(ctx, ns)
		Expect(before).NotTo(BeEmpty())
		out, err := sentinelCLI(ctx, ns, 0, "SENTINEL", "FAILOVER", sentinelMaster)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(Equal("OK"))
		start := tl.mark("SENTINEL FAILOVER %s (primary %s)", sentinelMaster, before)
		after := newPrimary(ctx, ns, before)
		promoted := tl.mark("the sentinels name %s", after)
		rows = append(rows, measure(ctx, tl, "planned switchover (SENTINEL FAILOVER)", start, promoted))
	})

	It("follows the primary's pod killed (grace 0): only 2xx or the typed 503, writes again after the promotion", func(ctx SpecContext) {
		tl := newTimeline("redis-sentinel primary killed")
		before := currentPrimary(ctx, ns)
		Expect(before).NotTo(BeEmpty())
		pods := &corev1.PodList{}
		Expect(c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "redis"})).To(Succeed())
		var pod *corev1.Pod
		for i := range pods.Items {
			if pods.Items[i].Status.PodIP == before {
				pod = &pods.Items[i]
			}
		}
		Expect(pod).NotTo(BeNil(), "no Redis pod has the primary's address %s", before)
		podName := pod.Name
		Expect(c.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		start := tl.mark("pod %s (the primary) deleted with grace 0", podName)
		after := newPrimary(ctx, ns, before)
		promoted := tl.mark("the sentinels name %s", after)
		rows = append(rows, measure(ctx, tl, "primary's pod killed (grace 0)", start, promoted))

		By("the recreated pod rejoins as a replica of the new primary")
		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: podName}, p)).To(Succeed())
			g.Expect(p.UID).NotTo(Equal(pod.UID))
			g.Expect(podReady(*p)).To(BeTrue(), "pod %s ready", podName)
			out, err := runKubectl(ctx, "exec", "-n", ns, podName, "-c", "redis", "--", "/usr/bin/redis-cli", "--no-auth-warning", "INFO", "replication")
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(out).To(And(ContainSubstring("role:slave"), ContainSubstring("master_host:"+after), ContainSubstring("master_link_status:up")))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		tl.mark("%s rejoined as a replica of %s", podName, after)
	})

	It("lost no acknowledged write, kept Available without a new run, and prints the timeline table", func(ctx SpecContext) {
		tl := newTimeline("redis-sentinel read-back")
		ids := storedIDs(agentAnswers(ctx, ns, agent, time.Time{}))
		found, missing := countLostWrites(ctx, c, ns, sentinelAdapter, ids)
		tl.mark("read back %d acknowledged writes: %d found, %d missing", len(ids), found, missing)
		Expect(missing).To(BeZero(), "acknowledged writes lost (min_replicas=2: each was on both replicas before its 201)")
		Expect(found).To(Equal(len(ids)))
		waitAvailable(ctx, ns, sentinelAdapter)
		Expect(newJobs()).To(BeEmpty(), "no conformance run for a promotion onto the same version")

		var b strings.Builder
		fmt.Fprintf(&b, "| fault | new primary named | last typed 503 | writes again | calls 2xx / typed 503 | Available (reason) |\n|---|---|---|---|---|---|\n")
		for _, r := range rows {
			last := "none"
			if r.lastFailure > 0 {
				last = fmt.Sprintf("+%.1f s", r.lastFailure.Seconds())
			}
			fmt.Fprintf(&b, "| %s | +%.1f s | %s | +%.1f s | %d / %d | %s |\n", r.fault, r.promoted.Seconds(), last, r.writesAgain.Seconds(), r.success, r.unavailable, r.available)
		}
		fmt.Fprintf(&b, "\nacknowledged writes read back after both faults: %d of %d (lost %d); conformance runs since Available: 0\n", found, len(ids), missing)
		fmt.Fprintf(GinkgoWriter, "Redis with Sentinel timeline (times from each fault):\n%s", b.String())
		AddReportEntry("redis-sentinel timeline", b.String())
	})
})
