package memoryadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/health"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// ensure creates obj or brings the fields mutate sets back to what they should be, with the
// adapter as controlling owner (unless owned is false). It writes only when something
// differs, so a steady adapter causes no writes, and a hand edit of an owned object is
// reverted on the next reconcile.
func (r *Reconciler) ensure(ctx context.Context, s *scope, obj client.Object, owned bool, mutate func()) error {
	res, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
		mutate()
		l := obj.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range render.CommonLabels(s.ma) {
			l[k] = v
		}
		obj.SetLabels(l)
		if !owned {
			return nil
		}
		return controllerutil.SetControllerReference(s.ma, obj, r.Client.Scheme())
	})
	kind := fmt.Sprintf("%T", obj)
	kind = kind[strings.LastIndex(kind, ".")+1:]
	if err != nil {
		return fmt.Errorf("ensure %s %s: %w", kind, obj.GetName(), err)
	}
	// The reason names the kind (CreatedDeployment, UpdatedService): a reader filtering
	// Events by reason sees which object changed without parsing the message.
	switch res {
	case controllerutil.OperationResultCreated:
		r.Recorder.Eventf(s.ma, obj, corev1.EventTypeNormal, "Created"+kind, "Create", "created %s %s", kind, obj.GetName())
	case controllerutil.OperationResultUpdated:
		r.Recorder.Eventf(s.ma, obj, corev1.EventTypeNormal, "Updated"+kind, "Update", "brought %s %s back to the desired state", kind, obj.GetName())
	}
	return nil
}

// reconcileDeploy makes the adapter's objects exist as the spec says and observes the
// rollout.
func (r *Reconciler) reconcileDeploy(ctx context.Context, s *scope) error {
	ma := s.ma
	s.deploy = deployObservation{replicas: s.settings.Replicas, backendSecret: render.BackendSecretName(ma)}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	want := render.ServiceAccount(ma)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: ma.Namespace}}
	add(r.ensure(ctx, s, sa, true, func() { sa.AutomountServiceAccountToken = want.AutomountServiceAccountToken }))

	tokens, err := r.ensureBinding(ctx, s)
	add(err)
	s.token, s.nextToken = tokens.Current, tokens.Next
	if tokens.Status != nil {
		s.ma.Status.Token = tokens.Status
	}
	token := tokens.Current

	manifestJSON, err := json.Marshal(ma.Spec.Manifest.ToMemory())
	add(err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: render.ManifestName(ma), Namespace: ma.Namespace}}
	add(r.ensure(ctx, s, cm, true, func() { cm.Data = map[string]string{"manifest.json": string(manifestJSON)} }))

	wantSvc := render.Service(ma)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: wantSvc.Name, Namespace: ma.Namespace}}
	add(r.ensure(ctx, s, svc, true, func() {
		svc.Spec.Type = wantSvc.Spec.Type
		svc.Spec.Selector = wantSvc.Spec.Selector
		if !equality.Semantic.DeepDerivative(wantSvc.Spec.Ports, svc.Spec.Ports) {
			svc.Spec.Ports = wantSvc.Spec.Ports
		}
	}))

	wantNP := render.NetworkPolicy(ma, r.OperatorNamespace)
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: wantNP.Name, Namespace: ma.Namespace}}
	add(r.ensure(ctx, s, np, true, func() {
		if !equality.Semantic.DeepDerivative(wantNP.Spec, np.Spec) {
			np.Spec = wantNP.Spec
		}
	}))

	add(r.reconcileDisruptionBudget(ctx, s))

	if render.UsesDataClaim(ma) {
		if want, err := render.DataClaim(ma); err != nil {
			s.deploy.specErr = err
		} else {
			add(r.ensureDataClaim(ctx, s, want))
		}
	}
	if err := render.LifecycleErr(ma.Spec.Backend.Type, ma.Spec.Lifecycle); err != nil {
		s.deploy.specErr = err
	}
	if s.deploy.specErr != nil || token == "" {
		return errors.Join(errs...)
	}
	if err := r.ensureServingCertificate(ctx, s); err != nil {
		// No Deployment without its certificate: the pods could not mount it.
		return errors.Join(append(errs, err)...)
	}

	wantDep := render.Deployment(ma, s.settings)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: wantDep.Name, Namespace: ma.Namespace}}
	add(r.ensure(ctx, s, dep, true, func() {
		// A restart ordered after a verified version change stays in the template.
		if v := dep.Spec.Template.Annotations[render.AnnotationRestartedFor]; v != "" {
			wantDep.Spec.Template.Annotations[render.AnnotationRestartedFor] = v
		}
		if dep.CreationTimestamp.IsZero() {
			dep.Spec = wantDep.Spec
			return
		}
		dep.Spec.Replicas = wantDep.Spec.Replicas
		if !equality.Semantic.DeepDerivative(wantDep.Spec.Strategy, dep.Spec.Strategy) {
			dep.Spec.Strategy = wantDep.Spec.Strategy
		}
		if !equality.Semantic.DeepDerivative(wantDep.Spec.Template, dep.Spec.Template) {
			dep.Spec.Template = wantDep.Spec.Template
		}
	}))
	if dep.CreationTimestamp.IsZero() {
		return errors.Join(errs...)
	}
	s.deploy.deployment = dep
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, ofAdapter(ma.Namespace, ma.Name, render.SelectorLabels(ma))...); err != nil {
		errs = append(errs, fmt.Errorf("list adapter pods: %w", err))
	}
	s.deploy.pods = pods.Items
	add(r.observeNodes(ctx, s))
	return errors.Join(errs...)
}

