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
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/conditions"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/health"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/runs"
)

// ensure creates obj or brings the fields mutate sets back to what they should be, with the
// adapter as controlling owner (unless owned is false). It writes only when something
// differs, so a steady adapter causes no writes, and a hand edit of an owned object is
// reverted on the next reconcile.
func (r *Reconciler) ensure(ctx context.Context, s *scope, obj client.Object, owned bool, mutate func()) error {
	res, err := r.createOrUpdate(ctx, s, obj, owned, mutate)
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
	s.deploy = conditions.DeployObservation{Replicas: s.settings.Replicas, BackendSecret: render.BackendSecretName(s.ma)}
	errs := r.ensureSupportingObjects(ctx, s)
	if s.deploy.SpecErr != nil || s.token == "" {
		return errors.Join(errs...)
	}
	if err := r.ensureServingCertificate(ctx, s); err != nil {
		// No Deployment without its certificate: the pods could not mount it.
		return errors.Join(append(errs, err)...)
	}
	dep, err := r.ensureDeployment(ctx, s)
	errs = append(errs, err)
	if (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) && dep.CreationTimestamp.IsZero() {
		// Admission refused what the spec renders to (an image the installation does not
		// allow, a request above its limit in spec.template): Deployed carries the API
		// server's words, which name what to change.
		s.deploy.SpecErr = fmt.Errorf("the API server refused the adapter's Deployment: %w", err)
	}
	if dep.CreationTimestamp.IsZero() {
		return errors.Join(errs...)
	}
	s.deploy.Deployment = dep
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, ofAdapter(s.ma.Namespace, s.ma.Name, render.SelectorLabels(s.ma))...); err != nil {
		errs = append(errs, fmt.Errorf("list adapter pods: %w", err))
	}
	s.deploy.Pods = pods.Items
	errs = append(errs, r.observeNodes(ctx, s))
	return errors.Join(errs...)
}

// ensureSupportingObjects ensures what the adapter's Deployment relies on, and records in s
// the binding's tokens and any spec value that cannot become an object. It goes on past a
// failed object, so that one error does not hold back the others, and returns every error.
func (r *Reconciler) ensureSupportingObjects(ctx context.Context, s *scope) []error {
	ma := s.ma
	want := render.ServiceAccount(ma)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: ma.Namespace}}
	errs := []error{r.ensure(ctx, s, sa, true, func() { sa.AutomountServiceAccountToken = want.AutomountServiceAccountToken })}

	tokens, err := r.ensureBinding(ctx, s)
	errs = append(errs, err)
	s.token, s.nextToken = tokens.Current, tokens.Next
	if s.nextToken == "" {
		// No rotation pending: the prober presents the access check token instead, so that
		// its reads tell when every pod enforces spec.access as it stands.
		s.nextToken = tokens.AccessCheck
	}
	if tokens.Status != nil {
		s.ma.Status.Token = tokens.Status
	}

	manifestJSON, err := json.Marshal(ma.PublishedManifest())
	errs = append(errs, err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: render.ManifestName(ma), Namespace: ma.Namespace}}
	errs = append(errs, r.ensure(ctx, s, cm, true, func() { cm.Data = map[string]string{"manifest.json": string(manifestJSON)} }))

	wantSvc := render.Service(ma)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: wantSvc.Name, Namespace: ma.Namespace}}
	errs = append(errs, r.ensure(ctx, s, svc, true, func() {
		svc.Spec.Type = wantSvc.Spec.Type
		svc.Spec.Selector = wantSvc.Spec.Selector
		if !equality.Semantic.DeepDerivative(wantSvc.Spec.Ports, svc.Spec.Ports) {
			svc.Spec.Ports = wantSvc.Spec.Ports
		}
	}))

	wantNP := render.NetworkPolicy(ma, r.OperatorNamespace, r.MonitoringNamespace)
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: wantNP.Name, Namespace: ma.Namespace}}
	errs = append(errs, r.ensure(ctx, s, np, true, func() {
		// DeepDerivative takes a shorter slice for a prefix of a longer one: a metrics rule the
		// installation no longer wants would survive it, so the rule count is compared too.
		if len(wantNP.Spec.Ingress) != len(np.Spec.Ingress) || !equality.Semantic.DeepDerivative(wantNP.Spec, np.Spec) {
			np.Spec = wantNP.Spec
		}
	}))

	errs = append(errs, r.reconcileDisruptionBudget(ctx, s))

	if render.UsesDataClaim(ma) {
		if want, err := render.DataClaim(ma); err != nil {
			s.deploy.SpecErr = err
		} else {
			errs = append(errs, r.ensureDataClaim(ctx, s, want))
		}
	}
	if err := errors.Join(render.BackendErr(ma), render.LifecycleErr(ma.Spec.Backend.Type, ma.Spec.Lifecycle)); err != nil {
		s.deploy.SpecErr = err
	}
	return errs
}

