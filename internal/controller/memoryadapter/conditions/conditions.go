package conditions

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// This file holds only decisions: each function turns observations into one condition and
// touches neither the API server nor the clock, so table tests cover every reason.

// ManifestValid reports the Go verdict on spec.manifest.
func ManifestValid(err error) metav1.Condition {
	if err != nil {
		return cond.New(memoryv1alpha1.ConditionManifestValid, metav1.ConditionFalse, memoryv1alpha1.ReasonManifestIncoherent, err.Error())
	}
	return cond.New(memoryv1alpha1.ConditionManifestValid, metav1.ConditionTrue, memoryv1alpha1.ReasonManifestCoherent, "spec.manifest passes the six coherence rules")
}

// DeployObservation is what the deploy phase saw.
type DeployObservation struct {
	// SpecErr is a spec value that could not be turned into objects.
	SpecErr error
	// Replicas is the effective spec.replicas.
	Replicas int32
	// Deployment is the adapter's Deployment as stored; nil when it does not exist yet.
	Deployment *appsv1.Deployment
	// Pods are the Deployment's pods, read to find why a rollout is stuck.
	Pods []corev1.Pod
	// BackendSecret names the connection Secret and key, empty for SQLite.
	BackendSecret string
	// Claim is the data claim and the node its volume lives on (the scheduler's
	// selected-node, set when a local volume was bound); nil without a data claim.
	Claim *ClaimObservation
	// Nodes holds what the cache says of each node a pod or the claim is on; a name absent
	// from the map was not looked up.
	Nodes map[string]NodeObservation
}

// ClaimObservation is the adapter's data claim and the node that holds its volume.
type ClaimObservation struct {
	Name, Node string
}

// NodeObservation is a node's readiness: gone (no Node object), or its Ready condition.
type NodeObservation struct {
	Gone  bool
	Ready bool
	// Reason and message are the Ready condition's (NodeStatusUnknown and "Kubelet stopped
	// posting node status." for a node that stopped answering).
	Reason, Message string
}

// describe says why the node cannot run pods, for a condition message.
func (n NodeObservation) describe(name string) string {
	if n.Gone {
		return fmt.Sprintf("node %s no longer exists", name)
	}
	// No time in the message: a condition message stays the same while the fact does, so
	// the deferred patch's equality guard holds; the Node's Ready condition has the time.
	msg := fmt.Sprintf("node %s is not ready", name)
	if n.Reason != "" || n.Message != "" {
		msg += fmt.Sprintf(" (%s: %s)", n.Reason, n.Message)
	}
	return msg
}

// nodeProblem names, when replicas are missing, the unready or vanished node that explains
// it: first the node holding the data claim (a local volume binds its pod to that node, so no
// other node can take over), then the node of any adapter pod. Empty when every node involved
// is ready.
func nodeProblem(o DeployObservation) string {
	if c := o.Claim; c != nil && c.Node != "" {
		if n, ok := o.Nodes[c.Node]; ok && !n.Ready {
			return fmt.Sprintf("%s, and it holds the data claim %s: the adapter's pod can run on no other node, and every acknowledged item is on that node's volume; it serves again when the node is back", n.describe(c.Node), c.Name)
		}
	}
	for _, p := range o.Pods {
		if p.Spec.NodeName == "" {
			continue
		}
		if n, ok := o.Nodes[p.Spec.NodeName]; ok && !n.Ready {
			return fmt.Sprintf("pod %s is on %s; the Deployment replaces it once the node's pods are evicted", p.Name, n.describe(p.Spec.NodeName))
		}
	}
	return ""
}

// Deployed decides Deployed from the Deployment's status and its pods: the first of
// deployedChecks that finds a reason to be False, else Ready.
func Deployed(o DeployObservation) metav1.Condition {
	for _, check := range deployedChecks {
		if c, ok := check(o); ok {
			return c
		}
	}
	d := o.Deployment
	return cond.New(memoryv1alpha1.ConditionDeployed, metav1.ConditionTrue, memoryv1alpha1.ReasonDeploymentReady,
		fmt.Sprintf("Deployment %s: %d of %d replicas updated and available", d.Name, d.Status.AvailableReplicas, o.Replicas))
}

