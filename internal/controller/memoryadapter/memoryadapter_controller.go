package memoryadapter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/conditions"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/health"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/intern"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/pki"

	// The built-in backends register the operator's side of the table render reads; the
	// manager links none of their drivers.
	_ "github.com/agentmem/memory-adapter-operator/internal/backends/deploy"
)

// Reconciler deploys, verifies and watches MemoryAdapters.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server, past the cache: the cache holds the adapter's
	// Deployment slim (slimOwned) and only the metadata of its other objects (metadataKinds),
	// and ensure reads one whole when it must compare it. nil means the manager's
	// (SetupWithManager), or Client when there is no manager.
	APIReader client.Reader
	// Recorder records an Event for each action and condition transition.
	Recorder events.EventRecorder
	// Evidence reads the deployed adapters' evidence.
	Evidence health.EvidenceReader
	// DefaultImage is the adapter image when spec.image is omitted (--adapter-image).
	DefaultImage string
	// OperatorNamespace is where the manager runs; the NetworkPolicy admits it. Empty admits
	// the manager's pods from any namespace.
	OperatorNamespace string
	// MonitoringNamespace, when set, is the namespace whose pods the NetworkPolicy admits to
	// each adapter's metrics port (--monitoring-namespace); empty admits nobody there.
	MonitoringNamespace string
	// DoorbellURL is the endpoint adapters ring when their evidence changes (the prober then
	// reads it at once); empty renders no doorbell, and adapters are read every period only.
	DoorbellURL string
	// DoorbellAddr is where the manager's leader listens for those rings; empty: nowhere.
	DoorbellAddr string
	// ServiceURL overrides the adapter address the evidence is read from; nil uses the
	// Service's cluster DNS name. Tests and a manager run outside the cluster set it.
	ServiceURL func(*memoryv1alpha1.MemoryAdapter) string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// JobHistory is how many finished conformance Jobs are kept per adapter; 0 means 3.
	JobHistory int
	// TokenKey is the operator's secret key, at least MinTokenKeyBytes long, from which each
	// adapter's bearer token is derived (never logged).
	TokenKey []byte

	// CA issues the adapters' serving certificates (spec.tls mode Operator, the default).
	CA *pki.CA
	// CertLifetime is a serving certificate's lifetime; 0 means DefaultCertLifetime. It is
	// renewed after two thirds of it.
	CertLifetime time.Duration

	// Prober reads the evidence off the reconcile workers; nil means one made by
	// SetupWithManager from Evidence.
	Prober *health.Prober

	// The five maps below are caches of this process's own writes, never a source of truth:
	// each bridges the moment between a write and the manager's cache seeing it, so a
	// reconcile that starts from the older cached copy does not do the same thing twice. A
	// new process (a restart, a failover) starts with a cache that already holds those writes,
	// and the same decisions follow from the cluster and status alone; the envtest spec "reaches
	// the same decisions from a fresh start" checks it. Losing them costs at most one
	// idempotent apply of each binding Secret.

	// bindings maps an adapter to the digest (UID included) of the binding Secret last
	// applied, so an unchanged binding is not applied again on every reconcile.
	bindings sync.Map
	// issued maps an adapter to the last serving certificate this process issued (issuedCert),
	// until status.tls, which records it, is in the cache.
	issued sync.Map
	// announced maps an adapter to its *announcements: its UID and, per condition type, the
	// status and reason of the last transition recorded as an Event (a reconcile that starts
	// from a cached object older than its own last status patch sees the same transition
	// again, and must not record it twice), and the Job of the last run recorded, for the
	// same reason (a stale copy without the run in status would count and announce it
	// again). One record per adapter, holding the condition's own strings: a string key and
	// value per adapter and condition were about 1 KB per adapter.
	announced sync.Map
	// purged holds the UIDs of adapters whose purge succeeded and whose finalizer this
	// process removed, until the cache sees the adapter gone; an adapter's UID is never
	// reused, and deletions are rare.
	purged sync.Map
	// applied maps an adapter to its *appliedObjects: per owned object, the desired digest
	// and the resourceVersion ensure last left it at, so an object unchanged since is neither
	// read whole nor written (see createOrUpdate).
	applied sync.Map
}