// ensureDeployment brings the adapter's Deployment to the rendered one. An existing
// Deployment keeps the fields the API server defaulted: only the replicas, the strategy and
// the template are compared, and only what the render sets, so a steady adapter is not
// rewritten on every reconcile.
func (r *Reconciler) ensureDeployment(ctx context.Context, s *scope) (*appsv1.Deployment, error) {
	wantDep := render.Deployment(s.ma, s.settings)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: wantDep.Name, Namespace: s.ma.Namespace}}
	err := r.ensure(ctx, s, dep, true, func() {
		// A restart ordered after a verified version change, or on a read-only volume, stays
		// in the template.
		for _, a := range []string{render.AnnotationRestartedFor, render.AnnotationRestartedForReadOnly} {
			if v := dep.Spec.Template.Annotations[a]; v != "" {
				wantDep.Spec.Template.Annotations[a] = v
			}
		}
		if dep.CreationTimestamp.IsZero() {
			dep.Spec = wantDep.Spec
			return
		}
		dep.Spec.Replicas = wantDep.Spec.Replicas
		if !equality.Semantic.DeepDerivative(wantDep.Spec.Strategy, dep.Spec.Strategy) {
			dep.Spec.Strategy = wantDep.Spec.Strategy
		}
		if !equality.Semantic.DeepDerivative(wantDep.Spec.Template, dep.Spec.Template) || render.PlacementDiffers(wantDep.Spec.Template, dep.Spec.Template) {
			dep.Spec.Template = wantDep.Spec.Template
		}
	})
	return dep, err
}

// annotationSelectedNode is the scheduler's record, on a claim of a WaitForFirstConsumer
// class (local-path), of the node its volume was provisioned on.
const annotationSelectedNode = "volume.kubernetes.io/selected-node"

// observeNodes reads, from the cache, the nodes the adapter's pods and its data claim are on,
// so Deployed can name a lost node instead of a bare "0 of 1 available".
func (r *Reconciler) observeNodes(ctx context.Context, s *scope) error {
	var names []string
	if c := s.deploy.Claim; c != nil && c.Node != "" {
		names = append(names, c.Node)
	}
	for _, p := range s.deploy.Pods {
		if p.Spec.NodeName != "" && !slices.Contains(names, p.Spec.NodeName) {
			names = append(names, p.Spec.NodeName)
		}
	}
	if len(names) == 0 {
		return nil
	}
	s.deploy.Nodes = make(map[string]conditions.NodeObservation, len(names))
	for _, name := range names {
		n := &corev1.Node{}
		err := r.Client.Get(ctx, types.NamespacedName{Name: name}, n)
		if apierrors.IsNotFound(err) {
			s.deploy.Nodes[name] = conditions.NodeObservation{Gone: true}
			continue
		}
		if err != nil {
			return fmt.Errorf("get node %s: %w", name, err)
		}
		obs := conditions.NodeObservation{}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				obs = conditions.NodeObservation{Ready: c.Status == corev1.ConditionTrue, Reason: c.Reason, Message: c.Message}
			}
		}
		s.deploy.Nodes[name] = obs
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
	err := r.getCached(ctx, types.NamespacedName{Namespace: s.ma.Namespace, Name: render.DisruptionBudgetName(s.ma)}, pdb)
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
			s.deploy.Claim = &conditions.ClaimObservation{Name: pvc.Name, Node: pvc.Annotations[annotationSelectedNode]}
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
	deployed := conditions.Deployed(s.deploy).Status == metav1.ConditionTrue
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
		spec.Endpoints = health.PodEndpoints(s.deploy.Pods, render.URLScheme(s.ma), render.AdapterPort)
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
		ManifestHash: s.ma.PublishedManifestHash(),
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
	if r == nil || r.ManifestHash != ma.PublishedManifestHash() {
		return nil
	}
	return r
}

// reconcileConformance makes sure one run exists for the current key, records a finished
// run in status, restarts the adapter after a verified version change, and trims history.
// It reads what the decision needs, decides with no client, then acts on the decision.
func (r *Reconciler) reconcileConformance(ctx context.Context, s *scope) error {
	o, err := r.observeConformance(ctx, s)
	if err != nil {
		// Without the run's Job, Conformant is decided from the key and the last run alone.
		s.health.Verified = passedRun(o.last)
		s.conform = conditions.ConformObservation{Key: o.key, Last: o.last, Job: conditions.JobObservation{Name: o.name}}
		return err
	}
	return r.actConformance(ctx, s, o, decideConformance(o))
}