// deployedChecks are Deployed's reasons to be False, most specific first, because the first
// that applies is the one a reader sees: what the spec or a missing Secret prevents comes
// before the Deployment's state, and a named cause (an exceeded deadline, a lost node) before
// a rollout that is merely not done. The checks after notCreated may rely on a Deployment.
var deployedChecks = []func(DeployObservation) (metav1.Condition, bool){
	DeployObservation.invalidSpec,
	DeployObservation.scaledToZero,
	DeployObservation.backendSecretMissing,
	DeployObservation.notCreated,
	DeployObservation.deadlineExceeded,
	DeployObservation.nodeUnavailable,
	DeployObservation.crashLooping,
	DeployObservation.rollingOut,
}

// notDeployed is a Deployed False with reason and message, as a check returns it.
func notDeployed(reason, message string) (metav1.Condition, bool) {
	return cond.New(memoryv1alpha1.ConditionDeployed, metav1.ConditionFalse, reason, message), true
}

func (o DeployObservation) invalidSpec() (metav1.Condition, bool) {
	if o.SpecErr == nil {
		return metav1.Condition{}, false
	}
	return notDeployed(memoryv1alpha1.ReasonInvalidSpec, o.SpecErr.Error())
}

func (o DeployObservation) scaledToZero() (metav1.Condition, bool) {
	if o.Replicas != 0 {
		return metav1.Condition{}, false
	}
	return notDeployed(memoryv1alpha1.ReasonScaledToZero, "spec.replicas is 0: no adapter pod serves the manifest")
}

// backendSecretMissing reads the kubelet's CreateContainerConfigError: that is where a missing
// connection Secret shows, since the operator never reads the Secret itself.
func (o DeployObservation) backendSecretMissing() (metav1.Condition, bool) {
	if o.BackendSecret == "" {
		return metav1.Condition{}, false
	}
	for _, p := range o.Pods {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason == "CreateContainerConfigError" && strings.Contains(w.Message, "ecret") {
				return notDeployed(memoryv1alpha1.ReasonBackendSecretMissing,
					fmt.Sprintf("pod %s cannot start: %s (spec.backend.connectionSecretRef is %s); creating it lets the pod start with no other step", p.Name, w.Message, o.BackendSecret))
			}
		}
	}
	return metav1.Condition{}, false
}

func (o DeployObservation) notCreated() (metav1.Condition, bool) {
	if o.Deployment != nil {
		return metav1.Condition{}, false
	}
	return notDeployed(memoryv1alpha1.ReasonDeploymentProgressing, "the adapter Deployment is being created")
}

func (o DeployObservation) deadlineExceeded() (metav1.Condition, bool) {
	d := o.Deployment
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return notDeployed(memoryv1alpha1.ReasonDeploymentFailed,
				fmt.Sprintf("Deployment %s exceeded its progress deadline: %s%s", d.Name, c.Message, podProblems(o.Pods)))
		}
	}
	return metav1.Condition{}, false
}

// nodeUnavailable applies only while replicas are missing: an unready node the adapter's
// replicas no longer need is no reason to be False.
func (o DeployObservation) nodeUnavailable() (metav1.Condition, bool) {
	d := o.Deployment
	if d.Status.AvailableReplicas >= o.Replicas {
		return metav1.Condition{}, false
	}
	np := nodeProblem(o)
	if np == "" {
		return metav1.Condition{}, false
	}
	return notDeployed(memoryv1alpha1.ReasonNodeUnavailable,
		fmt.Sprintf("Deployment %s: %d of %d replicas available; %s", d.Name, d.Status.AvailableReplicas, o.Replicas, np))
}