// annotationSelectedNode is the scheduler's record, on a claim of a WaitForFirstConsumer
// class (local-path), of the node its volume was provisioned on.
const annotationSelectedNode = "volume.kubernetes.io/selected-node"

// observeNodes reads, from the cache, the nodes the adapter's pods and its data claim are on,
// so Deployed can name a lost node instead of a bare "0 of 1 available".
func (r *Reconciler) observeNodes(ctx context.Context, s *scope) error {
	var names []string
	if c := s.deploy.claim; c != nil && c.node != "" {
		names = append(names, c.node)
	}
	for _, p := range s.deploy.pods {
		if p.Spec.NodeName != "" && !slices.Contains(names, p.Spec.NodeName) {
			names = append(names, p.Spec.NodeName)
		}
	}
	if len(names) == 0 {
		return nil
	}
	s.deploy.nodes = make(map[string]nodeObservation, len(names))
	for _, name := range names {
		n := &corev1.Node{}
		err := r.Client.Get(ctx, types.NamespacedName{Name: name}, n)
		if apierrors.IsNotFound(err) {
			s.deploy.nodes[name] = nodeObservation{gone: true}
			continue
		}
		if err != nil {
			return fmt.Errorf("get node %s: %w", name, err)
		}
		obs := nodeObservation{}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				obs = nodeObservation{ready: c.Status == corev1.ConditionTrue, reason: c.Reason, message: c.Message}
			}
		}
		s.deploy.nodes[name] = obs
	}
	return nil
}

// reconcileDisruptionBudget keeps the adapter's PodDisruptionBudget while it runs several
// interchangeable replicas, and removes it when it no longer does (scaled to one, or a backend
// with a data claim): a budget over one pod would block every drain of its node.
func (r *Reconciler) reconcileDisruptionBudget(ctx context.Context, s *scope) error {
	want := render.DisruptionBudget(s.ma, s.settings.Replicas)
	if want != nil {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: s.ma.Namespace}}
		return r.ensure(ctx, s, pdb, true, func() {
			if !equality.Semantic.DeepDerivative(want.Spec, pdb.Spec) {
				pdb.Spec = want.Spec
			}
		})
	}
	pdb := &policyv1.PodDisruptionBudget{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.ma.Namespace, Name: render.DisruptionBudgetName(s.ma)}, pdb)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get PodDisruptionBudget: %w", err)
	}
	if !metav1.IsControlledBy(pdb, s.ma) {
		return nil
	}
	if err := r.Client.Delete(ctx, pdb); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete PodDisruptionBudget %s: %w", pdb.Name, err)
	}
	r.Recorder.Eventf(s.ma, pdb, corev1.EventTypeNormal, "DeletedPodDisruptionBudget", "Delete", "deleted PodDisruptionBudget %s: the adapter no longer runs several interchangeable replicas", pdb.Name)
	return nil
}