// conformInput is what the conform phase starts from, all of it known before any read.
type conformInput struct {
	// evidence is the adapter's last evidence; nil while none has been read.
	evidence *memory.EvidenceReport
	// mixed is set while the adapter's pods disagree on the versions.
	mixed string
	// last is status.conformance as the reconcile found it.
	last         *memoryv1alpha1.ConformanceResult
	manifestHash string
	// rerun is the rerun annotation's token, as a run records it.
	rerun    string
	interval time.Duration
	// deployed is Deployed being True: a run verifies a deployed adapter.
	deployed bool
	now      time.Time
}

// runKey returns the key of the run the evidence asks for, and whether that run may start.
func (in conformInput) runKey() (*render.RunKey, bool) {
	if in.evidence == nil {
		return nil, false
	}
	if in.evidence.ServiceVersion == "" || in.mixed != "" {
		// The adapter cannot reach its backend, so no version is known to verify (a run now
		// would only test the outage), or its pods disagree on the versions mid-rollout
		// (which one to verify is known once they agree). The last verdict stands, and
		// Healthy says why.
		if in.last == nil {
			return nil, false
		}
		return &render.RunKey{ManifestHash: in.manifestHash, ServiceVersion: in.last.ServiceVersion, AdapterVersion: in.last.AdapterVersion}, false
	}
	return &render.RunKey{ManifestHash: in.manifestHash, ServiceVersion: in.evidence.ServiceVersion, AdapterVersion: in.evidence.AdapterVersion}, true
}

// repeats reports whether the last run already verified key under the current rerun token,
// so the next one waits for the interval.
func (in conformInput) repeats(key render.RunKey) bool {
	return key.Matches(in.last) && in.last.RerunToken == in.rerun
}

// retrying reports whether the last run for key failed: its retry is timed by the history of
// failed runs.
func (in conformInput) retrying(key render.RunKey) bool {
	return in.repeats(key) && passedRun(in.last) == nil
}

// scheduleRun returns the seed of the next run's Job name and when that run is due (the zero
// time: now). history counts only while retrying.
func scheduleRun(in conformInput, key render.RunKey, history []batchv1.Job) (string, time.Time) {
	if !in.repeats(key) {
		return render.RunSeed(key, in.rerun, ""), time.Time{}
	}
	wait := in.interval
	if in.retrying(key) {
		// A failed or broken run is retried with backoff, not only after the interval: the
		// failure may have been the moment's (an instance being replaced, a backend
		// restarting), and one run should not leave Conformant False for a day.
		wait = min(wait, runs.FailedRunBackoff(history))
	}
	// The completion time is in the seed, so that a repeat is a new Job, not the finished one.
	return render.RunSeed(key, in.rerun, in.last.CompletionTime.UTC().Format(time.RFC3339)), in.last.CompletionTime.Add(wait)
}

// runObservation is what the conform phase read for the run the evidence asks for. The reads
// stop where the decision no longer needs them: the Job history only times the retry of a
// failed run, no Job is read before its run is due, and no pod of a Job that does not exist.
type runObservation struct {
	conformInput
	// key is the run key (see runKey); verify is whether its run may start.
	key    *render.RunKey
	verify bool
	// history is the adapter's conformance Jobs, read only while retrying.
	history []batchv1.Job
	// name is the run's Job and due when the run may start; name is empty until scheduled.
	name string
	due  time.Time
	// job is the run's Job; nil when it does not exist or was not read.
	job *batchv1.Job
	// pods are job's pods.
	pods []corev1.Pod
}

