package runs

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fmt"
	"slices"
	"strings"
	"time"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// JobFinished reports whether the Job ended, and why when it failed.
func JobFinished(job *batchv1.Job) (bool, string) {
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

// FirstRetry is how long after a failed or broken run its first retry is due: the shortest
// FailedRunBackoff.
const FirstRetry = failedRunRetry

// FailedRunBackoff returns the delay before retrying after the newest runs failed: 1m after
// one failure, then 2m, 4m, ... up to failedRunRetryMax, counting the consecutive failed Jobs
// from the newest (the history keeps a few, so the count and the delay saturate).
func FailedRunBackoff(jobs []batchv1.Job) time.Duration {
	finished := slices.DeleteFunc(slices.Clone(jobs), func(j batchv1.Job) bool { done, _ := JobFinished(&j); return !done })
	slices.SortFunc(finished, func(a, b batchv1.Job) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	wait := failedRunRetry
	for i, j := range finished {
		if _, msg := JobFinished(&j); msg == "" {
			break // a Job that completed: the streak ends
		}
		if i > 0 {
			wait = min(2*wait, failedRunRetryMax)
		}
	}
	return wait
}

// RunningPoll is how often the controller looks at a running run's pods. They are not cached
// (the manager's cache leaves the conformance pods out, memoryadapter.CacheOptions), so no pod
// event wakes the adapter when one is stuck pulling its image or cannot be scheduled; the
// Job's own events still wake it when the run ends.
const RunningPoll = 15 * time.Second

// ReportGrace is how long after a Job finished the controller waits for a pod of it with a
// terminated container to show before it records the run as having no report.
// The kubelet writes the pod's final status before the Job controller counts the pod, so in
// a cluster the pod is normally there first; the grace covers watch delivery order and a
// manager that just restarted.
const ReportGrace = 30 * time.Second

// ReportWait returns how long to wait for the finished Job's report to show, or 0
// when a pod with a terminated container is there or the grace has passed.
func ReportWait(job *batchv1.Job, pods []corev1.Pod, now time.Time) time.Duration {
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
	left := finishedAt.Add(ReportGrace).Sub(now)
	if left <= 0 {
		return 0
	}
	return min(left, 2*time.Second)
}

// BlockedReason names why a run's pod cannot start, or "" while it starts or runs normally.
func BlockedReason(pods []corev1.Pod) string {
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

// ResultFromJob reads the compact report from the run pod's termination message. A Job that
// ended without one is recorded as a run with no case and the reason, so the interval and
// the rerun annotation apply to it as to any run.
func ResultFromJob(job *batchv1.Job, pods []corev1.Pod, key render.RunKey, rerun, failMsg string, now time.Time) *memoryv1alpha1.ConformanceResult {
	res := &memoryv1alpha1.ConformanceResult{
		JobName: job.Name, ManifestHash: key.ManifestHash, ServiceVersion: cond.Truncate(key.ServiceVersion, 256),
		AdapterVersion: cond.Truncate(key.AdapterVersion, 256), RerunToken: rerun, CompletionTime: metav1.NewTime(now.Truncate(time.Second)),
	}
	if job.Status.CompletionTime != nil {
		res.CompletionTime = *job.Status.CompletionTime
	}
	report, problem := readReport(pods)
	if report == nil {
		res.Message = noReportMessage(failMsg, problem)
		return res
	}
	addCases(res, report)
	addProfiles(res, report)
	res.Message = reportMessage(res, report)
	return res
}

// readReport returns the report of the last pod that left a readable one, and why the last
// unreadable termination message could not be read.
func readReport(pods []corev1.Pod) (*conformance.CompactReport, string) {
	var report *conformance.CompactReport
	var problem string
	for _, p := range pods {
		rep, prob := podReport(p)
		if rep != nil {
			report = rep
		}
		if prob != "" {
			problem = prob
		}
	}
	return report, problem
}

// podReport returns the first readable report among p's terminated containers, and what the
// last unreadable one before it exited with.
func podReport(p corev1.Pod) (*conformance.CompactReport, string) {
	var problem string
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil {
			continue
		}
		rep, err := conformance.ParseCompact([]byte(t.Message))
		if err == nil {
			return rep, problem
		}
		problem = fmt.Sprintf("pod %s exited %d (%s) without a readable report: %v", p.Name, t.ExitCode, t.Reason, err)
	}
	return nil, problem
}

// noReportMessage explains a run without a report by the Job's failure and the pod's exit,
// whichever are known.
func noReportMessage(failMsg, problem string) string {
	msg := failMsg
	if problem != "" {
		msg = strings.TrimPrefix(msg+"; "+problem, "; ")
	}
	if msg == "" {
		msg = "the run's pod is gone"
	}
	return cond.Truncate(msg, 1024)
}

// addCases adds the report's cases and their counts to res. A case id this operator does not
// know (a newer suite's) is left out, as the CRD's enum would refuse it, and so are cases
// beyond the CRD's limit of 32.
func addCases(res *memoryv1alpha1.ConformanceResult, report *conformance.CompactReport) {
	for _, c := range report.Cases {
		id := memoryv1alpha1.ConformanceCaseID(c.ID)
		if !slices.Contains(memoryv1alpha1.AllConformanceCaseIDs, id) || len(res.Cases) >= 32 {
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
}

// addProfiles adds the report's governance profiles to res; an id this operator does not know
// (a newer suite's) is left out, as the CRD's enum would refuse it.
func addProfiles(res *memoryv1alpha1.ConformanceResult, report *conformance.CompactReport) {
	for _, p := range report.Profiles {
		id := memoryv1alpha1.ConformanceProfileID(p.ID)
		if !slices.Contains(memoryv1alpha1.AllConformanceProfileIDs, id) || slices.ContainsFunc(res.Profiles, func(r memoryv1alpha1.ConformanceProfileResult) bool { return r.ID == id }) {
			continue
		}
		res.Profiles = append(res.Profiles, memoryv1alpha1.ConformanceProfileResult{ID: id, Outcome: memoryv1alpha1.ConformanceOutcome(p.Outcome), Message: cond.Truncate(p.Message, 1024)})
	}
}

// reportMessage is the run-level verdict of a report whose cases are in res: its error when
// it did not pass, or the cases missing from a report that shows no failure, since a partial
// matrix verifies nothing it left out.
func reportMessage(res *memoryv1alpha1.ConformanceResult, report *conformance.CompactReport) string {
	var msg string
	if report.Result != conformance.Passed {
		msg = report.Error
		var profiles []string
		for _, p := range res.Profiles {
			if p.Outcome == memoryv1alpha1.OutcomeFailed {
				profiles = append(profiles, fmt.Sprintf("%s: %s", p.ID, p.Message))
			}
		}
		switch {
		case msg == "" && len(profiles) > 0:
			msg = "governance profile failed: " + strings.Join(profiles, "; ")
		case msg == "" && res.Failed == 0:
			msg = "the run reported Failed without a failing case"
		}
		msg = cond.Truncate(msg, 1024)
	}
	if len(res.Cases) != len(memoryv1alpha1.AllConformanceCaseIDs) && msg == "" && res.Failed == 0 {
		msg = fmt.Sprintf("the report holds %d of the %d matrix cases", len(res.Cases), len(memoryv1alpha1.AllConformanceCaseIDs))
	}
	return msg
}