// ensureDataClaim keeps SQLite's claim. Under deletionPolicy Retain it is not owned, so
// deleting the MemoryAdapter leaves the data; under Delete the adapter owns it.
func (r *Reconciler) ensureDataClaim(ctx context.Context, s *scope, want *corev1.PersistentVolumeClaim) error {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: s.ma.Namespace}}
	owned := s.ma.Spec.DeletionPolicy == memoryv1alpha1.DeletionDelete
	defer func() {
		if !pvc.CreationTimestamp.IsZero() {
			s.deploy.claim = &claimObservation{name: pvc.Name, node: pvc.Annotations[annotationSelectedNode]}
		}
	}()
	return r.ensure(ctx, s, pvc, owned, func() {
		if pvc.CreationTimestamp.IsZero() {
			pvc.Spec = want.Spec
		}
		if !owned {
			// Switching to Retain releases the claim from the garbage collector.
			refs := slices.DeleteFunc(pvc.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == s.ma.UID })
			pvc.SetOwnerReferences(refs)
		}
	})
}

// reconcileHealth tells the prober what to read (each serving pod's address, the token, the
// period) and takes what it has read so far; status records it only when its content
// changes. No read happens here: a hung adapter costs a prober slot, never a worker.
func (r *Reconciler) reconcileHealth(_ context.Context, s *scope) error {
	deployed := deployedCondition(s.deploy).Status == metav1.ConditionTrue
	spec := health.Spec{
		Key: client.ObjectKeyFromObject(s.ma), Token: s.token, NextToken: s.nextToken, Period: s.settings.HealthPeriod, Threshold: s.settings.FailureThreshold,
		Immediate: s.ma.Spec.Manifest.SearchConsistency == memoryv1alpha1.SearchConsistency(memory.ConsistencyImmediate),
	}
	if r.ServiceURL != nil {
		if url := r.ServiceURL(s.ma); url != "" {
			spec.Endpoints = []health.Endpoint{{Name: "service", URL: url}}
		}
	}
	if spec.Endpoints == nil {
		spec.Endpoints = health.PodEndpoints(s.deploy.pods, render.URLScheme(s.ma), render.AdapterPort)
	}
	if render.UsesTLS(s.ma) {
		spec.ServerName = render.ServiceServerName(s.ma)
	}
	hs := r.Prober.Track(s.ma, spec)
	if hs.Unauthorized {
		// The binding Secret the adapter serves with no longer holds the derived token
		// (edited by hand, or the operator's key changed): apply it again.
		r.forgetBinding(s.ma)
	}
	addresses := hs.Addresses
	if addresses == "" {
		addresses = health.EndpointNames(spec.Endpoints)
	}
	if addresses == "" {
		addresses = "no running adapter pod"
	}
	s.health = health.Observation{
		Deployed:     deployed,
		Evidence:     hs.Evidence,
		Mixed:        hs.Mixed,
		Rehydrated:   hs.Rehydrated,
		LastSuccess:  hs.LastSuccess,
		Failures:     hs.Failures,
		LastErr:      hs.LastErr,
		URL:          addresses,
		ManifestHash: s.ma.Spec.Manifest.Hash(),
		Immediate:    spec.Immediate,
		Threshold:    s.settings.FailureThreshold,
		Grace:        s.settings.StalenessGrace,
		Now:          s.now,
	}
	if hs.Evidence != nil && !hs.Rehydrated {
		s.ma.Status.Evidence = health.EvidenceStatus(hs.Evidence, s.ma.Status.Evidence, s.health.Immediate, s.now)
		s.ma.Status.ServiceVersion = hs.Evidence.ServiceVersion
		s.ma.Status.AdapterVersion = hs.Evidence.AdapterVersion
	}
	// No requeue for health: a read that fails changes the failure count, and the prober
	// wakes the adapter for it, so staleness and unreachability are decided on time.
	return nil
}

// passedRun returns the run when it verified the manifest, else nil.
func passedRun(r *memoryv1alpha1.ConformanceResult) *memoryv1alpha1.ConformanceResult {
	if r == nil || r.Failed > 0 || r.Passed == 0 || r.Message != "" {
		return nil
	}
	return r
}

// VerifiedRun returns the passing conformance run that verified ma's spec.manifest (the run's
// manifest hash is the manifest's), or nil. spec.manifest is immutable, so that manifest is
// the verified manifest workloads are gated on.
func VerifiedRun(ma *memoryv1alpha1.MemoryAdapter) *memoryv1alpha1.ConformanceResult {
	r := passedRun(ma.Status.Conformance)
	if r == nil || r.ManifestHash != ma.Spec.Manifest.Hash() {
		return nil
	}
	return r
}