// +kubebuilder:rbac:groups=memory.agentmem.io,resources=memoryadapters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=memory.agentmem.io,resources=memoryadapters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=memory.agentmem.io,resources=memoryadapters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts;configmaps;persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// The operator writes its binding Secrets and never reads any Secret: create and patch only.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;patch
// The same two verbs write each adapter's serving-certificate Secret (type kubernetes.io/tls).
// In its own namespace it reads its token key, and creates it on first start.
// +kubebuilder:rbac:groups="",namespace=memory-adapter-operator-system,resources=secrets,verbs=get;create
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile moves one MemoryAdapter through deploy → conform → watch health, or through its
// deletion, and records the outcome in one status patch: the deferred one below is the only
// place this controller writes MemoryAdapter status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	ma := &memoryv1alpha1.MemoryAdapter{}
	if err := r.Client.Get(ctx, req.NamespacedName, ma); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get MemoryAdapter: %w", err)
	}
	s := &scope{ma: ma, orig: ma.DeepCopy(), settings: render.EffectiveSettings(ma, r.DefaultImage), now: r.now()}
	s.settings.DoorbellURL = r.DoorbellURL
	defer func() {
		if err := r.patchStatus(ctx, s, reterr == nil); err != nil {
			reterr = errors.Join(reterr, err)
			return
		}
		// What ends a deletion (the finalizer's removal) waits for the status that explains
		// it to be written, for anyone watching the MemoryAdapter.
		if err := r.finishDeletion(ctx, s); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()
	if !ma.DeletionTimestamp.IsZero() {
		r.Prober.Forget(req.NamespacedName)
		// Owner references let the garbage collector remove what the adapter owns; under
		// deletionPolicy Delete on a shared server the scope's items are purged first.
		return r.reconcileDeletion(ctx, s)
	}
	// The finalizer is in place before anything is deployed, so no adapter that stored an
	// item can be deleted without its purge; it goes when the policy returns to Retain.
	if want := render.WantsPurge(ma); want != controllerutil.ContainsFinalizer(ma, FinalizerPurgeScope) {
		if err := r.setPurgeFinalizer(ctx, ma, want); err != nil {
			return ctrl.Result{}, err
		}
		s.orig = ma.DeepCopy()
	}
	var errs []error
	for _, phase := range []func(context.Context, *scope) error{r.reconcileManifest, r.reconcileDeploy, r.reconcileHealth, r.reconcileReadOnlyVolume, r.reconcileConformance} {
		if err := phase(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{RequeueAfter: s.requeueAfter}, errors.Join(errs...)
}

// forget drops what this process remembers of an adapter that is gone.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.Prober.Forget(key)
	r.bindings.Delete(key)
	r.issued.Delete(key)
	r.announced.Delete(key)
	r.applied.Delete(key)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// scope carries one reconcile's object, effective settings and observations between phases.
type scope struct {
	ma       *memoryv1alpha1.MemoryAdapter
	orig     *memoryv1alpha1.MemoryAdapter
	settings render.Settings
	now      time.Time

	manifestErr error
	deploy      conditions.DeployObservation
	token       string
	// nextToken is a rotation's token the adapter pods are being given; empty when none is.
	nextToken string
	// tls is the endpoint's transport security as this reconcile left it; nil when unknown.
	tls     *memoryv1alpha1.TLSStatus
	health  health.Observation
	conform conditions.ConformObservation
	// requeueAfter is the earliest time a phase wants to look again.
	requeueAfter time.Duration
	// deletion is what the deletion phase decided while the purge finalizer holds the
	// adapter; nil otherwise, and nil when a deleting adapter has nothing left to do.
	deletion *deletionOutcome
}

// requeue keeps the earliest positive delay.
func (s *scope) requeue(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if s.requeueAfter == 0 || d < s.requeueAfter {
		s.requeueAfter = d
	}
}

// patchStatus decides every condition from the phases' observations and writes status once,
// only when it changed, recording an Event per condition transition.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, ok bool) error {
	if !s.ma.DeletionTimestamp.IsZero() {
		return r.patchDeletionStatus(ctx, s)
	}
	decideStatus(s, ok)
	if equality.Semantic.DeepEqual(s.orig.Status, s.ma.Status) {
		return nil
	}
	r.announceTransitions(s)
	if err := r.Client.Status().Patch(ctx, s.ma, client.MergeFrom(s.orig), client.FieldOwner(render.FieldOwner)); err != nil {
		return fmt.Errorf("patch MemoryAdapter status: %w", err)
	}
	return nil
}

// decideStatus sets the status fields and conditions the phases' observations decide; ok
// says whether every phase succeeded, so that observedGeneration moves only then.
func decideStatus(s *scope, ok bool) {
	st := &s.ma.Status
	st.ManifestHash = s.ma.PublishedManifestHash()
	st.Lifecycle = s.settings.Lifecycle.DeepCopy()
	st.Binding = &memoryv1alpha1.BindingReference{Name: render.BindingName(s.ma)}
	if s.tls != nil {
		st.TLS = s.tls
	}
	s.health.LastRun = st.Conformance
	healthy := health.Condition(s.health)
	if old := meta.FindStatusCondition(st.Conditions, memoryv1alpha1.ConditionHealthy); old != nil && s.health.Rehydrated {
		// A restarted or newly elected manager has read nothing yet: the verdict it
		// inherited stands until a read says otherwise, so a failover flaps nothing.
		healthy = metav1.Condition{Type: old.Type, Status: old.Status, Reason: old.Reason, Message: old.Message}
	}
	for _, c := range []metav1.Condition{
		conditions.ManifestValid(s.manifestErr),
		conditions.Deployed(s.deploy),
		conditions.Conformant(s.conform),
		healthy,
	} {
		setCondition(st, c, s.ma.Generation)
	}
	setAvailable(st, conditions.Available(st.Conditions), s.ma.Generation)
	if ok {
		st.ObservedGeneration = s.ma.Generation
	}
}

// announceTransitions records an Event for each condition whose status or reason changed,
// once per transition even when a reconcile starts from a cached copy older than the last
// status patch; a transition Available restates in the same write is Available's Event.
func (r *Reconciler) announceTransitions(s *scope) {
	a := r.announcements(s.ma)
	var changed []metav1.Condition
	for _, c := range s.ma.Status.Conditions {
		if slices.Contains(conditions.GitOpsTypes, c.Type) {
			// Available's transition is the one Event; its restatements add none.
			continue
		}
		old := meta.FindStatusCondition(s.orig.Status.Conditions, c.Type)
		if old != nil && old.Status == c.Status && old.Reason == c.Reason {
			continue
		}
		if a.condition(c) {
			changed = append(changed, c)
		}
	}
	avail := meta.FindStatusCondition(changed, memoryv1alpha1.ConditionAvailable)
	for _, c := range changed {
		if avail != nil && conditions.Restates(*avail, c) {
			// Available's own Event names c, its reason and its message: a verdict is one
			// Event, not two saying the same, and a burst of verdicts (a shared backend's
			// outage) sends half the writes beside the status writes that carry it.
			continue
		}
		kind := corev1.EventTypeNormal
		if c.Status == metav1.ConditionFalse {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(s.ma, nil, kind, c.Reason, "Set"+c.Type, "%s is %s: %s", c.Type, c.Status, c.Message)
	}
}

// announcements is what this process last announced of one adapter (see Reconciler.announced).
type announcements struct {
	mu  sync.Mutex
	uid types.UID
	// conditions holds per condition type the status and reason of its last transition.
	conditions []announced
	// run is the Job of the last run recorded.
	run string
}

// announcedTypes is how many condition types announceTransitions announces: those of
// conditions.Announced that do not restate Available.
var announcedTypes = len(slices.DeleteFunc(slices.Clone(conditions.Announced), func(t string) bool {
	return slices.Contains(conditions.GitOpsTypes, t)
}))

// announced is the status and reason of one condition type's last announced transition.
type announced struct {
	Type   string
	Status metav1.ConditionStatus
	Reason string
}

// announcements is ma's record, reset when ma is a new adapter of an old one's name.
func (r *Reconciler) announcements(ma *memoryv1alpha1.MemoryAdapter) *announcements {
	v, _ := r.announced.LoadOrStore(client.ObjectKeyFromObject(ma), &announcements{uid: ma.UID})
	a := v.(*announcements)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.uid != ma.UID {
		a.uid, a.conditions, a.run = ma.UID, nil, ""
	}
	return a
}

// condition records c's status and reason, and says whether they are not the ones last
// recorded for its type.
func (a *announcements) condition(c metav1.Condition) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.conditions {
		if a.conditions[i].Type == c.Type {
			if a.conditions[i].Status == c.Status && a.conditions[i].Reason == c.Reason {
				return false
			}
			a.conditions[i].Status, a.conditions[i].Reason = c.Status, c.Reason
			return true
		}
	}
	if a.conditions == nil {
		// Room for every type announced (all but the restatements), allocated once: grown
		// by appends it ended with room for eight, 384 bytes an adapter.
		a.conditions = make([]announced, 0, announcedTypes)
	}
	a.conditions = append(a.conditions, announced{Type: c.Type, Status: c.Status, Reason: c.Reason})
	return true
}

// recordedRun records job as the last run recorded, and says whether it was not already.
func (a *announcements) recordedRun(job string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.run == job {
		return false
	}
	a.run = job
	return true
}

// setAvailable sets Available and its restatements for kstatus and GitOps tools (Ready, and
// Reconciling or Stalled), so that they can never disagree.
func setAvailable(st *memoryv1alpha1.MemoryAdapterStatus, available metav1.Condition, gen int64) {
	setCondition(st, available, gen)
	set, remove := conditions.GitOps(available)
	for _, c := range set {
		setCondition(st, c, gen)
	}
	for _, t := range remove {
		meta.RemoveStatusCondition(&st.Conditions, t)
	}
}

// setCondition sets c with the generation it describes; LastTransitionTime moves only when
// the status does.
func setCondition(st *memoryv1alpha1.MemoryAdapterStatus, c metav1.Condition, gen int64) {
	c.ObservedGeneration = gen
	meta.SetStatusCondition(&st.Conditions, c)
}

func (r *Reconciler) reconcileManifest(_ context.Context, s *scope) error {
	s.manifestErr = s.ma.Spec.Manifest.Validate()
	return nil
}

// CacheOptions restricts the manager's Pod cache to pods with the adapter label, which the
// operator's own pods and the agent pods bound to an adapter (docs/gating.md) carry alike,
// less the conformance runs' pods, so it does not hold every pod of the cluster in memory; it
// restricts the Deployment and metadataKinds caches to the operator's own objects (the
// managed-by label), and keeps Pods, Jobs, Nodes, Deployments, MemoryAdapters and the
// metadata of the adapters' other objects slim. Secrets are not cached at all: the operator
// writes them and never reads them. The manager and the envtest suites use the same options.
func CacheOptions() cache.Options {
	adapterPods, err := labels.NewRequirement(render.LabelAdapter, selection.Exists, nil)
	if err != nil {
		// A constant key with Exists and no values always makes a valid requirement.
		panic(fmt.Sprintf("memoryadapter: pod cache selector: %v", err))
	}
	// Conformance pods are read from the API server while their run runs or waits to be
	// recorded (observeConformance), and never after: cached, each finished one held its
	// report and about 3 KB more for good, one per adapter.
	notRuns, err := labels.NewRequirement(render.LabelComponent, selection.NotIn, []string{render.ComponentConformance})
	if err != nil {
		panic(fmt.Sprintf("memoryadapter: pod cache selector: %v", err))
	}
	byObject := map[client.Object]cache.ByObject{
		&corev1.Pod{}:  {Label: labels.NewSelector().Add(*adapterPods, *notRuns), Transform: slimPod},
		&corev1.Node{}: {Transform: slimNode},
		// The adapters themselves are kept whole, in less memory.
		&memoryv1alpha1.MemoryAdapter{}: {Transform: slimAdapter},
	}
	// The adapters' own objects carry the managed-by label (render.CommonLabels, since the
	// operator's first version, restored by every update ensure makes): the cache holds only
	// those, not every Deployment, Service, ConfigMap and the rest of the cluster. ensure
	// adopts one that lost the label (createOrUpdate).
	managed := labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedByValue})
	byObject[&appsv1.Deployment{}] = cache.ByObject{Label: managed, Transform: slimOwned}
	byObject[&batchv1.Job{}] = cache.ByObject{Label: managed, Transform: slimJobMetadata}
	for _, o := range metadataKinds {
		_, claim := o.(*corev1.PersistentVolumeClaim)
		byObject[o] = cache.ByObject{Label: managed, Transform: slimMetadata(claim)}
	}
	return cache.Options{
		// managedFields are the largest part of most cached objects, and nothing here reads
		// them: dropping them is the cheapest cut of the manager's memory at scale.
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         byObject,
	}
}

