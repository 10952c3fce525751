package memoryadapter

import (
	"reflect"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond/condtest"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/conditions"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/runs"
)

var (
	compactReport = condtest.CompactReport
	allCases      = condtest.AllCases
)

var runPod = condtest.RunPod

// finishedJob is a run Job that ended as typ at, having started a minute before.
func finishedJob(name string, typ batchv1.JobConditionType, at time.Time) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: batchv1.JobStatus{
		StartTime:  &metav1.Time{Time: at.Add(-time.Minute)},
		Conditions: []batchv1.JobCondition{{Type: typ, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: metav1.NewTime(at)}},
	}}
}

func TestConformRunKey(t *testing.T) {
	last := run("3.49", "v0", 17, 0, "")
	evidence := &memory.EvidenceReport{ServiceVersion: "3.50", AdapterVersion: "v1"}
	for name, tc := range map[string]struct {
		in     conformInput
		want   *render.RunKey
		verify bool
	}{
		"no evidence yet":                         {conformInput{last: last}, nil, false},
		"backend unreachable, no run yet":         {conformInput{evidence: &memory.EvidenceReport{}}, nil, false},
		"backend unreachable: the last run's key": {conformInput{evidence: &memory.EvidenceReport{}, last: last}, &render.RunKey{ManifestHash: hashA, ServiceVersion: "3.49", AdapterVersion: "v0"}, false},
		"pods disagree: the last run's key":       {conformInput{evidence: evidence, mixed: "3.49 and 3.50", last: last}, &render.RunKey{ManifestHash: hashA, ServiceVersion: "3.49", AdapterVersion: "v0"}, false},
		"versions agreed: the evidence's key":     {conformInput{evidence: evidence, last: last}, &render.RunKey{ManifestHash: hashA, ServiceVersion: "3.50", AdapterVersion: "v1"}, true},
	} {
		t.Run(name, func(t *testing.T) {
			tc.in.manifestHash = hashA
			got, verify := tc.in.runKey()
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) || verify != tc.verify {
				t.Errorf("runKey = %v, %t; want %v, %t", got, verify, tc.want, tc.verify)
			}
		})
	}
}

func TestScheduleRun(t *testing.T) {
	done := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	key := render.RunKey{ManifestHash: hashA, ServiceVersion: "3.50", AdapterVersion: "v1"}
	finished := func(passed, failed int32, token string) *memoryv1alpha1.ConformanceResult {
		r := run("3.50", "v1", passed, failed, "")
		r.CompletionTime, r.RerunToken = metav1.NewTime(done), token
		return r
	}
	failedJob := func(minute int) batchv1.Job {
		j := *finishedJob("", batchv1.JobFailed, done)
		j.CreationTimestamp = metav1.NewTime(done.Add(time.Duration(minute) * time.Minute))
		return j
	}
	after := done.Format(time.RFC3339)
	for name, tc := range map[string]struct {
		last     *memoryv1alpha1.ConformanceResult
		rerun    string
		interval time.Duration
		history  []batchv1.Job
		seed     string
		due      time.Time
	}{
		"first run: now":                               {nil, "", 24 * time.Hour, nil, render.RunSeed(key, "", ""), time.Time{}},
		"another version verified: now":                {run("3.49", "v1", 17, 0, ""), "", 24 * time.Hour, nil, render.RunSeed(key, "", ""), time.Time{}},
		"a rerun asked for: now":                       {finished(17, 0, ""), "7", 24 * time.Hour, nil, render.RunSeed(key, "7", ""), time.Time{}},
		"passed: after the interval":                   {finished(17, 0, "7"), "7", 24 * time.Hour, nil, render.RunSeed(key, "7", after), done.Add(24 * time.Hour)},
		"a passing run's history is no backoff":        {finished(17, 0, ""), "", 24 * time.Hour, []batchv1.Job{failedJob(0)}, render.RunSeed(key, "", after), done.Add(24 * time.Hour)},
		"failed: backoff over the failed history":      {finished(15, 2, ""), "", 24 * time.Hour, []batchv1.Job{failedJob(0), failedJob(1)}, render.RunSeed(key, "", after), done.Add(2 * time.Minute)},
		"broken: backoff":                              {finished(0, 0, ""), "", 24 * time.Hour, []batchv1.Job{failedJob(0)}, render.RunSeed(key, "", after), done.Add(time.Minute)},
		"failed: an interval shorter than the backoff": {finished(15, 2, ""), "", 30 * time.Second, []batchv1.Job{failedJob(0)}, render.RunSeed(key, "", after), done.Add(30 * time.Second)},
	} {
		t.Run(name, func(t *testing.T) {
			in := conformInput{last: tc.last, manifestHash: hashA, rerun: tc.rerun, interval: tc.interval}
			seed, due := scheduleRun(in, key, tc.history)
			if seed != tc.seed || !due.Equal(tc.due) {
				t.Errorf("scheduleRun = %q, %v; want %q, %v", seed, due, tc.seed, tc.due)
			}
		})
	}
}