// reconcileConformance makes sure one run exists for the current key, records a finished
// run in status, restarts the adapter after a verified version change, and trims history.
func (r *Reconciler) reconcileConformance(ctx context.Context, s *scope) error {
	ma := s.ma
	ev := s.health.Evidence
	s.health.Verified = passedRun(ma.Status.Conformance)
	if ev == nil {
		return nil
	}
	last := ma.Status.Conformance
	s.conform.last = last
	if ev.ServiceVersion == "" || s.health.Mixed != "" {
		// The adapter cannot reach its backend, so no version is known to verify (a run now
		// would only test the outage), or its pods disagree on the versions mid-rollout
		// (which one to verify is known once they agree). The last verdict stands, and
		// Healthy says why.
		if last != nil {
			s.conform.key = &render.RunKey{ManifestHash: ma.Spec.Manifest.Hash(), ServiceVersion: last.ServiceVersion, AdapterVersion: last.AdapterVersion}
		}
		return nil
	}
	key := render.RunKey{ManifestHash: ma.Spec.Manifest.Hash(), ServiceVersion: ev.ServiceVersion, AdapterVersion: ev.AdapterVersion}
	s.conform.key = &key
	rerun := cond.Truncate(ma.Annotations[render.AnnotationRerunConformance], 63)

	after := ""
	if key.Matches(last) && last.RerunToken == rerun {
		wait := s.settings.ConformanceInterval
		if passedRun(last) == nil {
			// A failed or broken run is retried with backoff, not only after the interval: the
			// failure may have been the moment's (an instance being replaced, a backend
			// restarting), and one run should not leave Conformant False for a day.
			jobs := &batchv1.JobList{}
			if err := r.Client.List(ctx, jobs, ofAdapter(ma.Namespace, ma.Name, client.MatchingLabels{render.LabelAdapter: ma.Name, render.LabelComponent: render.ComponentConformance})...); err != nil {
				return fmt.Errorf("list conformance Jobs: %w", err)
			}
			wait = min(wait, failedRunBackoff(jobs.Items))
		}
		due := last.CompletionTime.Add(wait)
		if s.now.Before(due) {
			s.requeue(due.Sub(s.now))
			return r.afterVerified(ctx, s, ev)
		}
		after = last.CompletionTime.UTC().Format(time.RFC3339)
	}
	name := render.JobName(ma, render.RunSeed(key, rerun, after))
	s.conform.job = jobObservation{name: name, phase: jobAbsent}

	job := &batchv1.Job{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ma.Namespace, Name: name}, job)
	switch {
	case apierrors.IsNotFound(err):
		if deployedCondition(s.deploy).Status != metav1.ConditionTrue {
			return nil // a run verifies a deployed adapter; the rollout event brings us back
		}
		job = render.ConformanceJob(ma, s.settings, name, key, rerun)
		if err := controllerutil.SetControllerReference(ma, job, r.Client.Scheme()); err != nil {
			return fmt.Errorf("own Job %s: %w", name, err)
		}
		if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create conformance Job %s: %w", name, err)
		}
		s.conform.job.phase = jobRunning
		r.Recorder.Eventf(ma, job, corev1.EventTypeNormal, "ConformanceStarted", "CreateJob", "job %s runs the matrix for %s", name, key)
		return nil
	case err != nil:
		return fmt.Errorf("get conformance Job %s: %w", name, err)
	}

	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, ofAdapter(ma.Namespace, ma.Name, client.MatchingLabels{render.LabelAdapter: ma.Name, render.LabelComponent: render.ComponentConformance, batchv1.JobNameLabel: name})...); err != nil {
		return fmt.Errorf("list pods of Job %s: %w", name, err)
	}
	finished, failMsg := jobFinished(job)
	if !finished {
		s.conform.job.phase = jobRunning
		if msg := blockedReason(pods.Items); msg != "" {
			s.conform.job.phase, s.conform.job.message = jobBlocked, msg
		}
		return nil
	}
	if wait := reportWait(job, pods.Items, s.now); wait > 0 {
		// The Job is seen finished before its pod's final status reached the cache (two
		// objects, two watches, no order between them): a wait, never a "pod is gone" verdict.
		s.conform.job.phase = jobRunning
		s.requeue(wait)
		return nil
	}
	res := resultFromJob(job, pods.Items, key, rerun, failMsg, s.now)
	ma.Status.Conformance = res
	s.conform.last = res
	s.health.Verified = passedRun(res)
	outcome := "passed"
	switch {
	case res.Passed == 0 && res.Failed == 0:
		outcome = "broken"
	case passedRun(res) == nil:
		outcome = "failed"
	}
	conformanceRuns.WithLabelValues(outcome).Inc()
	if job.Status.StartTime != nil {
		conformanceDuration.Observe(res.CompletionTime.Sub(job.Status.StartTime.Time).Seconds())
	}
	r.Recorder.Eventf(ma, job, eventType(outcome == "passed"), "ConformanceFinished", "RecordRun", "job %s %s: %d passed, %d failed, %d not applicable", name, outcome, res.Passed, res.Failed, res.NotApplicable)
	s.requeue(s.settings.ConformanceInterval)
	return errors.Join(r.trimHistory(ctx, s, name), r.afterVerified(ctx, s, ev))
}