// slimNode keeps of a cached Node its name and Ready condition, all Deployed reads: a node's
// image list and other status can run to tens of kilobytes, times every node of the cluster.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	slim := &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion}}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			slim.Status.Conditions = []corev1.NodeCondition{c}
		}
	}
	return slim, nil
}

// nodeReady is a node's Ready status as the cache holds it ("" when it has none).
func nodeReady(o client.Object) corev1.ConditionStatus {
	if n, ok := o.(*corev1.Node); ok {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status
			}
		}
	}
	return ""
}

// bindingVolumePrefix starts the name of the binding volume the pod webhook adds
// (internal/webhook.VolumeName, which cannot be imported here).
const bindingVolumePrefix = "memory-binding-"

// slimPod keeps of a cached Pod what the controllers read: its metadata, the status that
// explains it (slimPodStatus), its containers' names and ports (the evidence is read at the
// port named http), its scheduling gates (the gate controller lifts its own), its node, its
// ServiceAccount and its binding volumes' Secret names. Volumes, environment, probes,
// resources, tolerations and the rest were about half of the manager's heap at 5,000 adapters.
// The gate controller's merge patch is computed between two slim copies, so the fields left
// out never appear in it. The cache holds the result as a cachedPod, whose reads are Pods.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	p.Namespace = intern.Words.Intern(p.Namespace)
	internLabels(p)
	containers := make([]corev1.Container, len(p.Spec.Containers))
	for i, c := range p.Spec.Containers {
		containers[i] = corev1.Container{Name: c.Name, Ports: c.Ports}
	}
	// Every adapter's pod has the same containers and ports: one list for all of them.
	containers = containerLists.Share(containers)
	// The gate compares a bound pod's ServiceAccount and binding Secret with spec.access;
	// both are immutable on a pod, and of the volumes only the binding's name is kept.
	var volumes []corev1.Volume
	for _, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, bindingVolumePrefix) && v.Secret != nil {
			volumes = append(volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: v.Secret.SecretName}}})
		}
	}
	p.Spec = corev1.PodSpec{Containers: containers, SchedulingGates: p.Spec.SchedulingGates, NodeName: p.Spec.NodeName,
		ServiceAccountName: p.Spec.ServiceAccountName, Volumes: volumes}
	internOwners(p)
	p.Status = slimPodStatus(p.Status)
	return newCachedPod(p), nil
}

