//go:build scale

package memoryadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// scaleVerdictSample is how many healthy adapters the verdict-latency step turns invalid and
// back: all at once, as a shared backend's outage would, so the figure includes the queueing
// of that many reads and reconciles.
const scaleVerdictSample = 200

// verdictLatency is the verdict-latency step's outcome.
type verdictLatency struct {
	toFalse, toTrue []time.Duration
	rings           int
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

// measureVerdictLatency turns scaleVerdictSample healthy adapters' evidence invalid at once,
// rings the manager's doorbell for each as their servers would, and times each adapter's
// Available=False from its change (watched, not polled); then the same back to True. It
// fails loudly when a condition never follows, when a ring is refused, or when the watch ends.
func measureVerdictLatency(ctx context.Context, ns string, k *scaleKubelet, names []string, doorbellURL string) verdictLatency {
	GinkgoHelper()
	var sample []string
	for i, name := range names {
		if i%scaleHangEvery != scaleHangEvery-1 && len(sample) < scaleVerdictSample {
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
	}{{true, metav1.ConditionFalse, &out.toFalse}, {false, metav1.ConditionTrue, &out.toTrue}} {
		w, err := wc.Watch(ctx, &memoryv1alpha1.MemoryAdapterList{}, client.InNamespace(ns))
		Expect(err).NotTo(HaveOccurred())
		pending := map[string]bool{}
		for _, name := range sample {
			pending[name] = true
		}
		changed := time.Now()
		for _, name := range sample {
			k.ev.setInvalid(podIP(k.index[name]), step.invalid)
		}
		var mu sync.Mutex
		rings := make([]func(), len(sample))
		for i, name := range sample {
			rings[i] = func() {
				resp, err := http.Post(doorbellURL+"/"+ns+"/"+name, "", nil) //nolint:gosec // the manager's loopback doorbell
				Expect(err).NotTo(HaveOccurred(), "ring for %s", name)
				_ = resp.Body.Close()
				Expect(resp.StatusCode).To(Equal(http.StatusAccepted), "ring for %s", name)
				mu.Lock()
				out.rings++
				mu.Unlock()
			}
		}
		inParallel(16, rings)
		deadline := time.After(5 * time.Minute)
		for len(pending) > 0 {
			select {
			case e, ok := <-w.ResultChan():
				Expect(ok).To(BeTrue(), "the watch ended with %d adapters pending", len(pending))
				if e.Type != watch.Modified {
					continue
				}
				ma := e.Object.(*memoryv1alpha1.MemoryAdapter)
				if pending[ma.Name] && conditionOf(ma, memoryv1alpha1.ConditionAvailable).Status == step.want {
					*step.into = append(*step.into, time.Since(changed))
					delete(pending, ma.Name)
				}
			case <-deadline:
				Fail(fmt.Sprintf("%d of %d adapters not Available=%s 5 minutes after their evidence changed", len(pending), len(sample), step.want))
			}
		}
		w.Stop()
		slices.Sort(*step.into)
	}
	return out
}
