package conditions

import (
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond/condtest"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

type want condtest.Want

func check(t *testing.T, got metav1.Condition, w want) { t.Helper(); condtest.Want(w).Check(t, got) }

func readyDeployment(gen, observed int64, updated, available int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "mem", Generation: gen},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: updated, UpdatedReplicas: updated, AvailableReplicas: available, ReadyReplicas: available},
	}
}

var waitingPod = condtest.WaitingPod

func TestManifestCondition(t *testing.T) {
	check(t, ManifestValid(nil), want{metav1.ConditionTrue, memoryv1alpha1.ReasonManifestCoherent, nil})
	check(t, ManifestValid(errors.New("full search fidelity must preserve all fields and tags")),
		want{metav1.ConditionFalse, memoryv1alpha1.ReasonManifestIncoherent, []string{"full search fidelity"}})
}

func TestDeployedCondition(t *testing.T) {
	stuck := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet has timed out"}
	failed := readyDeployment(2, 2, 0, 0)
	failed.Status.Conditions = []appsv1.DeploymentCondition{stuck}
	for name, tc := range map[string]struct {
		obs  DeployObservation
		want want
	}{
		"invalid spec": {DeployObservation{SpecErr: errors.New("spec.backend.sqlite.storageSize \"x\": bad"), Replicas: 1},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonInvalidSpec, []string{"storageSize"}}},
		"scaled to zero": {DeployObservation{Replicas: 0, Deployment: readyDeployment(1, 1, 0, 0)},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonScaledToZero, []string{"spec.replicas is 0"}}},
		"not created yet": {DeployObservation{Replicas: 1},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentProgressing, []string{"being created"}}},
		"missing backend secret": {DeployObservation{Replicas: 1, Deployment: readyDeployment(1, 1, 1, 0), BackendSecret: `Secret ns/pg key "dsn"`,
			Pods: []corev1.Pod{waitingPod("CreateContainerConfigError", `secret "pg" not found`)}},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonBackendSecretMissing, []string{`secret "pg" not found`, "Secret ns/pg"}}},
		"progressing with a pull error": {DeployObservation{Replicas: 1, Deployment: readyDeployment(1, 1, 1, 0), Pods: []corev1.Pod{waitingPod("ImagePullBackOff", "no such image")}},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentProgressing, []string{"0 available", "ImagePullBackOff"}}},
		"crash loop quotes the last exit": {DeployObservation{Replicas: 1, Deployment: readyDeployment(1, 1, 1, 0), Pods: []corev1.Pod{crashLooping(
			strings.Repeat("startup noise\n", 100) + `serve: open postgres: tls: server refused TLS (sslmode=require)`)}},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonAdapterCrashLooping, []string{"keeps exiting", "last exited 1 (Error)", "server refused TLS (sslmode=require)"}}},
		"old generation": {DeployObservation{Replicas: 1, Deployment: readyDeployment(3, 2, 1, 1)},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentProgressing, nil}},
		"deadline exceeded": {DeployObservation{Replicas: 1, Deployment: failed},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentFailed, []string{"timed out"}}},
		"ready": {DeployObservation{Replicas: 1, Deployment: readyDeployment(2, 2, 1, 1)},
			want{metav1.ConditionTrue, memoryv1alpha1.ReasonDeploymentReady, nil}},
		"the claim's node stopped": {DeployObservation{Replicas: 1, Deployment: readyDeployment(1, 1, 1, 0),
			Claim: &ClaimObservation{Name: "mem-data", Node: "node-b"}, Pods: []corev1.Pod{onNode("mem-1", "")},
			Nodes: map[string]NodeObservation{"node-b": lostNode}},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonNodeUnavailable, []string{"node node-b is not ready (NodeStatusUnknown", "Kubelet stopped posting node status.", "data claim mem-data", "0 of 1 replicas available"}}},
		"the claim's node is gone": {DeployObservation{Replicas: 1, Deployment: readyDeployment(1, 1, 1, 0),
			Claim: &ClaimObservation{Name: "mem-data", Node: "node-b"}, Nodes: map[string]NodeObservation{"node-b": {Gone: true}}},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonNodeUnavailable, []string{"node node-b no longer exists", "data claim mem-data"}}},
		"a stateless pod's node stopped": {DeployObservation{Replicas: 2, Deployment: readyDeployment(1, 1, 2, 1),
			Pods:  []corev1.Pod{onNode("pg-1", "node-a"), onNode("pg-2", "node-b")},
			Nodes: map[string]NodeObservation{"node-a": {Ready: true}, "node-b": lostNode}},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonNodeUnavailable, []string{"pod pg-2 is on node node-b", "1 of 2 replicas available"}}},
		"nodes ready, a replica starting": {DeployObservation{Replicas: 2, Deployment: readyDeployment(1, 1, 2, 1),
			Pods:  []corev1.Pod{onNode("pg-1", "node-a"), onNode("pg-2", "node-b")},
			Nodes: map[string]NodeObservation{"node-a": {Ready: true}, "node-b": {Ready: true}}},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentProgressing, nil}},
		"an unready node while every replica is available": {DeployObservation{Replicas: 1, Deployment: readyDeployment(1, 1, 1, 1),
			Claim: &ClaimObservation{Name: "mem-data", Node: "node-b"}, Nodes: map[string]NodeObservation{"node-b": lostNode}},
			want{metav1.ConditionTrue, memoryv1alpha1.ReasonDeploymentReady, nil}},
		"a surplus replica of the old version": {DeployObservation{Replicas: 1, Deployment: readyDeployment(1, 1, 2, 1)},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentProgressing, []string{"2 of 1 replicas updated"}}},
		// The first cause that applies is the one a reader sees: these rows pin the order.
		"an invalid spec over a scale to zero": {DeployObservation{SpecErr: errors.New("spec.lifecycle: bad"), Replicas: 0},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonInvalidSpec, []string{"spec.lifecycle"}}},
		"a scale to zero over a missing Secret": {DeployObservation{Replicas: 0, Deployment: readyDeployment(1, 1, 0, 0), BackendSecret: `Secret ns/pg key "dsn"`,
			Pods: []corev1.Pod{waitingPod("CreateContainerConfigError", `secret "pg" not found`)}},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonScaledToZero, nil}},
		"a missing Secret over an exceeded deadline": {DeployObservation{Replicas: 1, Deployment: failed, BackendSecret: `Secret ns/pg key "dsn"`,
			Pods: []corev1.Pod{waitingPod("CreateContainerConfigError", `secret "pg" not found`)}},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonBackendSecretMissing, []string{`secret "pg" not found`}}},
		"an exceeded deadline over a lost node": {DeployObservation{Replicas: 1, Deployment: failed,
			Claim: &ClaimObservation{Name: "mem-data", Node: "node-b"}, Nodes: map[string]NodeObservation{"node-b": lostNode}},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentFailed, []string{"timed out"}}},
		"a lost node over an old generation": {DeployObservation{Replicas: 1, Deployment: readyDeployment(3, 2, 1, 0),
			Claim: &ClaimObservation{Name: "mem-data", Node: "node-b"}, Nodes: map[string]NodeObservation{"node-b": lostNode}},
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonNodeUnavailable, []string{"node node-b"}}},
	} {
		t.Run(name, func(t *testing.T) { check(t, Deployed(tc.obs), tc.want) })
	}
}