// slimPodStatus keeps of a Pod's status what explains it: its phase, reason and message, its
// address (the prober reads the evidence there), the conditions that are not True (a True
// condition says nothing the phase and the containers do not; a False PodScheduled says why a
// pod waits), and per container its name, readiness, restarts, state and last termination
// (a crash loop's exit code and log, a purge's report, a pull or config error). Images, their
// digests, container ids, host addresses, start time, QoS class and resources are left out:
// nothing reads them, and they were about a third of a cached pod.
func slimPodStatus(st corev1.PodStatus) corev1.PodStatus {
	out := corev1.PodStatus{Phase: st.Phase, Reason: st.Reason, Message: st.Message, PodIP: st.PodIP}
	for _, c := range st.Conditions {
		if c.Status != corev1.ConditionTrue {
			out.Conditions = append(out.Conditions, c)
		}
	}
	containers := func(in []corev1.ContainerStatus) []corev1.ContainerStatus {
		if len(in) == 0 {
			return nil
		}
		cs := make([]corev1.ContainerStatus, len(in))
		for i, c := range in {
			cs[i] = corev1.ContainerStatus{Name: c.Name, Ready: c.Ready, RestartCount: c.RestartCount, State: c.State,
				LastTerminationState: c.LastTerminationState}
		}
		return cs
	}
	out.InitContainerStatuses = containers(st.InitContainerStatuses)
	out.ContainerStatuses = containers(st.ContainerStatuses)
	return out
}