func eventType(ok bool) string {
	if ok {
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}

// afterVerified restarts the adapter pods when a run verified a service version the running
// instance did not start on: the server's invalidation on a version change is sticky by
// design, so only a fresh instance publishes against the verified version.
func (r *Reconciler) afterVerified(ctx context.Context, s *scope, ev *memory.EvidenceReport) error {
	run := passedRun(s.ma.Status.Conformance)
	if run == nil || ev.ManifestValid || ev.InitialServiceVersion == "" || ev.InitialServiceVersion == run.ServiceVersion || ev.ServiceVersion != run.ServiceVersion {
		return nil
	}
	dep := s.deploy.deployment
	if dep == nil || dep.Spec.Template.Annotations[render.AnnotationRestartedFor] == run.ServiceVersion {
		return nil
	}
	patch := client.MergeFrom(dep.DeepCopy())
	if dep.Spec.Template.Annotations == nil {
		dep.Spec.Template.Annotations = map[string]string{}
	}
	dep.Spec.Template.Annotations[render.AnnotationRestartedFor] = run.ServiceVersion
	if err := r.Client.Patch(ctx, dep, patch); err != nil {
		return fmt.Errorf("restart adapter pods: %w", err)
	}
	r.Recorder.Eventf(s.ma, dep, corev1.EventTypeNormal, "RestartedAdapter", "Restart",
		"restarted the adapter pods: job %s verified service version %q, and the running instance started on %q", run.JobName, run.ServiceVersion, ev.InitialServiceVersion)
	return nil
}

// jobFinished reports whether the Job ended, and why when it failed.
func jobFinished(job *batchv1.Job) (bool, string) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, ""
		case batchv1.JobFailed:
			return true, strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return false, ""
}

// failedRunRetry is the first retry delay of a failed run; each further consecutive failure
// doubles it, up to failedRunRetryMax (and never beyond spec.conformance.interval).
const (
	failedRunRetry    = time.Minute
	failedRunRetryMax = 16 * time.Minute
)

// failedRunBackoff returns the delay before retrying after the newest runs failed: 1m after
// one failure, then 2m, 4m, ... up to failedRunRetryMax, counting the consecutive failed Jobs
// from the newest (the history keeps a few, so the count and the delay saturate).
func failedRunBackoff(jobs []batchv1.Job) time.Duration {
	finished := slices.DeleteFunc(slices.Clone(jobs), func(j batchv1.Job) bool { done, _ := jobFinished(&j); return !done })
	slices.SortFunc(finished, func(a, b batchv1.Job) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	wait := failedRunRetry
	for i, j := range finished {
		if _, msg := jobFinished(&j); msg == "" {
			break // a Job that completed: the streak ends
		}
		if i > 0 {
			wait = min(2*wait, failedRunRetryMax)
		}
	}
	return wait
}

// reportGrace is how long after a Job finished the controller waits for a pod of it with a
// terminated container to show in its cache before it records the run as having no report.
// The kubelet writes the pod's final status before the Job controller counts the pod, so in
// a cluster the pod is normally there first; the grace covers watch delivery order and a
// manager that just restarted.
const reportGrace = 30 * time.Second

// reportWait returns how long to wait for the finished Job's report to reach the cache, or 0
// when a pod with a terminated container is there or the grace has passed.
func reportWait(job *batchv1.Job, pods []corev1.Pod, now time.Time) time.Duration {
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Terminated != nil {
				return 0
			}
		}
	}
	var finishedAt time.Time
	for _, c := range job.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			finishedAt = c.LastTransitionTime.Time
		}
	}
	if finishedAt.IsZero() {
		return 0
	}
	left := finishedAt.Add(reportGrace).Sub(now)
	if left <= 0 {
		return 0
	}
	return min(left, 2*time.Second)
}

