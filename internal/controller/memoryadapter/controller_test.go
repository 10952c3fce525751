package memoryadapter

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/runs"
	"github.com/agentmem/memory-adapter-operator/internal/pki"
)

const (
	timeout = 60 * time.Second
	poll    = 100 * time.Millisecond
)

// sqliteAdapter is the SQLite sample's contract, which `memory-adapter serve --backend sqlite`
// publishes.
func sqliteAdapter(ns, name string) *memoryv1alpha1.MemoryAdapter {
	return &memoryv1alpha1.MemoryAdapter{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: memoryv1alpha1.MemoryAdapterSpec{
			Manifest: memoryv1alpha1.ManifestSpec{
				Adapter:           "sqlite",
				NativeItemFields:  []memoryv1alpha1.ItemField{"id", "created_at", "metadata", "content", "tags"},
				SupportedFilters:  []memoryv1alpha1.FilterKey{"branch_id", "source"},
				SearchConsistency: "immediate",
				RetrieveFidelity:  "full",
				SearchFidelity:    "full",
				SearchReturnsTags: true,
				PreservesMetadata: true,
			},
			Backend: memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendSQLite, Scope: "agents"},
			Health:  &memoryv1alpha1.HealthSpec{Period: memoryv1alpha1.NewDuration(time.Second)},
		},
	}
}

// expectServingCertificate checks that sec holds a key pair whose certificate chains to the
// binding's CA and is valid for name.
func expectServingCertificate(g Gomega, sec *corev1.Secret, caPEM []byte, name string) {
	pair, err := tls.X509KeyPair(sec.Data["tls.crt"], sec.Data["tls.key"])
	g.Expect(err).NotTo(HaveOccurred(), "the serving key pair loads")
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(caPEM)).To(BeTrue(), "ca.crt holds a certificate")
	_, err = pair.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots})
	g.Expect(err).NotTo(HaveOccurred(), "the serving certificate verifies for %s with the binding's ca.crt", name)
}

func mustParseCert(pemBytes []byte) *x509.Certificate {
	c, err := pki.ParseCertificate(pemBytes)
	Expect(err).NotTo(HaveOccurred())
	return c
}

func getMA(key types.NamespacedName) *memoryv1alpha1.MemoryAdapter {
	ma := &memoryv1alpha1.MemoryAdapter{}
	ExpectWithOffset(1, k8sClient.Get(context.Background(), key, ma)).To(Succeed())
	return ma
}

func conditionOf(ma *memoryv1alpha1.MemoryAdapter, t string) metav1.Condition {
	if c := meta.FindStatusCondition(ma.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// kstatusOf is what kstatus (sigs.k8s.io/cli-utils, read by Flux and kpt) computes for the
// adapter as the API server serves it.
func kstatusOf(g Gomega, key types.NamespacedName) kstatus.Status {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(memoryv1alpha1.GroupVersion.WithKind("MemoryAdapter"))
	g.Expect(k8sClient.Get(context.Background(), key, u)).To(Succeed())
	res, err := kstatus.Compute(u)
	g.Expect(err).NotTo(HaveOccurred())
	return res.Status
}

// markAvailable plays the Deployment controller and kubelet: every replica updated and ready.
func markAvailable(ctx context.Context, key types.NamespacedName) {
	Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
		n := ptr.Deref(dep.Spec.Replicas, 1)
		dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		g.Expect(k8sClient.Status().Update(ctx, dep)).To(Succeed())
	}, timeout, poll).Should(Succeed())
}

func conformanceJobs(ctx context.Context, key types.NamespacedName) []batchv1.Job {
	jobs := &batchv1.JobList{}
	ExpectWithOffset(1, k8sClient.List(ctx, jobs, client.InNamespace(key.Namespace), client.MatchingLabels{render.LabelAdapter: key.Name, render.LabelComponent: render.ComponentConformance})).To(Succeed())
	return jobs.Items
}

// waitForNewJob returns the one conformance Job whose name is not in seen.
func waitForNewJob(ctx context.Context, key types.NamespacedName, seen ...string) batchv1.Job {
	return waitForNewJobWithin(ctx, key, timeout, seen...)
}

// waitForNewJobWithin is waitForNewJob with its own bound, for a Job the controller starts
// only after a backoff.
func waitForNewJobWithin(ctx context.Context, key types.NamespacedName, within time.Duration, seen ...string) batchv1.Job {
	var job batchv1.Job
	Eventually(func(g Gomega) {
		var fresh []batchv1.Job
		for _, j := range conformanceJobs(ctx, key) {
			if !slices.Contains(seen, j.Name) {
				fresh = append(fresh, j)
			}
		}
		g.Expect(fresh).To(HaveLen(1))
		job = fresh[0]
	}).WithTimeout(within).WithPolling(poll).Should(Succeed())
	return job
}