// lostNode is a node whose kubelet stopped answering, as the node lifecycle controller marks it.
var lostNode = NodeObservation{Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}

// onNode is a pod scheduled to node ("" for a pod not scheduled).
func onNode(name, node string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}}
}

// crashLooping is a pod whose container waits in CrashLoopBackOff after exiting with msg as
// its termination message (its last log lines, under FallbackToLogsOnError).
func crashLooping(msg string) corev1.Pod {
	p := waitingPod("CrashLoopBackOff", "back-off 10s restarting failed container")
	p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: msg}
	// The kubelet backs off only after a restart.
	p.Status.ContainerStatuses[0].RestartCount = 1
	return p
}

const hashA = condtest.HashA

var run = condtest.Run

// TestCrashLoopIsOneFact: between two restarts the container is Running (not ready) for a
// moment and Waiting in CrashLoopBackOff the rest of the time; both must give the same
// condition, word for word, or every restart would flip it and announce it again. A container
// that exited once and is ready again is no crash loop, and neither is a clean exit.
func TestCrashLoopIsOneFact(t *testing.T) {
	const cause = "serve: open postgres: password authentication failed for user \"agent\""
	waiting := crashLooping(cause)
	waiting.Status.ContainerStatuses[0].RestartCount = 3
	running := crashLooping(cause)
	running.Status.ContainerStatuses[0].RestartCount = 4
	running.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	obs := func(p corev1.Pod) DeployObservation {
		return DeployObservation{Replicas: 1, Deployment: readyDeployment(1, 1, 1, 0), Pods: []corev1.Pod{p}}
	}
	a, b := Deployed(obs(waiting)), Deployed(obs(running))
	if a.Reason != memoryv1alpha1.ReasonAdapterCrashLooping || a.Message != b.Message || a.Reason != b.Reason {
		t.Fatalf("waiting: %s %q\nrunning: %s %q", a.Reason, a.Message, b.Reason, b.Message)
	}
	if !strings.Contains(a.Message, cause) {
		t.Errorf("the cause is not quoted: %q", a.Message)
	}
	recovered := running
	recovered.Status.ContainerStatuses = []corev1.ContainerStatus{running.Status.ContainerStatuses[0]}
	recovered.Status.ContainerStatuses[0].Ready = true
	clean := crashLooping("")
	clean.Status.ContainerStatuses[0].RestartCount = 1
	clean.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode = 0
	for name, p := range map[string]corev1.Pod{"ready again": recovered, "a clean exit": clean} {
		if c := Deployed(obs(p)); c.Reason == memoryv1alpha1.ReasonAdapterCrashLooping {
			t.Errorf("%s: %s %q", name, c.Reason, c.Message)
		}
	}
}