// slimJobMetadata keeps of the cached metadata of a Job the operator owns (its conformance
// runs and purges; the cache holds no other Job) its name, UID, resourceVersion, timestamps,
// owner references and labels (the purge watch reads the component, and every event maps to
// its adapter through them), shared with every other Job's; no annotations. A Job is cached as
// metadata only (builder.OnlyMetadata): the controller reads a run's Job from the API server
// while the run is due, runs or waits to be recorded, and its history only to trim it or to
// time a failed run's retry, so a typed Job (about 2 KB with its inline pod template, one to
// three per adapter) is never held between runs. An update of a Job's status moves its
// resourceVersion, so its metadata watch still wakes the adapter when a run ends.
func slimJobMetadata(obj any) (any, error) {
	if _, held := obj.(*cachedMetadata); held {
		// A resync hands the transform what the cache already holds.
		return obj, nil
	}
	if o := ours(obj); o != nil {
		internLabels(o)
		o.SetAnnotations(nil)
		return holdMetadata(obj), nil
	}
	return obj, nil
}

// MaxConcurrentReconciles is how many adapters the controller reconciles at once.
const MaxConcurrentReconciles = 32

// IndexAdapter names the cache index of Pods by the value of their LabelAdapter label.
// The cache indexes objects by namespace only, so a label-selected List scans every pod of the
// namespace: with thousands of adapters in one namespace that made each reconcile O(N) (46% of
// the manager's CPU at 10,000 adapters). Lists go through this index, then filter by label.
const IndexAdapter = "memory.agentmem.io/index-adapter"