// crashLooping finds an adapter container that exited with an error at least once and is not
// ready now: between two restarts it is Running for a moment and Waiting (CrashLoopBackOff)
// the rest of the time, and both are the same fact, so the condition does not flip with the
// kubelet's back-off. A pod that once exited and is ready again is not crash looping.
func (o DeployObservation) crashLooping() (metav1.Condition, bool) {
	for _, p := range o.Pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.LastTerminationState.Terminated
			if cs.Ready || cs.RestartCount == 0 || t == nil || t.ExitCode == 0 {
				continue
			}
			msg := fmt.Sprintf("pod %s: container %s keeps exiting and is restarted by the kubelet; it last exited %d (%s)",
				p.Name, cs.Name, t.ExitCode, t.Reason)
			if last := lastLines(t.Message, 512); last != "" {
				msg += ": " + last
			} else {
				msg += "; its log says why (kubectl logs --previous)"
			}
			return notDeployed(memoryv1alpha1.ReasonAdapterCrashLooping, msg)
		}
	}
	return metav1.Condition{}, false
}

// rollingOut counts a surplus replica as not done: until the old ReplicaSet's pods are gone,
// the previous version may still answer.
func (o DeployObservation) rollingOut() (metav1.Condition, bool) {
	d := o.Deployment
	behind := d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas < o.Replicas ||
		d.Status.AvailableReplicas < o.Replicas || d.Status.Replicas > o.Replicas
	if !behind {
		return metav1.Condition{}, false
	}
	return notDeployed(memoryv1alpha1.ReasonDeploymentProgressing,
		fmt.Sprintf("Deployment %s: %d of %d replicas updated, %d available%s", d.Name,
			d.Status.UpdatedReplicas, o.Replicas, d.Status.AvailableReplicas, podProblems(o.Pods)))
}

// podProblems quotes the first container that waits for a reason other than starting, so a
// stuck rollout names its cause (an image pull, a crash loop).
func podProblems(pods []corev1.Pod) string {
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
				msg := fmt.Sprintf("; pod %s: %s %s", p.Name, w.Reason, w.Message)
				if t := cs.LastTerminationState.Terminated; t != nil {
					msg += fmt.Sprintf("; it last exited %d (%s): %s", t.ExitCode, t.Reason, lastLines(t.Message, 512))
				}
				return msg
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return fmt.Sprintf("; pod %s not scheduled: %s", p.Name, c.Message)
			}
		}
	}
	return ""
}

// lastLines keeps the end of a termination message (a server's last log lines), where the
// reason it exited is, within n bytes.
func lastLines(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "…" + s[cut:]
}

// JobPhase is where a conformance Job stands.
type JobPhase int

const (
	// JobAbsent means no Job exists for the current key.
	JobAbsent JobPhase = iota
	// JobRunning means the Job runs, or waits for its report.
	JobRunning
	// JobBlocked means the Job's pod cannot start (its message says why).
	JobBlocked
)

// JobObservation is what the conform phase saw of the Job for the current key.
type JobObservation struct {
	Phase JobPhase
	Name  string
	// Message explains a blocked or broken Job.
	Message string
}

// ConformObservation is everything Conformant depends on.
type ConformObservation struct {
	// Key is the current run key; nil while no evidence has told the versions.
	Key *render.RunKey
	// Last is status.conformance after this reconcile recorded any finished run.
	Last *memoryv1alpha1.ConformanceResult
	// Job is the Job for key, when one is wanted.
	Job JobObservation
}

