package runs

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond/condtest"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

func TestBlockedReason(t *testing.T) {
	unschedulable := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "run-1"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: insufficient memory",
	}}}}
	for name, tc := range map[string]struct {
		pods []corev1.Pod
		want string
	}{
		"no pod yet":        {nil, ""},
		"starting":          {[]corev1.Pod{condtest.WaitingPod("ContainerCreating", "")}, ""},
		"image pull":        {[]corev1.Pod{condtest.WaitingPod("ImagePullBackOff", `Back-off pulling image "x:v9"`)}, `ImagePullBackOff: Back-off pulling image "x:v9"`},
		"missing secret":    {[]corev1.Pod{condtest.WaitingPod("CreateContainerConfigError", `secret "pg" not found`)}, `secret "pg" not found`},
		"unschedulable pod": {[]corev1.Pod{unschedulable}, "insufficient memory"},
		// An External run's server is a native sidecar: its status is an init container's.
		"external server's Secret": {[]corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "run-1"}, Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{
			Name: "server", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "byo-db" not found`}},
		}}}}}, `secret "byo-db" not found`},
	} {
		t.Run(name, func(t *testing.T) {
			got := BlockedReason(tc.pods)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("blockedReason = %q, want it to name %q", got, tc.want)
			}
		})
	}
}

func TestResultFromJob(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	key := render.RunKey{ManifestHash: condtest.HashA, ServiceVersion: "3.50", AdapterVersion: "v1"}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "mem-conformance-1"}}
	terminated := func(msg string, code int32) []corev1.Pod {
		return []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "mem-conformance-1-x"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: msg}},
		}}}}}
	}
	report := func(result string, cases ...string) string {
		var cs []string
		for _, c := range cases {
			id, outcome, _ := strings.Cut(c, "=")
			cs = append(cs, fmt.Sprintf(`{"id":%q,"outcome":%q}`, id, outcome))
		}
		return fmt.Sprintf(`{"suite_version":"1","adapter_id":"sqlite","start_time":"2026-12-03T09:59:00Z","duration_ms":1000,"result":%q,"error":"deployed server: manifest: differs","counts":{"passed":0,"failed":0,"not_applicable":0},"cases":[%s]}`, result, strings.Join(cs, ","))
	}

	r := ResultFromJob(job, nil, key, "", "DeadlineExceeded: Job was active longer than specified deadline", now)
	if r.Passed+r.Failed != 0 || !strings.Contains(r.Message, "DeadlineExceeded") || r.ServiceVersion != "3.50" {
		t.Errorf("a Job without a pod: %+v", r)
	}
	r = ResultFromJob(job, terminated("panic: boom", 2), key, "", "BackoffLimitExceeded", now)
	if r.Passed+r.Failed != 0 || !strings.Contains(r.Message, "exited 2") {
		t.Errorf("an unreadable termination message: %+v", r)
	}
	r = ResultFromJob(job, terminated(report("Failed", "limit=Failed", "unknown-id=Passed", "a-case-from-a-newer-suite=Passed"), 1), key, "7", "", now)
	if r.Failed != 1 || r.Passed != 1 || len(r.Cases) != 2 || r.RerunToken != "7" {
		t.Errorf("a failing report (unknown case ids dropped, as the CRD's enum would refuse them): %+v", r)
	}
	if r.Message != "deployed server: manifest: differs" {
		t.Errorf("the run-level error is kept: %q", r.Message)
	}
}

func TestReportWait(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	finished := func(at time.Time, typ batchv1.JobConditionType) *batchv1.Job {
		return &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)},
		}}}
	}
	terminated := []corev1.Pod{{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}},
	}}}}}
	running := []corev1.Pod{{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}}}}}
	for _, tc := range []struct {
		name string
		job  *batchv1.Job
		pods []corev1.Pod
		want time.Duration
	}{
		{"report cached: no wait", finished(now, batchv1.JobComplete), terminated, 0},
		{"just completed, no pod cached yet: wait", finished(now, batchv1.JobComplete), nil, 2 * time.Second},
		{"just failed, pod cached still running: wait", finished(now.Add(-time.Second), batchv1.JobFailed), running, 2 * time.Second},
		{"near the end of the grace: the rest of it", finished(now.Add(-ReportGrace+time.Second), batchv1.JobComplete), nil, time.Second},
		{"grace passed: the pod is gone, a verdict", finished(now.Add(-ReportGrace), batchv1.JobComplete), nil, 0},
		{"not finished: nothing to wait for", &batchv1.Job{}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReportWait(tc.job, tc.pods, now); got != tc.want {
				t.Errorf("reportWait = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFailedRunBackoff(t *testing.T) {
	base := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	job := func(minute int, c batchv1.JobConditionType) batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(base.Add(time.Duration(minute) * time.Minute))}}
		if c != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: c, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}
		}
		return j
	}
	for _, tc := range []struct {
		name string
		jobs []batchv1.Job
		want time.Duration
	}{
		{"one failure", []batchv1.Job{job(0, batchv1.JobFailed)}, time.Minute},
		{"two in a row", []batchv1.Job{job(0, batchv1.JobFailed), job(1, batchv1.JobFailed)}, 2 * time.Minute},
		{"three in a row, listed in any order", []batchv1.Job{job(2, batchv1.JobFailed), job(0, batchv1.JobFailed), job(1, batchv1.JobFailed)}, 4 * time.Minute},
		{"a completed run ends the streak", []batchv1.Job{job(0, batchv1.JobFailed), job(1, batchv1.JobComplete), job(2, batchv1.JobFailed)}, time.Minute},
		{"a running Job does not count", []batchv1.Job{job(0, batchv1.JobFailed), job(1, batchv1.JobFailed), job(3, "")}, 2 * time.Minute},
		{"capped", []batchv1.Job{job(0, batchv1.JobFailed), job(1, batchv1.JobFailed), job(2, batchv1.JobFailed), job(3, batchv1.JobFailed), job(4, batchv1.JobFailed), job(5, batchv1.JobFailed), job(6, batchv1.JobFailed)}, failedRunRetryMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FailedRunBackoff(tc.jobs); got != tc.want {
				t.Errorf("failedRunBackoff = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReadReport(t *testing.T) {
	passed := condtest.CompactReport("Passed", "", condtest.AllCases(conformance.Passed)...)
	failed := condtest.CompactReport("Failed", "boom", "limit=Failed")
	for name, tc := range map[string]struct {
		pods    []corev1.Pod
		result  conformance.Outcome // "" for no report
		problem string
	}{
		"no pod":                                   {nil, "", ""},
		"a running pod":                            {[]corev1.Pod{condtest.WaitingPod("ContainerCreating", "")}, "", ""},
		"an unreadable message":                    {[]corev1.Pod{condtest.RunPod("p1", "panic: boom")}, "", "pod p1 exited 1 (Error) without a readable report"},
		"the last pod's report":                    {[]corev1.Pod{condtest.RunPod("p1", failed), condtest.RunPod("p2", passed)}, conformance.Passed, ""},
		"a later unreadable pod":                   {[]corev1.Pod{condtest.RunPod("p1", failed), condtest.RunPod("p2", "oom")}, conformance.Failed, "pod p2 exited"},
		"a retry's report after an unreadable one": {[]corev1.Pod{condtest.RunPod("p1", "oom"), condtest.RunPod("p2", passed)}, conformance.Passed, "pod p1 exited"},
	} {
		t.Run(name, func(t *testing.T) {
			rep, problem := readReport(tc.pods)
			if (rep == nil) != (tc.result == "") || (rep != nil && rep.Result != tc.result) {
				t.Errorf("report = %+v, want result %q", rep, tc.result)
			}
			if (problem == "") != (tc.problem == "") || !strings.Contains(problem, tc.problem) {
				t.Errorf("problem = %q, want %q", problem, tc.problem)
			}
		})
	}
}

func TestNoReportMessage(t *testing.T) {
	for _, tc := range []struct{ failMsg, problem, want string }{
		{"", "", "the run's pod is gone"},
		{"DeadlineExceeded: too long", "", "DeadlineExceeded: too long"},
		{"", "pod p exited 2", "pod p exited 2"},
		{"BackoffLimitExceeded", "pod p exited 2", "BackoffLimitExceeded; pod p exited 2"},
	} {
		if got := noReportMessage(tc.failMsg, tc.problem); got != tc.want {
			t.Errorf("noReportMessage(%q, %q) = %q, want %q", tc.failMsg, tc.problem, got, tc.want)
		}
	}
	if got := noReportMessage(strings.Repeat("x", 2000), ""); len(got) != 1024 {
		t.Errorf("noReportMessage keeps %d bytes, want at most the API's 1024", len(got))
	}
}

func TestReportMessage(t *testing.T) {
	all := len(memoryv1alpha1.AllConformanceCaseIDs)
	for name, tc := range map[string]struct {
		report string
		want   string
	}{
		"every case passed":                 {condtest.CompactReport("Passed", "", condtest.AllCases(conformance.Passed)...), ""},
		"a run-level error":                 {condtest.CompactReport("Failed", "deployed server: manifest: differs", condtest.AllCases(conformance.Passed)...), "deployed server: manifest: differs"},
		"failed without a failing case":     {condtest.CompactReport("Failed", "", condtest.AllCases(conformance.Passed)...), "the run reported Failed without a failing case"},
		"a failing case says enough":        {condtest.CompactReport("Failed", "", "limit=Failed"), ""},
		"a partial matrix verifies nothing": {condtest.CompactReport("Passed", "", "limit=Passed", "consistency=Passed"), fmt.Sprintf("the report holds 2 of the %d matrix cases", all)},
		"a failed profile says which": {withProfiles(condtest.CompactReport("Failed", "", condtest.AllCases(conformance.Passed)...),
			`[{"id":"read-only","outcome":"NotApplicable","message":"not claimed"},{"id":"isolation","outcome":"Failed","message":"sub-scope B retrieves A's item"},{"id":"some-newer-profile","outcome":"Failed"}]`),
			"governance profile failed: isolation: sub-scope B retrieves A's item"},
	} {
		t.Run(name, func(t *testing.T) {
			rep, err := conformance.ParseCompact([]byte(tc.report))
			if err != nil {
				t.Fatal(err)
			}
			res := &memoryv1alpha1.ConformanceResult{}
			addCases(res, rep)
			addProfiles(res, rep)
			if got := reportMessage(res, rep); got != tc.want {
				t.Errorf("reportMessage = %q, want %q", got, tc.want)
			}
		})
	}
}

// withProfiles puts a profiles list (JSON) into a compact report.
func withProfiles(report, profiles string) string {
	return strings.TrimSuffix(report, "}") + `,"profiles":` + profiles + "}"
}

// TestProfileIDsMatchTheSuite: the CRD's profile enum is the suite's list, so no profile a
// run reports is dropped from status for want of an enum value.
func TestProfileIDsMatchTheSuite(t *testing.T) {
	var got []string
	for _, id := range memoryv1alpha1.AllConformanceProfileIDs {
		got = append(got, string(id))
	}
	var want []string
	for _, id := range conformance.ProfileIDs() {
		want = append(want, string(id))
	}
	if !slices.Equal(got, want) {
		t.Errorf("API profile ids %v, suite %v", got, want)
	}
}