// observeConformance reads the cluster for the run the evidence asks for. On an error it
// returns what it had read so far.
func (r *Reconciler) observeConformance(ctx context.Context, s *scope) (runObservation, error) {
	ma := s.ma
	o := runObservation{conformInput: conformInput{
		evidence:     s.health.Evidence,
		mixed:        s.health.Mixed,
		last:         ma.Status.Conformance,
		manifestHash: ma.PublishedManifestHash(),
		rerun:        cond.Truncate(ma.Annotations[render.AnnotationRerunConformance], 63),
		interval:     s.settings.ConformanceInterval,
		deployed:     conditions.Deployed(s.deploy).Status == metav1.ConditionTrue,
		now:          s.now,
	}}
	o.key, o.verify = o.runKey()
	if !o.verify {
		return o, nil
	}
	if o.retrying(*o.key) {
		jobs, err := r.conformanceJobs(ctx, ma)
		if err != nil {
			return o, err
		}
		o.history = jobs
	}
	seed, due := scheduleRun(o.conformInput, *o.key, o.history)
	o.due = due
	if o.now.Before(o.due) {
		return o, nil
	}
	o.name = render.JobName(ma, seed)
	// Jobs are cached as metadata only (slimJobMetadata): the run's Job is read from the API
	// server, only while the run is due, runs or waits to be recorded.
	job := &batchv1.Job{}
	err := r.uncached().Get(ctx, types.NamespacedName{Namespace: ma.Namespace, Name: o.name}, job)
	switch {
	case apierrors.IsNotFound(err):
		return o, nil
	case err != nil:
		return o, fmt.Errorf("get conformance Job %s: %w", o.name, err)
	}
	o.job = job
	// The run's pods are read from the API server: the cache leaves conformance pods out
	// (CacheOptions). A run is read this way only while it runs or until it is recorded.
	pods := &corev1.PodList{}
	if err := r.uncached().List(ctx, pods, client.InNamespace(ma.Namespace),
		client.MatchingLabels{render.LabelAdapter: ma.Name, render.LabelComponent: render.ComponentConformance, batchv1.JobNameLabel: o.name}); err != nil {
		return o, fmt.Errorf("list pods of Job %s: %w", o.name, err)
	}
	o.pods = pods.Items
	return o, nil
}

// conformAction is what the conform phase does next.
type conformAction int

const (
	// conformIdle writes nothing: no run is wanted, or one runs (looked at again after
	// runs.RunningPoll), or it waits for the rollout.
	conformIdle conformAction = iota
	// conformNotDue keeps the last verdict until the next run is due; a run it verified may
	// still call for a restart.
	conformNotDue
	// conformStartRun creates the run's Job.
	conformStartRun
	// conformAwaitReport waits for the finished Job's pod to reach the cache.
	conformAwaitReport
	// conformRecordRun records the finished run in status.
	conformRecordRun
)

// conformDecision is what decideConformance made of a runObservation.
type conformDecision struct {
	action conformAction
	// conform is what Conformant is decided from; conformStartRun marks its Job running only
	// once it is created.
	conform conditions.ConformObservation
	// verified is the passing run Healthy holds the evidence to.
	verified *memoryv1alpha1.ConformanceResult
	// requeue is how soon to look again, for conformNotDue, conformAwaitReport and a running
	// run's conformIdle.
	requeue time.Duration
	// result and outcome are the run conformRecordRun records.
	result  *memoryv1alpha1.ConformanceResult
	outcome string
}

// decideConformance turns the conform phase's observation into its next action and what
// Conformant and Healthy are decided from. It touches neither the API server nor the clock.
func decideConformance(o runObservation) conformDecision {
	d := conformDecision{verified: passedRun(o.last)}
	if o.evidence == nil {
		return d
	}
	d.conform = conditions.ConformObservation{Key: o.key, Last: o.last}
	if !o.verify {
		return d
	}
	if o.now.Before(o.due) {
		d.action, d.requeue = conformNotDue, o.due.Sub(o.now)
		return d
	}
	d.conform.Job = conditions.JobObservation{Name: o.name, Phase: conditions.JobAbsent}
	if o.job == nil {
		if o.deployed {
			d.action = conformStartRun
		}
		// Else no run: a run verifies a deployed adapter, and the rollout event brings the
		// reconcile back.
		return d
	}
	finished, failMsg := runs.JobFinished(o.job)
	if !finished {
		d.conform.Job.Phase, d.requeue = conditions.JobRunning, runs.RunningPoll
		if msg := runs.BlockedReason(o.pods); msg != "" {
			d.conform.Job.Phase, d.conform.Job.Message = conditions.JobBlocked, msg
		}
		return d
	}
	if wait := runs.ReportWait(o.job, o.pods, o.now); wait > 0 {
		// The Job is seen finished before its pod's final status reached the cache (two
		// objects, two watches, no order between them): a wait, never a "pod is gone" verdict.
		d.conform.Job.Phase = conditions.JobRunning
		d.action, d.requeue = conformAwaitReport, wait
		return d
	}
	res := runs.ResultFromJob(o.job, o.pods, *o.key, o.rerun, failMsg, o.now)
	d.action, d.result, d.outcome = conformRecordRun, res, runOutcome(res)
	d.conform.Last, d.verified = res, passedRun(res)
	return d
}

// runOutcome is a finished run's label on memory_adapter_operator_conformance_runs_total.
func runOutcome(res *memoryv1alpha1.ConformanceResult) string {
	switch {
	case res.Passed == 0 && res.Failed == 0:
		return "broken"
	case passedRun(res) == nil:
		return "failed"
	}
	return "passed"
}