func TestDecideConformance(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	key := &render.RunKey{ManifestHash: hashA, ServiceVersion: "3.50", AdapterVersion: "v1"}
	older := run("3.49", "v1", 17, 0, "") // a passing run of the previous service version
	const name = "mem-conformance-2"
	// due is a run for key that may start now, with older as the last run.
	due := func(mod func(*runObservation)) runObservation {
		o := runObservation{
			conformInput: conformInput{evidence: &memory.EvidenceReport{ServiceVersion: "3.50", AdapterVersion: "v1"}, last: older,
				manifestHash: hashA, interval: 24 * time.Hour, deployed: true, now: now},
			key: key, verify: true, name: name,
		}
		if mod != nil {
			mod(&o)
		}
		return o
	}
	running := conditions.JobObservation{Name: name, Phase: conditions.JobRunning}
	absent := conditions.JobObservation{Name: name, Phase: conditions.JobAbsent}
	for rowName, tc := range map[string]struct {
		obs  runObservation
		want wantDecision
	}{
		"no evidence yet: nothing to decide from": {runObservation{conformInput: conformInput{last: older, now: now}},
			wantDecision{action: conformIdle, verified: "last"}},
		"no version to verify: the last verdict stands": {due(func(o *runObservation) {
			o.evidence.ServiceVersion, o.key, o.verify, o.name = "", &render.RunKey{ManifestHash: hashA, ServiceVersion: "3.49", AdapterVersion: "v1"}, false, ""
		}), wantDecision{action: conformIdle, verified: "last"}},
		"not due: look again when it is": {due(func(o *runObservation) { o.last, o.due, o.name = run("3.50", "v1", 17, 0, ""), now.Add(time.Hour), "" }),
			wantDecision{action: conformNotDue, verified: "last", requeue: time.Hour}},
		"due, not deployed: no run": {due(func(o *runObservation) { o.deployed = false }),
			wantDecision{action: conformIdle, job: absent, verified: "last"}},
		"due, deployed: start the run": {due(nil),
			wantDecision{action: conformStartRun, job: absent, verified: "last"}},
		"running": {due(func(o *runObservation) {
			o.job, o.pods = &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}}, []corev1.Pod{waitingPod("ContainerCreating", "")}
		}), wantDecision{action: conformIdle, job: running, verified: "last", requeue: runs.RunningPoll}},
		"blocked": {due(func(o *runObservation) {
			o.job, o.pods = &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}}, []corev1.Pod{waitingPod("ImagePullBackOff", `Back-off pulling image "x:v9"`)}
		}), wantDecision{action: conformIdle, job: conditions.JobObservation{Name: name, Phase: conditions.JobBlocked, Message: `pod mem-abc: ImagePullBackOff: Back-off pulling image "x:v9"`}, verified: "last", requeue: runs.RunningPoll}},
		"finished, its pod not cached yet: wait for the report": {due(func(o *runObservation) { o.job = finishedJob(name, batchv1.JobComplete, now) }),
			wantDecision{action: conformAwaitReport, job: running, verified: "last", requeue: 2 * time.Second}},
		"passed: record it, and it is the verified run": {due(func(o *runObservation) {
			o.job, o.pods = finishedJob(name, batchv1.JobComplete, now), []corev1.Pod{runPod("p", compactReport("Passed", "", allCases(conformance.Passed)...))}
		}), wantDecision{action: conformRecordRun, job: absent, verified: "result", outcome: "passed"}},
		"failed cases: record it, nothing verified": {due(func(o *runObservation) {
			o.job, o.pods = finishedJob(name, batchv1.JobFailed, now), []corev1.Pod{runPod("p", compactReport("Failed", "", "limit=Failed", "consistency=Passed"))}
		}), wantDecision{action: conformRecordRun, job: absent, outcome: "failed"}},
		"pod gone after the grace: a broken run": {due(func(o *runObservation) { o.job = finishedJob(name, batchv1.JobFailed, now.Add(-runs.ReportGrace)) }),
			wantDecision{action: conformRecordRun, job: absent, outcome: "broken"}},
	} {
		t.Run(rowName, func(t *testing.T) { checkConformDecision(t, tc.obs, tc.want) })
	}
}