// TestGitOpsConditions: Ready restates Available whatever it says; Stalled is present exactly
// for the reasons that need a person, Reconciling for every other reason but ScaledToZero,
// and neither while Available is True.
func TestGitOpsConditions(t *testing.T) {
	for _, tc := range []struct {
		status               metav1.ConditionStatus
		reason               string
		reconciling, stalled bool
	}{
		{metav1.ConditionTrue, memoryv1alpha1.ReasonAdapterAvailable, false, false},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentProgressing, true, false},
		{metav1.ConditionUnknown, memoryv1alpha1.ReasonConformanceRunning, true, false},
		{metav1.ConditionUnknown, memoryv1alpha1.ReasonConformancePending, true, false},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceInvalidatesManifest, true, false},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonServiceVersionChanged, true, false},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonNodeUnavailable, true, false},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonScaledToZero, false, false},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonAdapterCrashLooping, false, true},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonConformanceFailed, false, true},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonBackendSecretMissing, false, true},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonInvalidSpec, false, true},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentFailed, false, true},
	} {
		available := metav1.Condition{Type: memoryv1alpha1.ConditionAvailable, Status: tc.status, Reason: tc.reason, Message: "Deployed: why"}
		set, remove := GitOps(available)
		got := map[string]metav1.Condition{}
		for _, c := range set {
			got[c.Type] = c
		}
		ready, ok := got[memoryv1alpha1.ConditionReady]
		if !ok || ready.Status != tc.status || ready.Reason != tc.reason || ready.Message != available.Message {
			t.Errorf("%s: Ready %+v does not restate Available", tc.reason, ready)
		}
		_, rec := got[memoryv1alpha1.ConditionReconciling]
		_, st := got[memoryv1alpha1.ConditionStalled]
		if rec != tc.reconciling || st != tc.stalled {
			t.Errorf("%s: Reconciling %v, Stalled %v; want %v, %v", tc.reason, rec, st, tc.reconciling, tc.stalled)
		}
		if len(set)+len(remove) != len(GitOpsTypes) {
			t.Errorf("%s: sets %d and removes %v: every GitOps condition is either", tc.reason, len(set), remove)
		}
	}
}

func TestConformantCondition(t *testing.T) {
	key := &render.RunKey{ManifestHash: hashA, ServiceVersion: "3.50", AdapterVersion: "v1"}
	for name, tc := range map[string]struct {
		obs  ConformObservation
		want want
	}{
		"no evidence yet":  {ConformObservation{}, want{metav1.ConditionUnknown, memoryv1alpha1.ReasonConformancePending, []string{"evidence"}}},
		"first run going":  {ConformObservation{Key: key, Job: JobObservation{Phase: JobRunning, Name: "job-x"}}, want{metav1.ConditionUnknown, memoryv1alpha1.ReasonConformanceRunning, []string{"job-x", "3.50"}}},
		"blocked":          {ConformObservation{Key: key, Job: JobObservation{Phase: JobBlocked, Name: "job-x", Message: "ErrImagePull"}}, want{metav1.ConditionUnknown, memoryv1alpha1.ReasonConformanceJobBlocked, []string{"job-x", "ErrImagePull"}}},
		"passed":           {ConformObservation{Key: key, Last: run("3.50", "v1", 17, 0, "")}, want{metav1.ConditionTrue, memoryv1alpha1.ReasonConformancePassed, nil}},
		"failed cases":     {ConformObservation{Key: key, Last: run("3.50", "v1", 15, 2, "", "limit", "consistency")}, want{metav1.ConditionFalse, memoryv1alpha1.ReasonConformanceFailed, []string{"limit, consistency"}}},
		"run-level check":  {ConformObservation{Key: key, Last: run("3.50", "v1", 17, 0, "deployed server: manifest: differs")}, want{metav1.ConditionFalse, memoryv1alpha1.ReasonConformanceFailed, []string{"manifest: differs"}}},
		"no report":        {ConformObservation{Key: key, Last: run("3.50", "v1", 0, 0, "DeadlineExceeded: Job was active longer than specified deadline")}, want{metav1.ConditionFalse, memoryv1alpha1.ReasonConformanceJobFailed, []string{"DeadlineExceeded"}}},
		"version outdated": {ConformObservation{Key: key, Last: run("3.49", "v1", 17, 0, ""), Job: JobObservation{Phase: JobRunning, Name: "job-y"}}, want{metav1.ConditionFalse, memoryv1alpha1.ReasonConformanceOutdated, []string{`"3.49"`, `"3.50"`, "job-y"}}},
	} {
		t.Run(name, func(t *testing.T) { check(t, Conformant(tc.obs), tc.want) })
	}
}