// IndexNode names the cache index of adapter Pods by the node they run on, and of data claims
// by the node their volume was provisioned on, so a node that stops or returns wakes exactly
// the adapters it holds.
const IndexNode = "memory.agentmem.io/index-node"

// IndexBoundTo names the cache index of Pods by the value of their LabelBoundTo label, for the
// gate controller's lists of the workloads bound to one adapter.
const IndexBoundTo = "memory.agentmem.io/index-bound-to"

// LabelIndexer returns an index function that files an object under the value of one label.
func LabelIndexer(label string) client.IndexerFunc {
	return func(o client.Object) []string {
		if v, ok := o.GetLabels()[label]; ok {
			return []string{v}
		}
		return nil
	}
}

// ofAdapter selects, in the adapter's namespace, the indexed objects labelled for adapter name
// and matching sel.
func ofAdapter(namespace, name string, sel client.MatchingLabels) []client.ListOption {
	return []client.ListOption{client.InNamespace(namespace), client.MatchingFields{IndexAdapter: name}, sel}
}

// SetupWithManager registers the controller: it owns the adapter's objects and Jobs and
// follows the adapter's pods (their waiting reasons explain a stuck rollout); a run's pods
// are not cached and are looked at while it runs (runs.RunningPoll).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	podToAdapter := handler.EnqueueRequestsFromMapFunc(ownPodToAdapter)
	if r.Prober == nil {
		r.Prober = &health.Prober{Reader: r.Evidence, Now: r.Now}
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if err := mgr.Add(r.Prober); err != nil {
		return fmt.Errorf("add the evidence prober: %w", err)
	}
	if r.DoorbellAddr != "" {
		if err := mgr.Add(&health.DoorbellServer{Addr: r.DoorbellAddr, Handler: &health.DoorbellHandler{Prober: r.Prober}}); err != nil {
			return fmt.Errorf("add the evidence doorbell: %w", err)
		}
	}
	if err := registerConditionCollector(mgr.GetCache()); err != nil {
		return err
	}
	if err := registerIndexes(mgr.GetFieldIndexer(), mgr.GetScheme()); err != nil {
		return err
	}
	nodeToAdapters := handler.EnqueueRequestsFromMapFunc(r.adaptersOnNode)
	return ctrl.NewControllerManagedBy(mgr).
		For(&memoryv1alpha1.MemoryAdapter{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.Deployment{}).
		// metadataKinds: the cache holds their metadata only.
		Owns(&corev1.Service{}, builder.OnlyMetadata).
		Owns(&corev1.ServiceAccount{}, builder.OnlyMetadata).
		Owns(&corev1.ConfigMap{}, builder.OnlyMetadata).
		Owns(&corev1.PersistentVolumeClaim{}, builder.OnlyMetadata).
		Owns(&networkingv1.NetworkPolicy{}, builder.OnlyMetadata).
		Owns(&policyv1.PodDisruptionBudget{}, builder.OnlyMetadata).
		Owns(&batchv1.Job{}, builder.OnlyMetadata).
		Watches(&corev1.Pod{}, podToAdapter).
		// Under deletionPolicy Retain the data claim has no owner reference; its labels name
		// the adapter, whose Deployed reads the node the claim's volume was provisioned on.
		Watches(&corev1.PersistentVolumeClaim{}, podToAdapter, builder.OnlyMetadata).
		// A node that stops or comes back changes what Deployed says of the adapters on it.
		Watches(&corev1.Node{}, nodeToAdapters, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
			UpdateFunc:  func(e event.UpdateEvent) bool { return nodeReady(e.ObjectOld) != nodeReady(e.ObjectNew) },
		})).
		// Purge Jobs have no owner reference (see desiredPurgeJob); their label names the adapter.
		Watches(&batchv1.Job{}, podToAdapter, builder.OnlyMetadata, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[render.LabelComponent] == render.ComponentPurge
		}))).
		// The prober wakes an adapter whose evidence changed what the controller decides.
		WatchesRawSource(source.Channel(r.Prober.Events(), &handler.TypedEnqueueRequestForObject[*memoryv1alpha1.MemoryAdapter]{})).
		Named("memoryadapter").
		// Reconciles make no network call beyond the API server (the prober reads the
		// evidence), but they wait for it: when a shared backend's outage changes 200
		// adapters' verdicts at once, each reconcile ends in a status patch, and with 8
		// workers at 10,000 adapters all 8 sat in the patch's round trip while the client's
		// 50/100 limits had room to spare (the scale benchmark's goroutine dumps), so the last
		// verdict came 6 to 10 s after its change. With 32 the last came after 5.1 s, all
		// 32 again in patches the API server answered in about 0.8 s each (about 40 a
		// second). 64 were tried and did no better (7.9 s, 61 to 64 of them waiting for the
		// API server's answer): past 32 the API server, not the workers, bounds a burst.
		WithOptions(controller.Options{MaxConcurrentReconciles: MaxConcurrentReconciles}).
		Complete(r)
}