// actConformance carries out d: the phase's API writes, Events and metrics happen here and
// nowhere else.
func (r *Reconciler) actConformance(ctx context.Context, s *scope, o runObservation, d conformDecision) error {
	s.health.Verified, s.conform = d.verified, d.conform
	switch d.action {
	case conformIdle:
		if d.requeue > 0 {
			s.requeue(d.requeue)
		}
	case conformNotDue:
		s.requeue(d.requeue)
		return r.afterVerified(ctx, s, o.evidence)
	case conformStartRun:
		return r.startRun(ctx, s, o)
	case conformAwaitReport:
		s.requeue(d.requeue)
	case conformRecordRun:
		return r.recordRun(ctx, s, o, d)
	}
	return nil
}

// startRun creates the Job of o's run. A Job that already exists is the same run (its name is
// the run's seed), so creating it again is no error.
func (r *Reconciler) startRun(ctx context.Context, s *scope, o runObservation) error {
	job := render.ConformanceJob(s.ma, s.settings, o.name, *o.key, o.rerun)
	if err := controllerutil.SetControllerReference(s.ma, job, r.Client.Scheme()); err != nil {
		return fmt.Errorf("own Job %s: %w", o.name, err)
	}
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create conformance Job %s: %w", o.name, err)
	}
	s.conform.Job.Phase = conditions.JobRunning
	r.Recorder.Eventf(s.ma, job, corev1.EventTypeNormal, "ConformanceStarted", "CreateJob", "job %s runs the matrix for %s", o.name, *o.key)
	return nil
}

// recordRun writes the finished run to status and its metrics, looks again after the
// interval, and then trims the history and restarts the adapter if the run calls for it.
func (r *Reconciler) recordRun(ctx context.Context, s *scope, o runObservation, d conformDecision) error {
	res := d.result
	s.ma.Status.Conformance = res
	// A reconcile from a cached copy older than the status patch that recorded this run sees
	// it unrecorded again: status is written again (the same), but the run is counted and
	// announced once.
	if r.announcements(s.ma).recordedRun(o.name) {
		conformanceRuns.WithLabelValues(d.outcome).Inc()
		if o.job.Status.StartTime != nil {
			conformanceDuration.Observe(res.CompletionTime.Sub(o.job.Status.StartTime.Time).Seconds())
		}
		r.Recorder.Eventf(s.ma, o.job, eventType(d.outcome == "passed"), "ConformanceFinished", "RecordRun", "job %s %s: %d passed, %d failed, %d not applicable", o.name, d.outcome, res.Passed, res.Failed, res.NotApplicable)
	}
	s.requeue(s.settings.ConformanceInterval)
	if d.verified == nil {
		// A failed or broken run is retried after its backoff (scheduleRun), and nothing else
		// may bring a steady adapter's reconcile back before the interval: look again when the
		// first retry could be due, and the retry's own due time is computed then. Without
		// this, a failed run waited for an unrelated event (a run broken on the local cluster
		// went unretried for 8 minutes).
		s.requeue(runs.FirstRetry)
	}
	return errors.Join(r.trimHistory(ctx, s, o.name), r.afterVerified(ctx, s, o.evidence))
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
	dep := s.deploy.Deployment
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

// conformanceJobs reads the adapter's conformance Jobs from the API server (the cache holds
// their metadata only): to time a failed run's retry, and to trim the history once a run is
// recorded.
func (r *Reconciler) conformanceJobs(ctx context.Context, ma *memoryv1alpha1.MemoryAdapter) ([]batchv1.Job, error) {
	jobs := &batchv1.JobList{}
	if err := r.uncached().List(ctx, jobs, client.InNamespace(ma.Namespace),
		client.MatchingLabels{render.LabelAdapter: ma.Name, render.LabelComponent: render.ComponentConformance}); err != nil {
		return nil, fmt.Errorf("list conformance Jobs: %w", err)
	}
	return jobs.Items, nil
}

// trimHistory deletes finished conformance Jobs beyond the newest JobHistory.
func (r *Reconciler) trimHistory(ctx context.Context, s *scope, current string) error {
	keep := r.JobHistory
	if keep <= 0 {
		keep = 3
	}
	jobs, err := r.conformanceJobs(ctx, s.ma)
	if err != nil {
		return err
	}
	var finished []batchv1.Job
	for _, j := range jobs {
		if done, _ := runs.JobFinished(&j); done && j.Name != current && metav1.IsControlledBy(&j, s.ma) {
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