func TestAvailableCondition(t *testing.T) {
	c := func(typ string, st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: typ + " says " + reason}
	}
	allTrue := []metav1.Condition{
		c(memoryv1alpha1.ConditionManifestValid, metav1.ConditionTrue, "A"), c(memoryv1alpha1.ConditionDeployed, metav1.ConditionTrue, "B"),
		c(memoryv1alpha1.ConditionConformant, metav1.ConditionTrue, "C"), c(memoryv1alpha1.ConditionHealthy, metav1.ConditionTrue, "D"),
	}
	check(t, Available(allTrue), want{metav1.ConditionTrue, memoryv1alpha1.ReasonAdapterAvailable, nil})
	some := append([]metav1.Condition(nil), allTrue...)
	some[2] = c(memoryv1alpha1.ConditionConformant, metav1.ConditionUnknown, "Running")
	some[3] = c(memoryv1alpha1.ConditionHealthy, metav1.ConditionFalse, "Bad")
	check(t, Available(some), want{metav1.ConditionUnknown, "Running", []string{"Conformant: Conformant says Running"}})
	check(t, Available(allTrue[:3]), want{metav1.ConditionUnknown, memoryv1alpha1.ReasonConformancePending, []string{"Healthy"}})
	// Evidence that contradicts the manifest speaks over the rollout and the rerun it causes.
	hidden := append([]metav1.Condition(nil), allTrue...)
	hidden[1] = c(memoryv1alpha1.ConditionDeployed, metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentProgressing)
	hidden[2] = c(memoryv1alpha1.ConditionConformant, metav1.ConditionFalse, memoryv1alpha1.ReasonConformanceOutdated)
	hidden[3] = c(memoryv1alpha1.ConditionHealthy, metav1.ConditionFalse, memoryv1alpha1.ReasonServiceVersionChanged)
	check(t, Available(hidden), want{metav1.ConditionFalse, memoryv1alpha1.ReasonServiceVersionChanged, []string{"Healthy: "}})
	// Evidence that could not be read does not: the rollout is the likelier cause.
	hidden[3] = c(memoryv1alpha1.ConditionHealthy, metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceUnreachable)
	check(t, Available(hidden), want{metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentProgressing, nil})
	// A scale to zero speaks over the last evidence of the pods it removed.
	hidden[1] = c(memoryv1alpha1.ConditionDeployed, metav1.ConditionFalse, memoryv1alpha1.ReasonScaledToZero)
	hidden[3] = c(memoryv1alpha1.ConditionHealthy, metav1.ConditionFalse, memoryv1alpha1.ReasonCapabilityProbeFailed)
	check(t, Available(hidden), want{metav1.ConditionFalse, memoryv1alpha1.ReasonScaledToZero, nil})
}

// TestRestates: Available restates exactly the input it copied, whatever that input is, and
// nothing else.
func TestRestates(t *testing.T) {
	ok := func(typ string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Fine", Message: typ + " holds"}
	}
	inputs := []metav1.Condition{ok(memoryv1alpha1.ConditionManifestValid), ok(memoryv1alpha1.ConditionDeployed),
		ok(memoryv1alpha1.ConditionConformant), ok(memoryv1alpha1.ConditionHealthy)}
	for i := range inputs {
		for _, status := range []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionUnknown} {
			cs := slices.Clone(inputs)
			cs[i] = metav1.Condition{Type: cs[i].Type, Status: status, Reason: "Broken", Message: "it broke"}
			available := Available(cs)
			for j, c := range cs {
				if got := Restates(available, c); got != (i == j) {
					t.Errorf("%s %s: Restates(Available, %s) = %v", cs[i].Type, status, c.Type, got)
				}
			}
			other := cs[i]
			other.Message = "something else"
			if Restates(available, other) {
				t.Errorf("%s %s: restated with another message", cs[i].Type, status)
			}
		}
	}
	available := Available(inputs)
	for _, c := range inputs {
		if Restates(available, c) {
			t.Errorf("Available True restates %s", c.Type)
		}
	}
}
