// Package condtest holds what the table tests of the controller's decisions share: the part
// of a condition a row pins, the check of it, and a recorded conformance run to decide from.
package condtest

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/agentmem/memory-adapter-operator/conformance"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// HashA is a well-formed manifest hash the tables use as spec.manifest's.
const HashA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// Want is the part of a condition a table row pins: status, reason and words the message
// must carry (the evidence it names). Tables declare `type want condtest.Want`, so their
// rows stay short unkeyed literals.
type Want struct {
	Status metav1.ConditionStatus
	Reason string
	Words  []string
}

// Check is Check of the condition w pins.
func (w Want) Check(t *testing.T, got metav1.Condition) {
	t.Helper()
	Check(t, got, w.Status, w.Reason, w.Words)
}

// Check fails t when got has another status or reason than a table row pins, when its
// message lacks one of words (the evidence it must name), or when a condition that is not
// True says nothing about why.
func Check(t *testing.T, got metav1.Condition, status metav1.ConditionStatus, reason string, words []string) {
	t.Helper()
	if got.Status != status || got.Reason != reason {
		t.Fatalf("got %s/%s (%q), want %s/%s", got.Status, got.Reason, got.Message, status, reason)
	}
	for _, word := range words {
		if !strings.Contains(got.Message, word) {
			t.Errorf("message %q does not name %q", got.Message, word)
		}
	}
	if got.Status != metav1.ConditionTrue && got.Message == "" {
		t.Errorf("a %s condition needs a message", got.Status)
	}
}

// Run is a recorded conformance run of manifest HashA by job mem-conformance-1, with the
// given versions, counts and message, and a failed case for each id.
func Run(sv, av string, passed, failed int32, msg string, failedIDs ...memoryv1alpha1.ConformanceCaseID) *memoryv1alpha1.ConformanceResult {
	r := &memoryv1alpha1.ConformanceResult{JobName: "mem-conformance-1", ManifestHash: HashA, ServiceVersion: sv, AdapterVersion: av, Passed: passed, Failed: failed, Message: msg}
	for _, id := range failedIDs {
		r.Cases = append(r.Cases, memoryv1alpha1.ConformanceCaseResult{ID: id, Outcome: memoryv1alpha1.OutcomeFailed})
	}
	return r
}

// WaitingPod is pod mem-abc with one container waiting for reason, with msg.
func WaitingPod(reason, msg string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mem-abc"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
		}}},
	}
}

// CompactReport is a run pod's termination message: the report's result and error, and a case
// per "id=Outcome".
func CompactReport(result, errMsg string, cases ...string) string {
	var cs []string
	for _, c := range cases {
		id, outcome, _ := strings.Cut(c, "=")
		cs = append(cs, fmt.Sprintf(`{"id":%q,"outcome":%q}`, id, outcome))
	}
	return fmt.Sprintf(`{"suite_version":"1","adapter_id":"sqlite","start_time":"2026-12-03T09:59:00Z","duration_ms":1000,"result":%q,"error":%q,"counts":{"passed":0,"failed":0,"not_applicable":0},"cases":[%s]}`,
		result, errMsg, strings.Join(cs, ","))
}

// AllCases is every matrix case with outcome, as CompactReport takes them.
func AllCases(outcome conformance.Outcome) []string {
	var cs []string
	for _, id := range memoryv1alpha1.AllConformanceCaseIDs {
		cs = append(cs, string(id)+"="+string(outcome))
	}
	return cs
}

// RunPod is a run pod whose container ended with msg as its termination message.
func RunPod(name, msg string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: msg}},
	}}}}
}