// ownPodToAdapter maps an object of the operator's own (an adapter or purge pod, a data
// claim, a purge Job) to the adapter its label names.
func ownPodToAdapter(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[render.LabelAdapter]
	// Agent pods bound to the adapter carry its label too; they are the gate controller's,
	// and their changes say nothing about the adapter's own state.
	if name == "" || o.GetLabels()[render.LabelManagedBy] != render.ManagedByValue {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// registerIndexes adds the cache indexes the controller lists through: Pods by adapter, adapter Pods by node, and data claims by the node their volume is on.
func registerIndexes(idx client.FieldIndexer, scheme *runtime.Scheme) error {
	if err := idx.IndexField(context.Background(), &corev1.Pod{}, IndexAdapter, LabelIndexer(render.LabelAdapter)); err != nil {
		return fmt.Errorf("index pods by adapter: %w", err)
	}
	if err := idx.IndexField(context.Background(), &corev1.Pod{}, IndexNode, func(o client.Object) []string {
		// The cache holds adapter pods as cachedPod (slimPod); a Pod is what a fake or
		// an uncached client indexes.
		var node string
		switch p := o.(type) {
		case *cachedPod:
			node = p.nodeName
		case *corev1.Pod:
			node = p.Spec.NodeName
		}
		if node != "" && o.GetLabels()[render.LabelManagedBy] == render.ManagedByValue {
			return []string{node}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index pods by node: %w", err)
	}
	claims, err := metadataOf(&corev1.PersistentVolumeClaim{}, scheme)
	if err != nil {
		return err
	}
	if err := idx.IndexField(context.Background(), claims, IndexNode, func(o client.Object) []string {
		if n := o.GetAnnotations()[annotationSelectedNode]; n != "" && o.GetLabels()[render.LabelAdapter] != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index claims by node: %w", err)
	}
	return nil
}

// adaptersOnNode maps a node to the adapters with a pod on it or a data claim whose volume is
// there, once each.
func (r *Reconciler) adaptersOnNode(ctx context.Context, o client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	seen := map[types.NamespacedName]bool{}
	add := func(obj client.Object) {
		k := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetLabels()[render.LabelAdapter]}
		if k.Name != "" && !seen[k] {
			seen[k] = true
			reqs = append(reqs, reconcile.Request{NamespacedName: k})
		}
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.MatchingFields{IndexNode: o.GetName()}); err == nil {
		for i := range pods.Items {
			add(&pods.Items[i])
		}
	}
	claims := &metav1.PartialObjectMetadataList{}
	claims.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList"))
	if err := r.Client.List(ctx, claims, client.MatchingFields{IndexNode: o.GetName()}); err == nil {
		for i := range claims.Items {
			add(&claims.Items[i])
		}
	}
	return reqs
}