// realReport runs `memory-adapter conformance` as the Job would: the matrix on its own
// disposable SQLite file, plus the checks of the deployed adapter (the local server) against
// the manifest the controller wrote into the adapter's ConfigMap.
func realReport(ctx context.Context, key types.NamespacedName) []byte {
	return realReportAgainst(ctx, key, server.url, server.tokenFile)
}

// realReportAgainst is realReport with the deployed adapter at url, authenticated by the
// token in tokenFile.
func realReportAgainst(ctx context.Context, key types.NamespacedName, url, tokenFile string) []byte {
	cm := &corev1.ConfigMap{}
	Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-manifest"}, cm)).To(Succeed())
	dir := GinkgoT().TempDir()
	manifest := filepath.Join(dir, "manifest.json")
	Expect(os.WriteFile(manifest, []byte(cm.Data["manifest.json"]), 0o600)).To(Succeed())
	term := filepath.Join(dir, "termination-log")
	cmd := exec.CommandContext(ctx, adapterBin, "conformance", "--backend", "sqlite", "--adapter-id", "sqlite",
		"--supported-filters=branch_id,source", "--sqlite-path", filepath.Join(dir, "conformance.db"),
		"--server-url", url, "--server-token-file", tokenFile, "--expected-manifest-file", manifest,
		"--report-file=", "--termination-log", term)
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Run()).To(Succeed(), "the real conformance run must pass against the local adapter")
	b, err := os.ReadFile(term)
	Expect(err).NotTo(HaveOccurred())
	return b
}

// finishJob plays the Job controller and kubelet: a pod of the Job that terminated with the
// report as its termination message, and the Job's terminal conditions.
func finishJob(ctx context.Context, job batchv1.Job, report []byte, succeeded bool) {
	GinkgoHelper()
	now := metav1.Now()
	finishRunPod(ctx, job, report, succeeded, now)
	markJobFinished(ctx, job, succeeded, now)
}

// finishRunPod creates the run's pod with its container terminated and the report as its
// termination message, as the kubelet leaves it.
func finishRunPod(ctx context.Context, job batchv1.Job, report []byte, succeeded bool, now metav1.Time) {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-pod", Labels: map[string]string{}},
		Spec:       *job.Spec.Template.Spec.DeepCopy(),
	}
	for k, v := range job.Spec.Template.Labels {
		pod.Labels[k] = v
	}
	pod.Labels[batchv1.JobNameLabel] = job.Name
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	exit := int32(0)
	if !succeeded {
		exit = 1
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "conformance", Image: job.Spec.Template.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: string(report), StartedAt: now, FinishedAt: now}},
	}}}
	if !succeeded {
		pod.Status.Phase = corev1.PodFailed
	}
	Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
}

// markJobFinished sets the Job's status as the Job controller does once it counted the pod.
func markJobFinished(ctx context.Context, job batchv1.Job, succeeded bool, now metav1.Time) {
	GinkgoHelper()
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&job), &job)).To(Succeed())
	start := metav1.NewTime(now.Add(-10 * time.Second))
	job.Status.StartTime = &start
	if succeeded {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		}
	}
	Expect(k8sClient.Status().Update(ctx, &job)).To(Succeed())
}

// failingReport turns a passing report into one where the given cases failed.
func failingReport(passing []byte, ids ...conformance.CaseID) []byte {
	rep, err := conformance.ParseCompact(passing)
	Expect(err).NotTo(HaveOccurred())
	for i, c := range rep.Cases {
		if slices.Contains(ids, c.ID) {
			rep.Cases[i].Outcome, rep.Cases[i].Message = conformance.Failed, "planted failure"
			rep.Counts.Passed--
			rep.Counts.Failed++
		}
	}
	rep.Result = conformance.Failed
	b, err := json.Marshal(rep)
	Expect(err).NotTo(HaveOccurred())
	return b
}

