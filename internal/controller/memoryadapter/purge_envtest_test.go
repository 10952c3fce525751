package memoryadapter

import (
	"context"
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// sharedServerAdapter is an adapter on a shared server with the given deletion policy.
func sharedServerAdapter(ns, name string, backend memoryv1alpha1.BackendType, policy memoryv1alpha1.DeletionPolicy) *memoryv1alpha1.MemoryAdapter {
	ma := sqliteAdapter(ns, name)
	ma.Spec.Backend = memoryv1alpha1.BackendSpec{Type: backend, Scope: "agents-" + name,
		ConnectionSecretRef: &memoryv1alpha1.SecretKeyReference{Name: name + "-dsn"}}
	ma.Spec.DeletionPolicy = policy
	return ma
}

// setPolicy changes spec.deletionPolicy with a merge patch, as kubectl patch does.
func setPolicy(ctx context.Context, key types.NamespacedName, policy memoryv1alpha1.DeletionPolicy) {
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	patch := []byte(`{"spec":{"deletionPolicy":"` + string(policy) + `"}}`)
	ExpectWithOffset(1, k8sClient.Patch(ctx, ma, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// purgeJob waits for the adapter's purge Job other than the one with UID old.
func purgeJob(ctx context.Context, key types.NamespacedName, old types.UID) batchv1.Job {
	var job batchv1.Job
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-purge"}, &job)).To(Succeed())
		g.Expect(job.UID).NotTo(Equal(old))
	}, timeout, poll).Should(Succeed())
	return job
}

// realPurgeFailure runs `memory-adapter purge` against a PostgreSQL address nothing listens
// on and returns its termination message: the JSON line a failed purge pod leaves.
func realPurgeFailure(ctx context.Context) []byte {
	dir := GinkgoT().TempDir()
	cmd := exec.CommandContext(ctx, adapterBin, "purge", "--backend", "postgres", "--scope", "agents",
		"--termination-log", dir+"/termination-log")
	cmd.Env = append(cmd.Environ(), "MEMORY_ADAPTER_CONNECTION=postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=2")
	out, err := cmd.Output()
	var ee *exec.ExitError
	ExpectWithOffset(1, err).To(BeAssignableToTypeOf(ee), "the purge must fail against a closed port")
	ExpectWithOffset(1, string(out)).To(ContainSubstring(`"error_type":"MemoryAdapterUnavailable"`))
	return []byte(strings.TrimSpace(string(out)))
}

var _ = Describe("deleting a MemoryAdapter under deletionPolicy Delete", Ordered, func() {
	var (
		ctx     context.Context
		stopMgr func()
		ns      string
		key     types.NamespacedName
		failed  types.UID
	)

	BeforeAll(func() {
		ctx = context.Background()
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "madp-purge-"}}
		Expect(k8sClient.Create(ctx, nsObj)).To(Succeed())
		ns = nsObj.Name
		key = types.NamespacedName{Namespace: ns, Name: "pg"}
		stopMgr = startManager()
	})
	AfterAll(func() {
		if stopMgr != nil {
			stopMgr()
		}
	})

	It("holds a PostgreSQL adapter with the purge finalizer, and only while the policy is Delete", func() {
		Expect(k8sClient.Create(ctx, sharedServerAdapter(ns, key.Name, memoryv1alpha1.BackendPostgres, memoryv1alpha1.DeletionDelete))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getMA(key).Finalizers).To(ContainElement(FinalizerPurgeScope))
			g.Expect(k8sClient.Get(ctx, key, &appsv1.Deployment{})).To(Succeed())
		}, timeout, poll).Should(Succeed())

		setPolicy(ctx, key, memoryv1alpha1.DeletionRetain)
		Eventually(func(g Gomega) { g.Expect(getMA(key).Finalizers).NotTo(ContainElement(FinalizerPurgeScope)) }, timeout, poll).Should(Succeed())
		setPolicy(ctx, key, memoryv1alpha1.DeletionDelete)
		Eventually(func(g Gomega) { g.Expect(getMA(key).Finalizers).To(ContainElement(FinalizerPurgeScope)) }, timeout, poll).Should(Succeed())

		// Retain, the default, and SQLite (whose items go with its owned volume) get none.
		for _, ma := range []*memoryv1alpha1.MemoryAdapter{
			sharedServerAdapter(ns, "kept", memoryv1alpha1.BackendRedis, ""),
			func() *memoryv1alpha1.MemoryAdapter {
				m := sqliteAdapter(ns, "lite")
				m.Spec.DeletionPolicy = memoryv1alpha1.DeletionDelete
				return m
			}(),
		} {
			Expect(k8sClient.Create(ctx, ma)).To(Succeed())
			k := client.ObjectKeyFromObject(ma)
			Eventually(func(g Gomega) { g.Expect(k8sClient.Get(ctx, k, &appsv1.Deployment{})).To(Succeed()) }, timeout, poll).Should(Succeed())
			Consistently(func(g Gomega) { g.Expect(getMA(k).Finalizers).To(BeEmpty()) }, "1s", poll).Should(Succeed())
		}
	})

	It("stops the adapter, waits for its pods, then runs one hardened purge Job of the scope", func() {
		// A pod of the adapter that still runs (unscheduled, so its deletion needs no kubelet).
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pg-adapter-pod", Labels: render.ComponentLabels(getMA(key), render.ComponentAdapter)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "adapter", Image: "x"}}},
		}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		Expect(k8sClient.Delete(ctx, getMA(key))).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key, &appsv1.Deployment{}))).To(BeTrue(), "the adapter Deployment is deleted first")
			ma := getMA(key)
			c := conditionOf(ma, memoryv1alpha1.ConditionScopePurged)
			g.Expect(c.Reason).To(Equal(memoryv1alpha1.ReasonPurgeWaitingForAdapter))
			g.Expect(c.Message).To(ContainSubstring("pg-adapter-pod"))
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionAvailable).Reason).To(Equal(memoryv1alpha1.ReasonAdapterDeleting))
		}, timeout, poll).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pg-purge"}, &batchv1.Job{}))).To(BeTrue())
		}, "1s", poll).Should(Succeed(), "no purge while an adapter instance may still write")

		Expect(k8sClient.Delete(ctx, pod)).To(Succeed())
		job := purgeJob(ctx, key, "")
		Expect(job.OwnerReferences).To(BeEmpty(), "a foreground deletion of the adapter must not take its purge Job")
		Expect(job.Labels).To(HaveKeyWithValue(render.LabelComponent, render.ComponentPurge))
		Expect(job.Spec.BackoffLimit).To(Equal(ptr.To[int32](render.PurgeBackoffLimit)))
		Expect(job.Spec.ActiveDeadlineSeconds).To(Equal(ptr.To[int64](600)))
		Expect(job.Spec.TTLSecondsAfterFinished).NotTo(BeNil())
		spec := job.Spec.Template.Spec
		Expect(spec.AutomountServiceAccountToken).To(Equal(ptr.To(false)))
		c := spec.Containers[0]
		Expect(strings.Join(c.Args, " ")).To(HavePrefix("purge --backend postgres --scope agents-pg "))
		Expect(c.Env).To(ContainElement(HaveField("ValueFrom.SecretKeyRef.LocalObjectReference.Name", "pg-dsn")), "the Secret goes by reference")
		Expect(c.SecurityContext).To(Equal(render.Hardened()))
		Expect(spec.SecurityContext).To(Equal(render.PodSecurity()))
		Eventually(func(g Gomega) {
			g.Expect(conditionOf(getMA(key), memoryv1alpha1.ConditionScopePurged).Reason).To(Equal(memoryv1alpha1.ReasonPurgeRunning))
		}, timeout, poll).Should(Succeed())
		failed = job.UID
	})

	It("keeps the finalizer after a failed purge and says why and how to give up", func() {
		job := purgeJob(ctx, key, "")
		finishJob(ctx, job, realPurgeFailure(ctx), false)
		Eventually(func(g Gomega) {
			ma := getMA(key)
			c := conditionOf(ma, memoryv1alpha1.ConditionScopePurged)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(memoryv1alpha1.ReasonPurgeFailed))
			g.Expect(c.Message).To(ContainSubstring("MemoryAdapterUnavailable"))
			g.Expect(c.Message).To(ContainSubstring("spec.deletionPolicy Retain"))
			g.Expect(c.Message).NotTo(ContainSubstring("hunter2"))
			g.Expect(ma.Finalizers).To(ContainElement(FinalizerPurgeScope))
		}, timeout, poll).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(getMA(key).Finalizers).To(ContainElement(FinalizerPurgeScope)) }, "1s", poll).Should(Succeed())
	})

	It("retries when the failed Job is deleted, and lets the adapter go after a successful purge", func() {
		// The garbage collector would delete the old Job's pod with it; envtest has none.
		Expect(k8sClient.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: "pg-purge"})).To(Succeed())
		Expect(k8sClient.Delete(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pg-purge"}},
			client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		job := purgeJob(ctx, key, failed)
		finishJob(ctx, job, []byte(`{"backend":"postgres","scope":"agents-pg","deleted":3}`), true)
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key, &memoryv1alpha1.MemoryAdapter{}))).To(BeTrue(), "the adapter is gone")
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(&job), &batchv1.Job{}))).To(BeTrue(), "the purge Job is deleted")
		}, timeout, poll).Should(Succeed())
		events := &corev1.EventList{}
		Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name == key.Name {
				reasons = append(reasons, e.Reason)
			}
		}
		Expect(reasons).To(ContainElements("AddedPurgeFinalizer", "StoppedAdapter", memoryv1alpha1.ReasonPurgeFailed, memoryv1alpha1.ReasonPurgeSucceeded))
	})

	It("lets a deleting adapter go, keeping its items, when the policy returns to Retain", func() {
		rk := types.NamespacedName{Namespace: ns, Name: "rd"}
		Expect(k8sClient.Create(ctx, sharedServerAdapter(ns, rk.Name, memoryv1alpha1.BackendRedis, memoryv1alpha1.DeletionDelete))).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(getMA(rk).Finalizers).To(ContainElement(FinalizerPurgeScope)) }, timeout, poll).Should(Succeed())
		Expect(k8sClient.Delete(ctx, getMA(rk))).To(Succeed())
		job := purgeJob(ctx, rk, "")
		Expect(strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")).To(HavePrefix("purge --backend redis --scope agents-rd "))
		setPolicy(ctx, rk, memoryv1alpha1.DeletionRetain)
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, rk, &memoryv1alpha1.MemoryAdapter{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(&job), &batchv1.Job{}))).To(BeTrue(), "a purge under way stops")
		}, timeout, poll).Should(Succeed())
	})
})

