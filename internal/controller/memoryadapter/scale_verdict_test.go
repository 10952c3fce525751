//go:build scale

package memoryadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// The verdict-latency step turns healthy adapters' evidence invalid and back, each ringing
// the doorbell as its server would, in two shapes: spread (scaleVerdictSpread adapters, one
// change every scaleVerdictSpacing: what one adapter's change meets in a steady cluster) and
// burst (scaleVerdictBurst adapters at once, as a shared backend's outage would: the figure
// then includes the queueing of that many reads, reconciles and API writes).
const (
	scaleVerdictSpread  = 100
	scaleVerdictSpacing = 250 * time.Millisecond
	scaleVerdictBurst   = 200
)

// verdictLatency is the verdict-latency step's outcome.
type verdictLatency struct {
	toFalse, toTrue []time.Duration
	rings           int
	// writesToFalse and writesToTrue are the manager's API writes by method from each step's
	// first change to its last condition: the status patches that carry the verdicts and
	// what competed with them at the API server (Events).
	writesToFalse, writesToTrue map[string]float64
	// serverToFalse and serverToTrue are the same window seen by the API server: the mean
	// time it spent on each kind of the manager's writes, and on their storage in etcd.
	serverToFalse, serverToTrue apiServerTimes
}

// apiServerTimes is the API server's own account of a window: the count and mean latency
// of the requests that carry a verdict (a MemoryAdapter status write, an Event POST) and of
// its etcd writes of MemoryAdapters, from apiserver_request_duration_seconds and
// etcd_request_duration_seconds. Where the burst's time goes (admission, validation and
// managed fields in the API server, or the disk under etcd) is the difference between them.
type apiServerTimes map[string]meanOf

// meanOf is a histogram's change over a window: observations and their mean.
type meanOf struct {
	n    float64
	mean time.Duration
}

func (m meanOf) String() string {
	return fmt.Sprintf("%.0f × %s", m.n, m.mean.Round(100*time.Microsecond))
}

// apiServerSeries are the histograms apiServerTimes reads, by the name it reports them under.
var apiServerSeries = map[string][]string{
	"status-write": {"apiserver_request_duration_seconds", `resource="memoryadapters"`, `subresource="status"`},
	"event-post":   {"apiserver_request_duration_seconds", `resource="events"`, `verb="POST"`},
	"etcd-update":  {"etcd_request_duration_seconds", `operation="update"`, `resource="memoryadapters"`},
}

// scrapeAPIServer reads the API server's metrics as the suite's administrator.
func scrapeAPIServer(ctx context.Context) string {
	GinkgoHelper()
	b, err := adminREST().Get().AbsPath("/metrics").DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// saveAPIServerProfile writes the API server's CPU profile over the next d to path; a
// profile that cannot be taken is reported, not fatal: it explains figures, it is not one.
func saveAPIServerProfile(ctx context.Context, d time.Duration, path string) {
	b, err := adminREST().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(int(d.Seconds()))).DoRaw(ctx)
	if err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if err != nil {
		fmt.Fprintf(GinkgoWriter, "the API server's CPU profile: %v\n", err)
	}
}

// adminREST is a client of the API server's own paths as the suite's administrator.
func adminREST() rest.Interface {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return cs.Discovery().RESTClient()
}

// apiServerWindow is what the API server spent between two scrapes; a series missing from
// either scrape fails the step, so a renamed metric cannot report an empty window.
func apiServerWindow(after, before string) apiServerTimes {
	GinkgoHelper()
	out := apiServerTimes{}
	for name, s := range apiServerSeries {
		sum := func(text, suffix string) float64 {
			v := metricValues(text, s[0]+suffix, "", s[1:]...)
			if len(v) == 0 {
				var seen []string
				for _, line := range strings.Split(text, "\n") {
					if strings.HasPrefix(line, s[0]+suffix+"{") && len(seen) < 5 {
						seen = append(seen, line)
					}
				}
				Fail(fmt.Sprintf("the API server exports no %s%s with %v; of the name:\n%s", s[0], suffix, s[1:], strings.Join(seen, "\n")))
			}
			return v[""]
		}
		n := sum(after, "_count") - sum(before, "_count")
		m := meanOf{n: n}
		if n > 0 {
			m.mean = time.Duration((sum(after, "_sum") - sum(before, "_sum")) / n * float64(time.Second))
		}
		out[name] = m
	}
	return out
}

// invalidReport is the evidence of an adapter whose backend went away.
func invalidReport(manifestHash string) []byte {
	b, err := json.Marshal(memory.EvidenceReport{Adapter: "sqlite", AdapterVersion: "bench", ManifestHash: manifestHash,
		ServiceVersion: "3.50.4", ManifestValid: false, Reason: "backend unreachable: connection refused",
		Probes: []memory.ProbeResult{{Name: "reachable", OK: false, Detail: "connection refused"}}, ObservedAt: time.Now()})
	Expect(err).NotTo(HaveOccurred())
	return b
}

// setInvalid makes the pod at ip answer with the invalid report (or the valid one again).
func (e *scaleEvidence) setInvalid(ip string, invalid bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pods[ip]
	Expect(p).NotTo(BeNil(), "no pod answers at %s", ip)
	p.invalid = invalid
}

// reportFor is what the pod p answers.
func (e *scaleEvidence) reportFor(p *scalePod) []byte {
	if p.invalid {
		return e.invalid
	}
	return e.report
}