// blockedReason names why a run's pod cannot start, or "" while it starts or runs normally.
func blockedReason(pods []corev1.Pod) string {
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return fmt.Sprintf("pod %s is unschedulable: %s", p.Name, c.Message)
			}
		}
		// An External run's server is an init container (a native sidecar), so its image pull
		// and its Secret references show there.
		for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			if w := cs.State.Waiting; w != nil {
				switch w.Reason {
				case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError":
					return fmt.Sprintf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
				}
			}
		}
	}
	return ""
}

// resultFromJob reads the compact report from the run pod's termination message. A Job that
// ended without one is recorded as a run with no case and the reason, so the interval and
// the rerun annotation apply to it as to any run.
func resultFromJob(job *batchv1.Job, pods []corev1.Pod, key render.RunKey, rerun, failMsg string, now time.Time) *memoryv1alpha1.ConformanceResult {
	res := &memoryv1alpha1.ConformanceResult{
		JobName: job.Name, ManifestHash: key.ManifestHash, ServiceVersion: cond.Truncate(key.ServiceVersion, 256),
		AdapterVersion: cond.Truncate(key.AdapterVersion, 256), RerunToken: rerun, CompletionTime: metav1.NewTime(now.Truncate(time.Second)),
	}
	if job.Status.CompletionTime != nil {
		res.CompletionTime = *job.Status.CompletionTime
	}
	var report *conformance.CompactReport
	var problem string
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil {
				continue
			}
			rep, err := conformance.ParseCompact([]byte(t.Message))
			if err == nil {
				report = rep
				break
			}
			problem = fmt.Sprintf("pod %s exited %d (%s) without a readable report: %v", p.Name, t.ExitCode, t.Reason, err)
		}
	}
	if report == nil {
		msg := failMsg
		if problem != "" {
			msg = strings.TrimPrefix(msg+"; "+problem, "; ")
		}
		if msg == "" {
			msg = "the run's pod is gone"
		}
		res.Message = cond.Truncate(msg, 1024)
		return res
	}
	known := map[memoryv1alpha1.ConformanceCaseID]bool{}
	for _, id := range memoryv1alpha1.AllConformanceCaseIDs {
		known[id] = true
	}
	for _, c := range report.Cases {
		id := memoryv1alpha1.ConformanceCaseID(c.ID)
		if !known[id] || len(res.Cases) >= 32 {
			continue
		}
		res.Cases = append(res.Cases, memoryv1alpha1.ConformanceCaseResult{ID: id, Outcome: memoryv1alpha1.ConformanceOutcome(c.Outcome), Message: cond.Truncate(c.Message, 1024)})
		switch c.Outcome {
		case conformance.Passed:
			res.Passed++
		case conformance.Failed:
			res.Failed++
		case conformance.NotApplicable:
			res.NotApplicable++
		}
	}
	if report.Result != conformance.Passed {
		msg := report.Error
		if msg == "" && res.Failed == 0 {
			msg = "the run reported Failed without a failing case"
		}
		res.Message = cond.Truncate(msg, 1024)
	}
	if len(res.Cases) != len(memoryv1alpha1.AllConformanceCaseIDs) && res.Message == "" && res.Failed == 0 {
		res.Message = fmt.Sprintf("the report holds %d of the %d matrix cases", len(res.Cases), len(memoryv1alpha1.AllConformanceCaseIDs))
	}
	return res
}

// trimHistory deletes finished conformance Jobs beyond the newest JobHistory.
func (r *Reconciler) trimHistory(ctx context.Context, s *scope, current string) error {
	keep := r.JobHistory
	if keep <= 0 {
		keep = 3
	}
	jobs := &batchv1.JobList{}
	if err := r.Client.List(ctx, jobs, ofAdapter(s.ma.Namespace, s.ma.Name, client.MatchingLabels{render.LabelAdapter: s.ma.Name, render.LabelComponent: render.ComponentConformance})...); err != nil {
		return fmt.Errorf("list conformance Jobs: %w", err)
	}
	var finished []batchv1.Job
	for _, j := range jobs.Items {
		if done, _ := jobFinished(&j); done && j.Name != current && metav1.IsControlledBy(&j, s.ma) {
			finished = append(finished, j)
		}
	}
	slices.SortFunc(finished, func(a, b batchv1.Job) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	var errs []error
	for i := keep - 1; i < len(finished); i++ {
		if err := r.Client.Delete(ctx, &finished[i], client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete old conformance Job %s: %w", finished[i].Name, err))
		}
	}
	return errors.Join(errs...)
}