var _ = Describe("deleting the namespace of a MemoryAdapter under deletionPolicy Delete", Ordered, func() {
	var (
		ctx     context.Context
		stopMgr func()
		ns      string
	)
	BeforeAll(func() {
		ctx = context.Background()
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "madp-nsdel-"}}
		Expect(k8sClient.Create(ctx, nsObj)).To(Succeed())
		ns = nsObj.Name
		stopMgr = startManager()
	})
	AfterAll(func() {
		if stopMgr != nil {
			stopMgr()
		}
	})

	It("lets PostgreSQL and Redis adapters go without a purge, saying on the adapter and the namespace that their items stay", func() {
		adapters := []*memoryv1alpha1.MemoryAdapter{
			sharedServerAdapter(ns, "pg", memoryv1alpha1.BackendPostgres, memoryv1alpha1.DeletionDelete),
			sharedServerAdapter(ns, "rd", memoryv1alpha1.BackendRedis, memoryv1alpha1.DeletionDelete),
		}
		for _, ma := range adapters {
			Expect(k8sClient.Create(ctx, ma)).To(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(getMA(client.ObjectKeyFromObject(ma)).Finalizers).To(ContainElement(FinalizerPurgeScope))
			}, timeout, poll).Should(Succeed())
		}
		// The condition lives only between the refused Job and the released finalizer; a
		// watch sees every write of it.
		wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		w, err := wc.Watch(ctx, &memoryv1alpha1.MemoryAdapterList{}, client.InNamespace(ns))
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()

		By("deleting the namespace: envtest runs no namespace controller, so it stays Terminating and refuses creates")
		Expect(k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		err = k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}})
		Expect(apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)).To(BeTrue(), "create in a terminating namespace: %v", err)

		By("deleting the adapters, as the namespace controller does")
		for _, ma := range adapters {
			Expect(k8sClient.Delete(ctx, ma)).To(Succeed())
		}
		seen := map[string]metav1.Condition{}
		gone := map[string]struct{}{}
		Eventually(func() int {
			for {
				select {
				case ev := <-w.ResultChan():
					ma, ok := ev.Object.(*memoryv1alpha1.MemoryAdapter)
					if !ok {
						continue
					}
					if c := conditionOf(ma, memoryv1alpha1.ConditionScopePurged); c.Reason == memoryv1alpha1.ReasonNamespaceTerminating {
						seen[ma.Name] = c
					}
					if ev.Type == watch.Deleted {
						gone[ma.Name] = struct{}{}
					}
				default:
					return len(gone)
				}
			}
		}, timeout, poll).Should(Equal(2), "both adapters are gone, their finalizers released")
		for _, ma := range adapters {
			c := seen[ma.Name]
			Expect(c.Status).To(Equal(metav1.ConditionFalse), "%s: ScopePurged NamespaceTerminating was written before it went", ma.Name)
			Expect(c.Message).To(ContainSubstring(`scope "agents-` + ma.Name + `": they stay on the server`))
			Expect(apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: ma.Name + "-purge"}, &batchv1.Job{}))).To(BeTrue())
		}

		By("the Events about the namespace, kept in default, say what happened to each scope")
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(k8sClient.List(ctx, events, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
			var notes []string
			for _, e := range events.Items {
				if e.InvolvedObject.Kind == "Namespace" && e.InvolvedObject.Name == ns && e.Reason == memoryv1alpha1.ReasonNamespaceTerminating {
					g.Expect(e.Type).To(Equal(corev1.EventTypeWarning))
					notes = append(notes, e.Message)
				}
			}
			g.Expect(notes).To(ConsistOf(
				And(HavePrefix("MemoryAdapter "+ns+"/pg (Postgres, deletionPolicy Delete) let go without a purge"), ContainSubstring(`scope "agents-pg": they stay on the server`)),
				And(HavePrefix("MemoryAdapter "+ns+"/rd (Redis, deletionPolicy Delete) let go without a purge"), ContainSubstring(`scope "agents-rd": they stay on the server`)),
			))
		}, timeout, poll).Should(Succeed())
	})
})