// Conformant decides Conformant.
func Conformant(o ConformObservation) metav1.Condition {
	const t = memoryv1alpha1.ConditionConformant
	if o.Key == nil {
		return cond.New(t, metav1.ConditionUnknown, memoryv1alpha1.ReasonConformancePending,
			"waiting for the deployed adapter's first evidence, which names the service and adapter versions to verify")
	}
	if o.Key.Matches(o.Last) {
		if o.Last.Passed == 0 && o.Last.Failed == 0 {
			return cond.New(t, metav1.ConditionFalse, memoryv1alpha1.ReasonConformanceJobFailed,
				fmt.Sprintf("job %s ended without a readable report: %s", o.Last.JobName, o.Last.Message))
		}
		if o.Last.Failed > 0 {
			msg := fmt.Sprintf("job %s failed %d of %d cases: %s", o.Last.JobName, o.Last.Failed, len(o.Last.Cases), strings.Join(failedCases(o.Last), ", "))
			if o.Last.Message != "" {
				msg += "; " + o.Last.Message
			}
			return cond.New(t, metav1.ConditionFalse, memoryv1alpha1.ReasonConformanceFailed, msg)
		}
		if o.Last.Message != "" {
			return cond.New(t, metav1.ConditionFalse, memoryv1alpha1.ReasonConformanceFailed,
				fmt.Sprintf("job %s passed every case but failed a run-level check: %s", o.Last.JobName, o.Last.Message))
		}
		return cond.New(t, metav1.ConditionTrue, memoryv1alpha1.ReasonConformancePassed,
			fmt.Sprintf("job %s passed %d cases (%d not applicable) for %s", o.Last.JobName, o.Last.Passed, o.Last.NotApplicable, o.Key))
	}
	if o.Job.Phase == JobBlocked {
		return cond.New(t, metav1.ConditionUnknown, memoryv1alpha1.ReasonConformanceJobBlocked,
			fmt.Sprintf("job %s cannot start: %s", o.Job.Name, o.Job.Message))
	}
	if o.Last != nil && o.Last.ManifestHash == o.Key.ManifestHash {
		return cond.New(t, metav1.ConditionFalse, memoryv1alpha1.ReasonConformanceOutdated,
			fmt.Sprintf("the last run (job %s) verified service version %q and adapter version %q; the adapter now reports %q and %q, verified by job %s",
				o.Last.JobName, o.Last.ServiceVersion, o.Last.AdapterVersion, o.Key.ServiceVersion, o.Key.AdapterVersion, o.Job.Name))
	}
	return cond.New(t, metav1.ConditionUnknown, memoryv1alpha1.ReasonConformanceRunning,
		fmt.Sprintf("job %s runs the matrix for %s", o.Job.Name, o.Key))
}

// failedCases lists the failed cases' ids, then each failed governance profile as
// "profile ID".
func failedCases(r *memoryv1alpha1.ConformanceResult) []string {
	var ids []string
	for _, c := range r.Cases {
		if c.Outcome == memoryv1alpha1.OutcomeFailed {
			ids = append(ids, string(c.ID))
		}
	}
	for _, p := range r.Profiles {
		if p.Outcome == memoryv1alpha1.OutcomeFailed {
			ids = append(ids, "profile "+string(p.ID))
		}
	}
	return ids
}

// summaryOrder is the order in which Available looks for the first condition that is not
// True.
var summaryOrder = []string{
	memoryv1alpha1.ConditionManifestValid, memoryv1alpha1.ConditionDeployed,
	memoryv1alpha1.ConditionConformant, memoryv1alpha1.ConditionHealthy,
}

// evidenceVerdicts are Healthy's reasons that come from what an adapter's own evidence says,
// as opposed to whether it could be read.
var evidenceVerdicts = []string{
	memoryv1alpha1.ReasonServiceVersionChanged, memoryv1alpha1.ReasonAdapterVersionChanged,
	memoryv1alpha1.ReasonManifestMismatch, memoryv1alpha1.ReasonCapabilityProbeFailed,
	memoryv1alpha1.ReasonIndexLagging, memoryv1alpha1.ReasonEvidenceInvalidatesManifest,
}