// measureVerdictLatency turns size healthy adapters' evidence invalid, one every spacing (0:
// all at once), rings the manager's doorbell for each as their servers would, and times each
// adapter's Available=False from its own change (watched, not polled); then the same back to
// True. scrape reads the manager's metrics, for the API writes of each step. It fails loudly
// when a condition never follows, when a ring is refused, or when the watch ends.
func measureVerdictLatency(ctx context.Context, ns string, k *scaleKubelet, names []string, doorbellURL string, scrape func() string, size int, spacing time.Duration) verdictLatency {
	GinkgoHelper()
	var sample []string
	for i, name := range names {
		if i%scaleHangEvery != scaleHangEvery-1 && len(sample) < size {
			sample = append(sample, name)
		}
	}
	Expect(sample).NotTo(BeEmpty())
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	var out verdictLatency
	for _, step := range []struct {
		invalid bool
		want    metav1.ConditionStatus
		into    *[]time.Duration
		writes  *map[string]float64
		server  *apiServerTimes
	}{{true, metav1.ConditionFalse, &out.toFalse, &out.writesToFalse, &out.serverToFalse},
		{false, metav1.ConditionTrue, &out.toTrue, &out.writesToTrue, &out.serverToTrue}} {
		w := watchFromNow(ctx, wc, ns, nil)
		writesBefore := apiWrites(scrape())
		serverBefore := scrapeAPIServer(ctx)
		pending := map[string]bool{}
		for _, name := range sample {
			pending[name] = true
		}
		changed := map[string]time.Time{}
		var mu sync.Mutex
		ring := func(name string) {
			k.ev.setInvalid(podIP(k.index[name]), step.invalid)
			mu.Lock()
			changed[name] = time.Now()
			mu.Unlock()
			resp, err := http.Post(doorbellURL+"/"+ns+"/"+name, "", nil) //nolint:gosec // the manager's loopback doorbell
			Expect(err).NotTo(HaveOccurred(), "ring for %s", name)
			_ = resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusAccepted), "ring for %s", name)
			mu.Lock()
			out.rings++
			mu.Unlock()
		}
		// The changes are made (and rung) in the background while the watch below records
		// each condition, so a spread change's time is its own, not the last one's.
		go func() {
			defer GinkgoRecover()
			if spacing == 0 {
				tasks := make([]func(), len(sample))
				for i, name := range sample {
					tasks[i] = func() { ring(name) }
				}
				inParallel(16, tasks)
				return
			}
			t := time.NewTicker(spacing)
			defer t.Stop()
			for _, name := range sample {
				ring(name)
				<-t.C
			}
		}()
		deadline := time.After(5 * time.Minute)
		seen := func(ma *memoryv1alpha1.MemoryAdapter) {
			mu.Lock()
			at, rung := changed[ma.Name]
			mu.Unlock()
			if pending[ma.Name] && rung && conditionOf(ma, memoryv1alpha1.ConditionAvailable).Status == step.want {
				*step.into = append(*step.into, time.Since(at))
				delete(pending, ma.Name)
			}
		}
		for len(pending) > 0 {
			select {
			case e, ok := <-w.ResultChan():
				if !ok || e.Type == watch.Error {
					// The API server ends watches (a timeout, a slow consumer); a new one starts
					// from a list, whose adapters count as seen now: never earlier than they were.
					w.Stop()
					w = watchFromNow(ctx, wc, ns, seen)
					continue
				}
				if e.Type == watch.Modified {
					seen(e.Object.(*memoryv1alpha1.MemoryAdapter))
				}
			case <-deadline:
				Fail(fmt.Sprintf("%d of %d adapters not Available=%s 5 minutes after their evidence changed", len(pending), len(sample), step.want))
			}
		}
		w.Stop()
		*step.writes, _ = diff(apiWrites(scrape()), writesBefore)
		*step.server = apiServerWindow(scrapeAPIServer(ctx), serverBefore)
		slices.Sort(*step.into)
	}
	return out
}

// describe is one line of the result: the latencies to Available=False and back to True.
func (v verdictLatency) describe(shape string) string {
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	return fmt.Sprintf("%s: Available=False p50 / p99 / max %s / %s / %s (API writes meanwhile %v; API server %v), Available=True again %s / %s / %s (%v; %v)", shape,
		r(quantile(v.toFalse, 0.5)), r(quantile(v.toFalse, 0.99)), r(quantile(v.toFalse, 1)), v.writesToFalse, v.serverToFalse,
		r(quantile(v.toTrue, 0.5)), r(quantile(v.toTrue, 0.99)), r(quantile(v.toTrue, 1)), v.writesToTrue, v.serverToTrue)
}

// watchFromNow watches the namespace's adapters from now: from the resourceVersion of a
// list of one adapter, so the watch starts with no synthetic event per existing adapter and
// misses no change after it. Only a watch that restarts (seen set) lists them all, handing
// each to seen: a full list of 10,000 adapters is 77 MB the API server encodes and this
// process decodes, and right before a step it competed with the step it was to measure.
func watchFromNow(ctx context.Context, wc client.WithWatch, ns string, seen func(*memoryv1alpha1.MemoryAdapter)) watch.Interface {
	GinkgoHelper()
	list := &memoryv1alpha1.MemoryAdapterList{}
	if seen == nil {
		Expect(wc.List(ctx, list, client.InNamespace(ns), client.Limit(1))).To(Succeed())
	} else {
		Expect(wc.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for i := range list.Items {
			seen(&list.Items[i])
		}
	}
	w, err := wc.Watch(ctx, &memoryv1alpha1.MemoryAdapterList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	Expect(err).NotTo(HaveOccurred())
	return w
}