// requestRerun sets the rerun annotation with a merge patch, as kubectl annotate does, so a
// status write by the controller in between cannot make it conflict.
func requestRerun(ctx context.Context, key types.NamespacedName, value string) {
	patch := []byte(`{"metadata":{"annotations":{"` + render.AnnotationRerunConformance + `":"` + value + `"}}}`)
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	ExpectWithOffset(1, k8sClient.Patch(ctx, ma, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// resourceVersions maps every object the adapter owns, and the adapter, to its version.
func resourceVersions(ctx context.Context, key types.NamespacedName) map[string]string {
	out := map[string]string{"adapter": getMA(key).ResourceVersion}
	for name, obj := range map[string]client.Object{
		"deployment": &appsv1.Deployment{}, "service": &corev1.Service{}, "serviceaccount": &corev1.ServiceAccount{},
		"networkpolicy": &networkingv1.NetworkPolicy{},
	} {
		ExpectWithOffset(1, k8sClient.Get(ctx, key, obj)).To(Succeed())
		out[name] = obj.GetResourceVersion()
	}
	for name, obj := range map[string]client.Object{"-binding": &corev1.Secret{}, "-manifest": &corev1.ConfigMap{}, "-data": &corev1.PersistentVolumeClaim{}} {
		ExpectWithOffset(1, k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + name}, obj)).To(Succeed())
		out[name] = obj.GetResourceVersion()
	}
	return out
}

var _ = Describe("the MemoryAdapter controller", Ordered, func() {
	var (
		ctx      context.Context
		stopMgr  func()
		key      types.NamespacedName
		passing  []byte
		seenJobs []string
	)

	BeforeAll(func() {
		ctx = context.Background()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "madp-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		key = types.NamespacedName{Namespace: ns.Name, Name: "mem"}
		stopMgr = startManager()
	})
	AfterAll(func() {
		if stopMgr != nil {
			stopMgr()
		}
	})

	It("creates the adapter's objects, owned by it and labelled alike", func() {
		Expect(k8sClient.Create(ctx, sqliteAdapter(key.Namespace, key.Name))).To(Succeed())
		ma := getMA(key)
		owned := func(g Gomega, obj client.Object) {
			g.Expect(metav1.IsControlledBy(obj, ma)).To(BeTrue(), "%s %s is not controlled by the adapter", obj.GetObjectKind(), obj.GetName())
			g.Expect(obj.GetLabels()).To(HaveKeyWithValue(render.LabelManagedBy, render.ManagedByValue))
			g.Expect(obj.GetLabels()).To(HaveKeyWithValue(render.LabelAdapter, key.Name))
		}
		Eventually(func(g Gomega) {
			for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ServiceAccount{}, &networkingv1.NetworkPolicy{}} {
				g.Expect(k8sClient.Get(ctx, key, obj)).To(Succeed())
				owned(g, obj)
			}
			sec := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-binding"}, sec)).To(Succeed())
			owned(g, sec)
			g.Expect(sec.Type).To(Equal(render.BindingSecretType))
			g.Expect(sec.Data).To(HaveKeyWithValue("url", []byte("https://mem."+key.Namespace+".svc:8080")))
			g.Expect(sec.Data["token"]).To(HaveLen(64))
			g.Expect(sec.Data).To(HaveKey("ca.crt"))
			tlsSec := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-tls"}, tlsSec)).To(Succeed())
			owned(g, tlsSec)
			g.Expect(tlsSec.Type).To(Equal(corev1.SecretTypeTLS))
			expectServingCertificate(g, tlsSec, sec.Data["ca.crt"], "mem."+key.Namespace+".svc")
			cm := &corev1.ConfigMap{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-manifest"}, cm)).To(Succeed())
			owned(g, cm)
			// deletionPolicy Retain: the data outlives the adapter, so the claim is not owned.
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-data"}, pvc)).To(Succeed())
			g.Expect(pvc.OwnerReferences).To(BeEmpty())
			g.Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
		}, timeout, poll).Should(Succeed())

		dep := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
		Expect(dep.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType), "one SQLite file has one writer")
		pod := dep.Spec.Template.Spec
		Expect(pod.AutomountServiceAccountToken).To(Equal(ptr.To(false)))
		c := pod.Containers[0]
		Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(Equal(ptr.To(true)))
		Expect(c.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
		Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/healthz"), "readiness is not the verdict: docs/operator.md#readiness-and-the-verdict")
		Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(strings.Join(c.Args, " ")).To(ContainSubstring("serve --backend sqlite --adapter-id sqlite --supported-filters=branch_id,source --scope agents"))
		By("serving HTTPS with the certificate the operator issued, which status describes")
		Expect(strings.Join(c.Args, " ")).To(ContainSubstring("--tls-cert-file " + render.TLSMountDir + "/tls.crt --tls-key-file " + render.TLSMountDir + "/tls.key"))
		Expect(c.ReadinessProbe.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS))
		Expect(c.VolumeMounts).To(ContainElement(HaveField("MountPath", render.TLSMountDir)))
		var st *memoryv1alpha1.TLSStatus
		Eventually(func(g Gomega) {
			st = getMA(key).Status.TLS
			g.Expect(st).NotTo(BeNil())
			g.Expect(st.Mode).To(Equal(memoryv1alpha1.TLSOperator))
			g.Expect(st.DNSNames).To(HaveExactElements("mem."+key.Namespace+".svc", "mem."+key.Namespace+".svc.cluster.local", "mem."+key.Namespace, "mem"))
			g.Expect(st.NotAfter.Time).To(BeTemporally("~", time.Now().Add(render.DefaultCertLifetime), time.Hour))
			g.Expect(st.RenewAfter.Time).To(BeTemporally("~", time.Now().Add(render.DefaultCertLifetime*2/3), time.Hour))
		}, timeout, poll).Should(Succeed())
		caSec := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, caRef, caSec)).To(Succeed())
		fp := sha256.Sum256(mustParseCert(caSec.Data["ca.crt"]).Raw)
		Expect(st.CAFingerprint).To(Equal(hex.EncodeToString(fp[:])))

		Eventually(func(g Gomega) {
			ma := getMA(key)
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionDeployed).Reason).To(Equal(memoryv1alpha1.ReasonDeploymentProgressing))
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ma.Status.Lifecycle).NotTo(BeNil())
			g.Expect(ma.Status.Lifecycle.RequestTimeout).To(Equal(memoryv1alpha1.NewDuration(5 * time.Second)))
			g.Expect(ma.Status.Binding).To(Equal(&memoryv1alpha1.BindingReference{Name: key.Name + "-binding"}))
			g.Expect(ma.Status.ObservedGeneration).To(Equal(ma.Generation))
			// What Flux, cli-utils and `kubectl wait --for=condition=Ready` read: not yet.
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(kstatusOf(g, key)).To(Equal(kstatus.InProgressStatus))
		}, timeout, poll).Should(Succeed())
	})

	It("reads evidence with the binding token and starts one conformance Job once deployed", func() {
		markAvailable(ctx, key)
		job := waitForNewJob(ctx, key)
		seenJobs = append(seenJobs, job.Name)
		Expect(job.Spec.BackoffLimit).To(Equal(ptr.To[int32](0)))
		Expect(job.Spec.ActiveDeadlineSeconds).To(Equal(ptr.To[int64](600)))
		args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
		Expect(args).To(ContainSubstring("--server-ca-file " + render.BindingMountDir + "/ca.crt --server-url https://mem." + key.Namespace + ".svc:8080"))
		Expect(args).To(ContainSubstring("--sqlite-path /tmp/conformance.db"))

		sec := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-binding"}, sec)).To(Succeed())
		Expect(evidence.lastToken(render.ServiceURL(getMA(key)))).To(Equal(string(sec.Data["token"])), "the token presented to this adapter's Service")
		Eventually(func(g Gomega) {
			ma := getMA(key)
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionDeployed).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionHealthy).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionConformant).Reason).To(Equal(memoryv1alpha1.ReasonConformanceRunning))
			g.Expect(ma.Status.ServiceVersion).NotTo(BeEmpty())
		}, timeout, poll).Should(Succeed())
	})

	It("records a real passing run: Conformant, Available and 17 cases", func() {
		passing = realReport(ctx, key)
		finishJob(ctx, waitForNewJob(ctx, key), passing, true)
		Eventually(func(g Gomega) {
			ma := getMA(key)
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionConformant).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ma.Status.Conformance).NotTo(BeNil())
			g.Expect(ma.Status.Conformance.Cases).To(HaveLen(17))
			g.Expect(ma.Status.Conformance.Passed + ma.Status.Conformance.NotApplicable).To(BeEquivalentTo(17))
			g.Expect(ma.Status.Conformance.JobName).To(Equal(seenJobs[0]))
			g.Expect(ma.Status.Conformance.ServiceVersion).To(Equal(ma.Status.ServiceVersion))
			ready := conditionOf(ma, memoryv1alpha1.ConditionReady)
			available := conditionOf(ma, memoryv1alpha1.ConditionAvailable)
			g.Expect([]string{string(ready.Status), ready.Reason, ready.Message}).To(Equal([]string{string(available.Status), available.Reason, available.Message}))
			g.Expect(meta.FindStatusCondition(ma.Status.Conditions, memoryv1alpha1.ConditionReconciling)).To(BeNil())
			g.Expect(meta.FindStatusCondition(ma.Status.Conditions, memoryv1alpha1.ConditionStalled)).To(BeNil())
			g.Expect(kstatusOf(g, key)).To(Equal(kstatus.CurrentStatus))
		}, timeout, poll).Should(Succeed())
	})

	It("recorded one Event per action and per condition transition on the way to Available", func() {
		list := &eventsv1.EventList{}
		Expect(k8sClient.List(ctx, list, client.InNamespace(key.Namespace))).To(Succeed())
		seen := map[string]int{}
		var lines []string
		for _, e := range list.Items {
			if e.Regarding.Kind != "MemoryAdapter" || e.Regarding.Name != key.Name {
				continue
			}
			n := 1
			if e.Series != nil {
				n = int(e.Series.Count)
			}
			k := e.Action + " " + e.Reason + ": " + e.Note
			seen[k] += n
			lines = append(lines, fmt.Sprintf("%dx %s", n, k))
		}
		Expect(seen).NotTo(BeEmpty())
		for k, n := range seen {
			// Each object is created once and each condition passes through each reason once
			// on this path, so any repeat is noise: the same transition recorded twice.
			Expect(n).To(Equal(1), "Event recorded %d times: %s\nall Events:\n%s", n, k, strings.Join(lines, "\n"))
		}
		fmt.Fprintf(GinkgoWriter, "%d Events on the way to Available:\n%s\n", len(lines), strings.Join(lines, "\n"))
		// Reasons name what happened to what (house style): never a bare "Created".
		reasons := map[string]bool{}
		for k := range seen {
			action, rest, _ := strings.Cut(k, " ")
			reason, _, _ := strings.Cut(rest, ":")
			reasons[reason] = true
			Expect(reason).NotTo(BeElementOf("Created", "Updated", "Deleted"), "a generic reason on %s: %s", action, k)
		}
		for _, want := range []string{"CreatedDeployment", "CreatedService", "CreatedBindingSecret"} {
			Expect(reasons).To(HaveKey(want), "all Events:\n%s", strings.Join(lines, "\n"))
		}
	})

	It("writes nothing while the adapter is steady", func() {
		before := resourceVersions(ctx, key)
		writes := managerWrites.Load()
		reads := evidence.reads()
		// Evidence is read every second; three periods of unchanged evidence must not move
		// any object, nor send any write (a no-op update or an Event would not show in the
		// resourceVersions).
		Consistently(func() map[string]string { return resourceVersions(ctx, key) }, 4*time.Second, 500*time.Millisecond).Should(Equal(before))
		Expect(managerWrites.Load()).To(Equal(writes), "the manager sent writes for a steady adapter")
		fmt.Fprintf(GinkgoWriter, "evidence reads in 4s with a 1s period: %d\n", evidence.reads()-reads)
		Expect(evidence.reads()-reads).To(BeNumerically(">=", 3), "the evidence is read every health period")
	})

	It("reaches the same decisions from a fresh start: a new manager, with none of the old one's memory, changes nothing", func() {
		// The Reconciler's maps (bindings applied, certificates issued, transitions announced,
		// purges finished) and the prober's state are caches of this process's own writes;
		// a new process starts from the cluster and status alone. Were any of them a source
		// of truth, the new manager would decide differently: re-issue a certificate, rewrite
		// status, announce a transition again or start a run.
		events := func() int {
			list := &eventsv1.EventList{}
			Expect(k8sClient.List(ctx, list, client.InNamespace(key.Namespace))).To(Succeed())
			n := 0
			for _, e := range list.Items {
				if e.Regarding.Kind == "MemoryAdapter" && e.Regarding.Name == key.Name {
					n++
					if e.Series != nil {
						n += int(e.Series.Count)
					}
				}
			}
			return n
		}
		// The binding Secret is applied once more by the new process (it keeps no record of
		// having applied it): its content must not change, its managedFields may.
		binding := func() map[string][]byte {
			sec := &corev1.Secret{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-binding"}, sec)).To(Succeed())
			return sec.Data
		}
		versions := func() map[string]string {
			v := resourceVersions(ctx, key)
			delete(v, "-binding")
			return v
		}
		before, secret, announced, jobs := versions(), binding(), events(), len(conformanceJobs(ctx, key))
		stopMgr()
		stopMgr = startManager()
		Consistently(versions, 5*time.Second, 500*time.Millisecond).Should(Equal(before))
		Expect(binding()).To(Equal(secret), "the fresh manager changed the binding")
		Expect(events()).To(Equal(announced), "the fresh manager announced a transition again")
		Expect(conformanceJobs(ctx, key)).To(HaveLen(jobs), "the fresh manager started a run")
	})

	It("reverts a hand edit of an owned object", func() {
		dep := &appsv1.Deployment{}
		Eventually(func() error { // the controller may write in between: retry on conflict
			if err := k8sClient.Get(ctx, key, dep); err != nil {
				return err
			}
			dep.Spec.Template.Spec.Containers[0].Args = []string{"serve", "--backend", "inmemory"}
			return k8sClient.Update(ctx, dep)
		}, timeout, poll).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
			g.Expect(strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " ")).To(ContainSubstring("--backend sqlite"))
		}, timeout, poll).Should(Succeed())
		markAvailable(ctx, key)
	})

	It("takes back an owned object that lost the managed-by label, which the cache does not hold, without a second one", func() {
		// As an object whose label was removed by hand: the cache holds only the operator's
		// labelled objects, so it sees the object go; ensure's create meets the existing one
		// and must adopt it, not fail on it or leave it unlabelled.
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			Eventually(func() error {
				if err := k8sClient.Get(ctx, key, obj); err != nil {
					return err
				}
				l := obj.GetLabels()
				delete(l, render.LabelManagedBy)
				obj.SetLabels(l)
				return k8sClient.Update(ctx, obj)
			}, timeout, poll).Should(Succeed())
			uid := obj.GetUID()
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, key, obj)).To(Succeed())
				g.Expect(obj.GetLabels()).To(HaveKeyWithValue(render.LabelManagedBy, render.ManagedByValue), "%T", obj)
				g.Expect(obj.GetUID()).To(Equal(uid), "%T was made again", obj)
			}, timeout, poll).Should(Succeed())
		}
		markAvailable(ctx, key)
	})

	It("never reads a Secret, and repairs a hand-edited binding token the adapter refuses", func() {
		secKey := types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-binding"}
		asManager, err := client.New(managerCfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(apierrors.IsForbidden(asManager.Get(ctx, secKey, &corev1.Secret{}))).To(BeTrue(),
			"the generated RBAC must not let the manager read the binding Secret")

		sec := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, secKey, sec)).To(Succeed())
		derived := string(sec.Data["token"])
		sec.Data["token"] = []byte("edited-by-hand")
		Expect(k8sClient.Update(ctx, sec)).To(Succeed())
		// The adapter serves with whatever token its Secret holds: it refuses the derived one
		// while the edit stands.
		evidence.setRefusal(func(token string) bool {
			cur := &corev1.Secret{}
			if err := k8sClient.Get(ctx, secKey, cur); err != nil {
				return true
			}
			return token != string(cur.Data["token"])
		})
		DeferCleanup(func() { evidence.setRefusal(nil) })
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, secKey, sec)).To(Succeed())
			g.Expect(string(sec.Data["token"])).To(Equal(derived))
		}, timeout, poll).Should(Succeed())
		evidence.setRefusal(nil)
		markAvailable(ctx, key)
	})

	It("rotates the token on spec.token.rotation: every pod accepts the next token before the binding switches, the previous one only through the grace period", func() {
		secKey := types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-binding"}
		binding := func(g Gomega) (string, []string) {
			sec := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, secKey, sec)).To(Succeed())
			return string(sec.Data["token"]), strings.Fields(string(sec.Data[render.AcceptedTokensKey]))
		}
		t0, accepted := binding(Default)
		Expect(accepted).To(Equal([]string{t0}))
		dep := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
		template := dep.Spec.Template.DeepCopy()

		By("the pods have not read the next token yet: they refuse it")
		var podsHaveNext atomic.Bool
		evidence.setRefusal(func(token string) bool { return token != t0 && !podsHaveNext.Load() })
		DeferCleanup(func() { evidence.setRefusal(nil) })
		ma := getMA(key)
		patch := client.MergeFrom(ma.DeepCopy())
		ma.Spec.Token = &memoryv1alpha1.TokenSpec{Rotation: "2026-12-04", GracePeriodSeconds: ptr.To[int32](3)}
		Expect(k8sClient.Patch(ctx, ma, patch)).To(Succeed())
		var t1 string
		Eventually(func(g Gomega) {
			st := getMA(key).Status.Token
			g.Expect(st).NotTo(BeNil())
			g.Expect(st.PendingRotation).To(Equal("2026-12-04"))
			token, accepted := binding(g)
			g.Expect(token).To(Equal(t0), "the binding switched before the pods accept the next token")
			g.Expect(accepted).To(HaveLen(2))
			g.Expect(accepted[0]).To(Equal(t0))
			t1 = accepted[1]
		}, timeout, poll).Should(Succeed())
		Expect(t1).NotTo(Equal(t0))
		Consistently(func(g Gomega) {
			token, _ := binding(g)
			g.Expect(token).To(Equal(t0))
		}).WithTimeout(3 * time.Second).WithPolling(300 * time.Millisecond).Should(Succeed())

		By("every pod accepts it: the binding switches, and the old token stays accepted")
		podsHaveNext.Store(true)
		Eventually(func(g Gomega) {
			st := getMA(key).Status.Token
			g.Expect(st.Rotation).To(Equal("2026-12-04"))
			g.Expect(st.PendingRotation).To(BeEmpty())
			g.Expect(st.RotatedAt).NotTo(BeNil())
			token, accepted := binding(g)
			g.Expect(token).To(Equal(t1))
			if st.PreviousExpiresAt != nil { // the 3 s grace may already be over
				g.Expect(accepted).To(Equal([]string{t1, t0}))
			}
		}, timeout, poll).Should(Succeed())

		By("after the grace period only the new token is accepted")
		Eventually(func(g Gomega) {
			g.Expect(getMA(key).Status.Token.PreviousExpiresAt).To(BeNil())
			_, accepted := binding(g)
			g.Expect(accepted).To(Equal([]string{t1}))
		}, timeout, poll).Should(Succeed())
		evidence.setRefusal(func(token string) bool { return token != t1 })
		Eventually(func() string { return evidence.lastToken(render.ServiceURL(getMA(key))) }, timeout, poll).Should(Equal(t1), "the operator reads evidence with the new token")
		Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
		Expect(dep.Spec.Template).To(Equal(*template), "a rotation must not roll the pods: the server re-reads its token file")
		evidence.setRefusal(nil)
		markAvailable(ctx, key)
	})

	It("gives each ServiceAccount of spec.access a token and Secret of its own, and lists it in status.access once every pod enforces its grant", func() {
		keySec := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, tokenKeyRef, keySec)).To(Succeed())
		ma := getMA(key)
		rotation := ma.Status.Token.Rotation
		accepted := func(g Gomega) []string {
			sec := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-binding"}, sec)).To(Succeed())
			return strings.Split(strings.TrimSpace(string(sec.Data[render.AcceptedTokensKey])), "\n")
		}
		By("the pods have not read the new token file yet: they refuse its check token")
		var podsHaveIt atomic.Bool
		own := render.DeriveToken(keySec.Data["key"], ma, rotation)
		evidence.setRefusal(func(token string) bool { return token != own && !podsHaveIt.Load() })
		DeferCleanup(func() { evidence.setRefusal(nil) })
		patch := client.MergeFrom(ma.DeepCopy())
		ma.Spec.Access = &memoryv1alpha1.AccessSpec{ServiceAccounts: []memoryv1alpha1.ServiceAccountAccess{
			{Name: "recaller", Rights: memoryv1alpha1.AccessReadOnly, SubScope: "plans"},
			{Name: "planner", Rights: memoryv1alpha1.AccessReadWrite, SubScope: "plans"},
		}}
		Expect(k8sClient.Patch(ctx, ma, patch)).To(Succeed())
		digest := func(sa string) string {
			sum := sha256.Sum256([]byte(render.DeriveAccessToken(keySec.Data["key"], ma, rotation, sa)))
			return "sha256:" + hex.EncodeToString(sum[:])
		}
		Eventually(func(g Gomega) {
			for _, sa := range []string{"planner", "recaller"} {
				sec := &corev1.Secret{}
				g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-binding." + sa}, sec)).To(Succeed())
				g.Expect(metav1.IsControlledBy(sec, ma)).To(BeTrue())
				g.Expect(sec.Type).To(Equal(render.BindingSecretType))
				g.Expect(string(sec.Data["token"])).To(Equal(render.DeriveAccessToken(keySec.Data["key"], ma, rotation, sa)))
				g.Expect(sec.Data).To(HaveKey("ca.crt"))
				g.Expect(sec.Data).NotTo(HaveKey(render.AcceptedTokensKey), "a ServiceAccount's Secret holds no other token")
			}
			lines := accepted(g)
			g.Expect(lines).To(HaveLen(4))
			g.Expect(lines[0]).To(Equal(render.DeriveToken(keySec.Data["key"], ma, rotation) + " read-only sub-scope=" + render.VerificationSubScope))
			g.Expect(lines[1]).To(Equal(digest("planner") + " sub-scope=plans"))
			g.Expect(lines[2]).To(Equal(digest("recaller") + " read-only sub-scope=plans"))
			g.Expect(lines[3]).To(HaveSuffix(" read-only sub-scope=" + render.VerificationSubScope))
		}, timeout, poll).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(getMA(key).Status.Access).To(BeNil(), "status.access before any pod accepts the check token")
		}).WithTimeout(3 * time.Second).WithPolling(300 * time.Millisecond).Should(Succeed())

		By("the manifest claims what spec.access makes the adapter enforce (governance/v1)")
		Eventually(func(g Gomega) {
			dep := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
			g.Expect(dep.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--access-control"))
			g.Expect(getMA(key).PublishedManifest().Governance()).To(Equal(&memory.GovernanceV1{ReadOnly: true, Isolation: true}))
		}, timeout, poll).Should(Succeed())

		By("every pod accepts the check token: status.access lists both")
		podsHaveIt.Store(true)
		Eventually(func(g Gomega) {
			st := getMA(key).Status.Access
			g.Expect(st).NotTo(BeNil())
			g.Expect(st.ServiceAccounts).To(Equal([]string{"planner", "recaller"}))
		}, timeout, poll).Should(Succeed())

		By("removing spec.access removes status.access and the grants from the token file")
		ma = getMA(key)
		patch = client.MergeFrom(ma.DeepCopy())
		ma.Spec.Access = nil
		Expect(k8sClient.Patch(ctx, ma, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getMA(key).Status.Access).To(BeNil())
			g.Expect(accepted(g)).To(Equal([]string{render.DeriveToken(keySec.Data["key"], ma, rotation)}))
		}, timeout, poll).Should(Succeed())
		// spec.access put --access-control in the pod template (the manifest's governance
		// claim) and took it out again: the Deployment rolled twice.
		Eventually(func(g Gomega) {
			dep := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
			g.Expect(dep.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement("--access-control"))
		}, timeout, poll).Should(Succeed())
		markAvailable(ctx, key)
	})

	It("reports a failing run with its case ids", func() {
		requestRerun(ctx, key, "1")
		job := waitForNewJob(ctx, key, seenJobs...)
		seenJobs = append(seenJobs, job.Name)
		// The last verdict stands while the rerun is under way.
		Expect(conditionOf(getMA(key), memoryv1alpha1.ConditionConformant).Status).To(Equal(metav1.ConditionTrue))
		finishJob(ctx, job, failingReport(passing, "limit", "consistency"), false)
		Eventually(func(g Gomega) {
			ma := getMA(key)
			c := conditionOf(ma, memoryv1alpha1.ConditionConformant)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(memoryv1alpha1.ReasonConformanceFailed))
			g.Expect(c.Message).To(ContainSubstring("limit, consistency"))
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionFalse))
			// A failed case waits for a person: Stalled, which kstatus calls Failed.
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionStalled).Reason).To(Equal(memoryv1alpha1.ReasonConformanceFailed))
			g.Expect(kstatusOf(g, key)).To(Equal(kstatus.FailedStatus))
		}, timeout, poll).Should(Succeed())

		By("the failed run is retried by itself after the first backoff (a minute), with no rerun asked")
		job = waitForNewJobWithin(ctx, key, 100*time.Second, seenJobs...)
		seenJobs = append(seenJobs, job.Name)
		finishJob(ctx, job, passing, true)
		Eventually(func(g Gomega) {
			g.Expect(conditionOf(getMA(key), memoryv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
		}, timeout, poll).Should(Succeed())
	})

	It("waits for the report of a Job seen finished before its pod, instead of recording the pod as gone", func() {
		requestRerun(ctx, key, "job-before-pod")
		job := waitForNewJob(ctx, key, seenJobs...)
		seenJobs = append(seenJobs, job.Name)
		now := metav1.Now()
		By("finishing the Job first: the order a cache may deliver them in")
		markJobFinished(ctx, job, true, now)
		Consistently(func(g Gomega) {
			c := getMA(key).Status.Conformance
			g.Expect(c.JobName).NotTo(Equal(job.Name), "a run was recorded before its report arrived: %+v", c)
		}).WithTimeout(3 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		By("then the pod with its report")
		finishRunPod(ctx, job, passing, true, now)
		Eventually(func(g Gomega) {
			ma := getMA(key)
			g.Expect(ma.Status.Conformance.JobName).To(Equal(job.Name))
			g.Expect(ma.Status.Conformance.Message).To(BeEmpty())
			g.Expect(ma.Status.Conformance.Passed).To(BeNumerically(">", 0))
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
		}, timeout, poll).Should(Succeed())
	})

	It("withdraws Available on a service version change, runs exactly one new Job, and survives a manager restart", func() {
		verified := getMA(key).Status.Conformance.ServiceVersion
		const upgraded = "9.99.0-upgraded"
		// What the real server reports after its backend moved: the new version, and its
		// own sticky invalidation.
		evidence.setMutation(func(ev *memory.EvidenceReport) {
			ev.InitialServiceVersion = ev.ServiceVersion
			ev.ServiceVersion = upgraded
			ev.ManifestValid = false
			ev.Reason = "service version changed from " + ev.InitialServiceVersion + " to " + upgraded
		})
		Eventually(func(g Gomega) {
			ma := getMA(key)
			c := conditionOf(ma, memoryv1alpha1.ConditionAvailable)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring(verified))
			g.Expect(c.Message).To(ContainSubstring(upgraded))
			h := conditionOf(ma, memoryv1alpha1.ConditionHealthy)
			g.Expect(h.Reason).To(Equal(memoryv1alpha1.ReasonServiceVersionChanged))
		}, timeout, poll).Should(Succeed())
		job := waitForNewJob(ctx, key, seenJobs...)
		seenJobs = append(seenJobs, job.Name)
		Consistently(func() []batchv1.Job { return conformanceJobs(ctx, key) }, 3*time.Second, 250*time.Millisecond).
			Should(ContainElement(HaveField("ObjectMeta.Name", job.Name)))

		By("restarting the manager while the run is under way")
		count := func() int {
			n := 0
			for _, j := range conformanceJobs(ctx, key) {
				if done, _ := runs.JobFinished(&j); !done {
					n++
				}
			}
			return n
		}
		Expect(count()).To(Equal(1))
		stopMgr()
		stopMgr = startManager()
		Consistently(count, 4*time.Second, 250*time.Millisecond).Should(Equal(1), "a restarted manager must find the running Job, not create another")

		By("finishing the run for the new version: the stale instance is restarted")
		finishJob(ctx, job, passing, true)
		Eventually(func(g Gomega) {
			dep := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
			g.Expect(dep.Spec.Template.Annotations).To(HaveKeyWithValue(render.AnnotationRestartedFor, upgraded))
			g.Expect(getMA(key).Status.Conformance.ServiceVersion).To(Equal(upgraded))
		}, timeout, poll).Should(Succeed())
		// The fresh instance starts on the new version and publishes a valid manifest.
		evidence.setMutation(func(ev *memory.EvidenceReport) {
			ev.ServiceVersion, ev.InitialServiceVersion = upgraded, upgraded
		})
		markAvailable(ctx, key)
		Eventually(func(g Gomega) {
			ma := getMA(key)
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ma.Status.ServiceVersion).To(Equal(upgraded))
		}, timeout, poll).Should(Succeed())
		Expect(len(conformanceJobs(ctx, key))).To(BeNumerically("<=", 3), "history keeps the last few runs")
	})

	It("turns Healthy False when the evidence cannot be read", func() {
		evidence.setMutation(nil)
		server.stop()
		Eventually(func(g Gomega) {
			c := conditionOf(getMA(key), memoryv1alpha1.ConditionHealthy)
			g.Expect(c.Reason).To(Equal(memoryv1alpha1.ReasonEvidenceUnreachable))
			g.Expect(c.Message).To(ContainSubstring("3 consecutive reads"))
		}, timeout, poll).Should(Succeed())
	})
})