// wantDecision is what a row of TestDecideConformance pins of a conformDecision; the key and
// the last run Conformant is decided from are the observation's (none without evidence), or
// the recorded run for conformRecordRun.
type wantDecision struct {
	action conformAction
	job    conditions.JobObservation
	// verified is the run Healthy holds evidence to: "last" (the observed one), "result"
	// (the run recorded now) or "" (none).
	verified string
	requeue  time.Duration
	outcome  string
}

func checkConformDecision(t *testing.T, o runObservation, w wantDecision) {
	t.Helper()
	d := decideConformance(o)
	if d.action != w.action || d.requeue != w.requeue || d.outcome != w.outcome || d.conform.Job != w.job {
		t.Errorf("decision %v, requeue %v, outcome %q, job %+v; want %v, %v, %q, %+v", d.action, d.requeue, d.outcome, d.conform.Job, w.action, w.requeue, w.outcome, w.job)
	}
	if records := d.action == conformRecordRun; (d.result != nil) != records || (records && d.result.JobName != o.name) {
		t.Fatalf("result = %+v with action %v, want job %s's run exactly when it records one", d.result, d.action, o.name)
	}
	wantKey, wantLast := o.key, o.last
	if o.evidence == nil {
		wantKey, wantLast = nil, nil
	}
	if d.result != nil {
		wantLast = d.result
	}
	if !reflect.DeepEqual(d.conform.Key, wantKey) || d.conform.Last != wantLast {
		t.Errorf("conform key %v, last %+v; want %v, %+v", d.conform.Key, d.conform.Last, wantKey, wantLast)
	}
	wantVerified := map[string]*memoryv1alpha1.ConformanceResult{"last": o.last, "result": d.result, "": nil}[w.verified]
	if d.verified != wantVerified {
		t.Errorf("verified = %+v, want %s: %+v", d.verified, w.verified, wantVerified)
	}
}

func TestRunOutcome(t *testing.T) {
	for _, tc := range []struct {
		res  *memoryv1alpha1.ConformanceResult
		want string
	}{
		{run("3.50", "v1", 17, 0, ""), "passed"},
		{run("3.50", "v1", 15, 2, ""), "failed"},
		{run("3.50", "v1", 17, 0, "deployed server: manifest: differs"), "failed"},
		{run("3.50", "v1", 0, 0, "the run's pod is gone"), "broken"},
	} {
		if got := runOutcome(tc.res); got != tc.want {
			t.Errorf("runOutcome(%d passed, %d failed, %q) = %q, want %q", tc.res.Passed, tc.res.Failed, tc.res.Message, got, tc.want)
		}
	}
}