// Available summarizes: True only when every other condition is, else the status,
// reason and message of the first one that is not, prefixed with its type. Evidence that
// contradicts the manifest comes right after ManifestValid: it is the most specific reason
// there is, and a rollout or a rerun it causes (pods leaving readiness, a run of the new
// version) must not hide it for the whole invalidation.
func Available(conds []metav1.Condition) metav1.Condition {
	const t = memoryv1alpha1.ConditionAvailable
	order := summaryOrder
	// A user's own scale-down is the truth of the moment: with no pod, the last evidence
	// describes an instance that is gone.
	scaledDown := false
	if d := meta.FindStatusCondition(conds, memoryv1alpha1.ConditionDeployed); d != nil && d.Reason == memoryv1alpha1.ReasonScaledToZero {
		scaledDown = true
	}
	if h := meta.FindStatusCondition(conds, memoryv1alpha1.ConditionHealthy); !scaledDown && h != nil && h.Status == metav1.ConditionFalse && slices.Contains(evidenceVerdicts, h.Reason) {
		order = []string{memoryv1alpha1.ConditionManifestValid, memoryv1alpha1.ConditionHealthy,
			memoryv1alpha1.ConditionDeployed, memoryv1alpha1.ConditionConformant}
	}
	for _, ct := range order {
		c := meta.FindStatusCondition(conds, ct)
		if c == nil {
			return cond.New(t, metav1.ConditionUnknown, memoryv1alpha1.ReasonConformancePending, ct+" has not been decided yet")
		}
		if c.Status != metav1.ConditionTrue {
			st := metav1.ConditionFalse
			if c.Status == metav1.ConditionUnknown {
				st = metav1.ConditionUnknown
			}
			return cond.New(t, st, c.Reason, restatedMessage(*c))
		}
	}
	return cond.New(t, metav1.ConditionTrue, memoryv1alpha1.ReasonAdapterAvailable,
		"the manifest is valid, deployed, verified by conformance and upheld by health evidence")
}

// restatedMessage is Available's message when it copies input c: c named, then its message.
func restatedMessage(c metav1.Condition) string { return c.Type + ": " + c.Message }

// Restates reports whether available, as Available decides it, copies input c: the same
// status and reason, and c's restated message.
func Restates(available, c metav1.Condition) bool {
	return available.Type == memoryv1alpha1.ConditionAvailable && c.Type != available.Type &&
		c.Status == available.Status && c.Reason == available.Reason && available.Message == restatedMessage(c)
}

// GitOps restates available (Available as just decided) as the conditions kstatus and GitOps
// tools read: Ready, its twin, and Reconciling or Stalled while it is not True, each present
// only while it is True (kstatus' abnormal-true convention). The returned conditions are set,
// the listed types removed.
func GitOps(available metav1.Condition) (set []metav1.Condition, remove []string) {
	ready := cond.New(memoryv1alpha1.ConditionReady, available.Status, available.Reason, available.Message)
	switch {
	case available.Status == metav1.ConditionTrue:
		return []metav1.Condition{ready}, []string{memoryv1alpha1.ConditionReconciling, memoryv1alpha1.ConditionStalled}
	case slices.Contains(memoryv1alpha1.StalledReasons, available.Reason):
		return []metav1.Condition{ready, cond.New(memoryv1alpha1.ConditionStalled, metav1.ConditionTrue, available.Reason, available.Message)},
			[]string{memoryv1alpha1.ConditionReconciling}
	case available.Reason == memoryv1alpha1.ReasonScaledToZero:
		// Nothing to reconcile and nothing broken: Ready False alone (kstatus: InProgress).
		return []metav1.Condition{ready}, []string{memoryv1alpha1.ConditionReconciling, memoryv1alpha1.ConditionStalled}
	default:
		return []metav1.Condition{ready, cond.New(memoryv1alpha1.ConditionReconciling, metav1.ConditionTrue, available.Reason, available.Message)},
			[]string{memoryv1alpha1.ConditionStalled}
	}
}

// GitOpsTypes are the conditions GitOps writes; they restate Available, so their transitions
// are not announced again and they are no series of their own.
var GitOpsTypes = []string{memoryv1alpha1.ConditionReady, memoryv1alpha1.ConditionReconciling, memoryv1alpha1.ConditionStalled}

// Types lists the conditions the controller keeps on every adapter: the summary's
// inputs and Available.
var Types = append(slices.Clone(summaryOrder), memoryv1alpha1.ConditionAvailable)

// Announced lists every condition the controller writes, ScopePurged (set only during a
// purge) included: their transitions are announced as Events, and each is a series of
// memory_adapter_operator_adapter_condition. It is its own
// slice, built once, because appending to conditionTypes from concurrent reconciles would write
// into one shared backing array.
var Announced = append(slices.Clone(Types), memoryv1alpha1.ConditionScopePurged)
