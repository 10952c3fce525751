//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// leaseName is the manager's leader election Lease (cmd/main.go's leaderElectionID).
const leaseName = "memory-adapter-operator.memory.agentmem.io"

// managerPods lists the manager's pods that are not being deleted.
func managerPods(ctx context.Context, c client.Client) []corev1.Pod {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(c.List(ctx, pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
		}
	}
	return live
}

// podReady reports the pod's Ready condition; the manager's readiness check passes only once
// its webhook server serves.
func podReady(p corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// leaseHolder is the pod name in the Lease's holderIdentity (controller-runtime writes
// HOSTNAME_UUID, and a pod's hostname is its name); empty while nobody holds it.
func leaseHolder(ctx context.Context, c client.Client) string {
	GinkgoHelper()
	l := &coordinationv1.Lease{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: operatorNamespace, Name: leaseName}, l)).To(Succeed())
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	pod, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return pod
}

// conditionWatch polls adapters' conditions every interval until stopped and keeps every
// reading that its check refuses, so a wrong state that lasts a single reading fails the spec.
type conditionWatch struct {
	stop  context.CancelFunc
	done  chan struct{}
	mu    sync.Mutex
	bad   []string
	reads int
}

// watchConditions starts a conditionWatch over the named adapters; check returns why a reading
// is wrong, or "" when it is right.
func watchConditions(ctx context.Context, c client.Client, ns string, names []string, every time.Duration, check func(conds []metav1.Condition) string) *conditionWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &conditionWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			for _, n := range names {
				ma := &memoryv1alpha1.MemoryAdapter{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, ma); err != nil {
					if ctx.Err() != nil {
						return
					}
					continue // an API hiccup says nothing about the adapter
				}
				w.mu.Lock()
				w.reads++
				if why := check(ma.Status.Conditions); why != "" {
					w.bad = append(w.bad, fmt.Sprintf("%s %s: %s", time.Now().UTC().Format("15:04:05.000"), n, why))
				}
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// watchAvailable watches steady adapters, whose Available must never read other than True.
func watchAvailable(ctx context.Context, c client.Client, ns string, names []string) *conditionWatch {
	return watchConditions(ctx, c, ns, names, 250*time.Millisecond, func(conds []metav1.Condition) string {
		if a := meta.FindStatusCondition(conds, memoryv1alpha1.ConditionAvailable); a == nil || a.Status != metav1.ConditionTrue {
			return fmt.Sprintf("Available %+v", a)
		}
		return ""
	})
}

// result stops the watch and returns the refused readings and how many were made.
func (w *conditionWatch) result() ([]string, int) {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bad, w.reads
}

// purgeSeen is a ScopePurged condition a watch saw, and when.
type purgeSeen struct {
	at   time.Time
	cond metav1.Condition
}

// watchScopePurged records, per adapter of ns, the first ScopePurged condition of each reason
// and when the adapter was deleted. The conditions of a deleting adapter may live for
// milliseconds; a watch sees every write.
func watchScopePurged(ctx context.Context, ns string) (stop func() (map[string][]purgeSeen, map[string]time.Time)) {
	GinkgoHelper()
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: loopClient().Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &memoryv1alpha1.MemoryAdapterList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	seen, gone := map[string][]purgeSeen{}, map[string]time.Time{}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			ma, ok := ev.Object.(*memoryv1alpha1.MemoryAdapter)
			if !ok {
				continue
			}
			mu.Lock()
			if c := meta.FindStatusCondition(ma.Status.Conditions, memoryv1alpha1.ConditionScopePurged); c != nil {
				list := seen[ma.Name]
				if len(list) == 0 || list[len(list)-1].cond.Reason != c.Reason {
					seen[ma.Name] = append(list, purgeSeen{at: time.Now(), cond: *c})
				}
			}
			if ev.Type == watch.Deleted {
				gone[ma.Name] = time.Now()
			}
			mu.Unlock()
		}
	}()
	return func() (map[string][]purgeSeen, map[string]time.Time) {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen, gone
	}
}

// namespaceEventNotes returns the notes of the operator's Events about a Namespace with the
// reason; they are kept in the default namespace, so they outlive the one deleted.
func namespaceEventNotes(ctx context.Context, c client.Client, nsName, reason string) []string {
	GinkgoHelper()
	list := &eventsv1.EventList{}
	Expect(c.List(ctx, list, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Namespace" && e.Regarding.Name == nsName && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}
