//go:build scale

package memoryadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// The scale benchmark (opt-in: `-tags scale`, see docs/operator.md for the command and the
// recorded figures). It measures, it does not assert a time: N MemoryAdapters on envtest,
// evidence from a fake reader, Deployments and Jobs finished by the benchmark in the
// kubelet's place. It reports the time until all are Available, reconciles per object, the
// manager's API writes during one steady minute (goal 0) and the process's peak RSS.

// validEvidence answers every adapter with evidence that upholds the shared manifest, and
// counts the reads.
type validEvidence struct {
	hash  string
	reads *atomic.Int64
}

func (v validEvidence) ReadEvidence(context.Context, string, string) (*memory.EvidenceReport, error) {
	v.reads.Add(1)
	return &memory.EvidenceReport{Adapter: "sqlite", AdapterVersion: "bench", ManifestHash: v.hash, ServiceVersion: "3.50.4",
		ManifestValid: true, Probes: []memory.ProbeResult{{Name: "json1", OK: true}}, ObservedAt: time.Now()}, nil
}

// writeKinds counts write requests by method and resource (names left out), so steady
// writes can be attributed.
type writeKinds struct {
	mu sync.Mutex
	m  map[string]int
}

func (w *writeKinds) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodGet {
			parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
			// .../namespaces/NS/RESOURCE/NAME[/SUB]: keep the resource and subresource.
			res := r.URL.Path
			for i, p := range parts {
				if p == "namespaces" && i+2 < len(parts) {
					res = parts[i+2]
					if i+4 < len(parts) {
						res += "/" + parts[i+4]
					}
				}
			}
			w.mu.Lock()
			if w.m == nil {
				w.m = map[string]int{}
			}
			w.m[r.Method+" "+res]++
			w.mu.Unlock()
		}
		return next.RoundTrip(r)
	})
}

func (w *writeKinds) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m = map[string]int{}
}

func (w *writeKinds) snapshot() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.m)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

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

func reconcileTotal() float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "memoryadapter" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// histogramMean is the mean of a controller-runtime histogram for this controller (label
// controller or name = memoryadapter), over the observations since the process started.
func histogramMean(metric string) time.Duration {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var sum float64
	var count uint64
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "controller" || l.GetName() == "name") && l.GetValue() == "memoryadapter" {
					sum += m.GetHistogram().GetSampleSum()
					count += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	if count == 0 {
		return 0
	}
	return time.Duration(sum / float64(count) * float64(time.Second))
}

func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

var _ = Describe("the controller at scale", Label("scale"), Ordered, func() {
	It("brings N adapters to Available and then writes nothing", func(ctx SpecContext) {
		n := 1000
		if v := os.Getenv("MAO_SCALE_ADAPTERS"); v != "" {
			var err error
			n, err = strconv.Atoi(v)
			Expect(err).NotTo(HaveOccurred())
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scale-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())

		var writes atomic.Int64
		var reads atomic.Int64
		kinds := &writeKinds{}
		mcfg := rest.CopyConfig(cfg)
		mcfg.QPS, mcfg.Burst = 200, 400
		mcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return writeCounter{next: kinds.wrap(rt), writes: &writes}
		})
		hash := sqliteAdapter("x", "x").Spec.Manifest.Hash()
		baseReconciles := reconcileTotal()
		stop := startManagerWith(mcfg, validEvidence{hash: hash, reads: &reads})
		defer stop()

		start := time.Now()
		for i := range n {
			ma := sqliteAdapter(ns.Name, fmt.Sprintf("a%04d", i))
			ma.Spec.Health = nil // the default period, as users run it
			Expect(k8sClient.Create(ctx, ma)).To(Succeed())
		}
		created := time.Since(start)

		By("playing the kubelet: Deployments become available, Jobs finish with a passing report")
		report := passingCompactReport()
		finished := map[string]bool{}
		Eventually(func(g Gomega) {
			deps := &appsv1.DeploymentList{}
			g.Expect(k8sClient.List(ctx, deps, client.InNamespace(ns.Name))).To(Succeed())
			for i := range deps.Items {
				d := &deps.Items[i]
				if d.Status.AvailableReplicas == 1 {
					continue
				}
				d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = d.Generation, 1, 1, 1, 1
				_ = k8sClient.Status().Update(ctx, d)
			}
			jobs := &batchv1.JobList{}
			g.Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns.Name))).To(Succeed())
			for _, j := range jobs.Items {
				if !finished[j.Name] {
					finishJob(ctx, j, report, true)
					finished[j.Name] = true
				}
			}
			list := &memoryv1alpha1.MemoryAdapterList{}
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns.Name))).To(Succeed())
			available := 0
			blocked := ""
			for _, ma := range list.Items {
				c := conditionOf(&ma, memoryv1alpha1.ConditionAvailable)
				if c.Status == metav1.ConditionTrue {
					available++
				} else if blocked == "" {
					blocked = fmt.Sprintf("%s: Available=%s %s: %s", ma.Name, c.Status, c.Reason, c.Message)
				}
			}
			g.Expect(available).To(Equal(n), "first adapter not Available: %s", blocked)
		}).WithTimeout(60 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		toAvailable := time.Since(start)
		reconciles := reconcileTotal() - baseReconciles

		By("one steady minute")
		writes.Store(0)
		kinds.reset()
		steadyStart := reconcileTotal()
		readsStart := reads.Load()
		time.Sleep(time.Minute) // a measurement window, not a wait for a condition
		steadyWrites := writes.Load()
		steadyReconciles := reconcileTotal() - steadyStart
		steadyReads := reads.Load() - readsStart
		fmt.Fprintf(GinkgoWriter, "steady minute: %d evidence reads; writes by kind: %v\n", steadyReads, kinds.snapshot())

		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(GinkgoWriter, "\n| adapters | created in | all Available after | reconciles per adapter | reconciles in the steady minute | API writes in the steady minute | peak RSS (test process: manager + envtest client) | Go heap in use |\n|---|---|---|---|---|---|---|---|\n")
		fmt.Fprintf(GinkgoWriter, "| %d | %s | %s | %.1f | %.0f | %d | %s | %d MiB |\n", n, created.Round(time.Second), toAvailable.Round(time.Second),
			reconciles/float64(n), steadyReconciles, steadyWrites, peakRSS(), ms.HeapInuse>>20)
		AddReportEntry("queue", fmt.Sprintf("mean reconcile time %s, mean time queued %s",
			histogramMean("controller_runtime_reconcile_time_seconds"), histogramMean("workqueue_queue_duration_seconds")))
		AddReportEntry("scale", fmt.Sprintf("adapters=%d available_after=%s reconciles_per_adapter=%.1f steady_reconciles=%.0f steady_evidence_reads=%d steady_writes=%d writes_by_kind=%v peak_rss=%s heap_inuse=%dMiB",
			n, toAvailable.Round(time.Second), reconciles/float64(n), steadyReconciles, steadyReads, steadyWrites, kinds.snapshot(), peakRSS(), ms.HeapInuse>>20))
	}, SpecTimeout(90*time.Minute))
})
