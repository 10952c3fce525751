package health

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond"
)

// ErrUnauthorized marks an evidence read the adapter refused with 401: the token the
// operator derives no longer matches the one the adapter serves with.
var ErrUnauthorized = errors.New("the adapter refused the operator's token")

// Observation is everything Healthy depends on.
type Observation struct {
	Deployed bool
	// Evidence is the last successfully read evidence; nil before the first read.
	Evidence *memory.EvidenceReport
	// Mixed names each pod's versions while the pods disagree on them.
	Mixed string
	// Rehydrated is set while evidence comes from status, before this process read any.
	Rehydrated bool
	// LastSuccess is when evidence was read; zero before the first read.
	LastSuccess time.Time
	// Failures counts consecutive failed reads, and lastErr says why the last one failed.
	Failures int
	LastErr  string
	URL      string
	// Verified is the passing run the evidence must agree with; nil before one passed.
	Verified *memoryv1alpha1.ConformanceResult
	// LastRun is the last recorded run, passed or not: a run that read the published
	// manifest names the fields in which it differs from spec.manifest.
	LastRun      *memoryv1alpha1.ConformanceResult
	ManifestHash string
	Immediate    bool
	Threshold    int
	Grace        time.Duration
	Now          time.Time
}

// Condition decides Healthy: unreachable, pending and stale evidence first, then every
// way evidence can contradict the verified manifest.
func Condition(o Observation) metav1.Condition {
	const t = memoryv1alpha1.ConditionHealthy
	switch {
	case !o.Deployed && o.Evidence == nil:
		return cond.New(t, metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidencePending, "the adapter is not deployed yet, so no evidence has been read")
	case o.Failures >= o.Threshold:
		return cond.New(t, metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceUnreachable,
			fmt.Sprintf("%d consecutive reads of /v1/evidence from %s failed (threshold %d); last error: %s", o.Failures, o.URL, o.Threshold, o.LastErr))
	case o.Evidence == nil:
		msg := "no evidence (GET /v1/evidence) has been read from " + o.URL + " yet"
		if o.LastErr != "" {
			msg += "; the last read failed: " + o.LastErr
		}
		return cond.New(t, metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidencePending, msg)
	case o.Now.Sub(o.LastSuccess) > o.Grace:
		return cond.New(t, metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidenceStale,
			// The condition's lastTransitionTime says when the evidence went stale; a time in
			// the message would make it differ between writes of the same fact.
			fmt.Sprintf("no evidence has been read for more than stalenessGrace %s", o.Grace))
	}
	ev := o.Evidence
	if o.Mixed != "" && ev.ManifestValid && len(failedProbes(ev)) == 0 {
		return cond.New(t, metav1.ConditionUnknown, memoryv1alpha1.ReasonVersionsMixed,
			"the adapter's pods report different versions, as during a rollout; the verdict waits until they agree: "+o.Mixed)
	}
	// An adapter that cannot reach its backend reports no service version; that is an
	// outage, said in the adapter's own words below, not a version change.
	if v := o.Verified; v != nil && ev.ServiceVersion != "" {
		if ev.ServiceVersion != v.ServiceVersion {
			return cond.New(t, metav1.ConditionFalse, memoryv1alpha1.ReasonServiceVersionChanged,
				fmt.Sprintf("the passing conformance run (job %s) tested service version %q, but the adapter reports %q", v.JobName, v.ServiceVersion, ev.ServiceVersion))
		}
		if ev.AdapterVersion != v.AdapterVersion {
			return cond.New(t, metav1.ConditionFalse, memoryv1alpha1.ReasonAdapterVersionChanged,
				fmt.Sprintf("the passing conformance run (job %s) tested adapter version %q, but the adapter reports %q", v.JobName, v.AdapterVersion, ev.AdapterVersion))
		}
	}
	if ev.ManifestHash != o.ManifestHash {
		msg := fmt.Sprintf("the adapter serves manifest %s, but spec.manifest hashes to %s", ev.ManifestHash, o.ManifestHash)
		if d := manifestDiff(o.LastRun, ev.ManifestHash); d != "" {
			msg += fmt.Sprintf("; job %s found it differs in %s", o.LastRun.JobName, d)
		}
		return cond.New(t, metav1.ConditionFalse, memoryv1alpha1.ReasonManifestMismatch, msg)
	}
	if failed := failedProbes(ev); len(failed) > 0 {
		return cond.New(t, metav1.ConditionFalse, memoryv1alpha1.ReasonCapabilityProbeFailed,
			"capability probes failed: "+strings.Join(failed, "; "))
	}
	if o.Immediate && ev.IndexLag != nil && *ev.IndexLag > 0 {
		return cond.New(t, metav1.ConditionFalse, memoryv1alpha1.ReasonIndexLagging,
			fmt.Sprintf("the manifest claims immediate search, but %d acknowledged writes are not searchable yet", *ev.IndexLag))
	}
	if !ev.ManifestValid {
		return cond.New(t, metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceInvalidatesManifest,
			"the adapter reports its own manifest unavailable: "+ev.Reason)
	}
	return cond.New(t, metav1.ConditionTrue, memoryv1alpha1.ReasonEvidenceValid,
		fmt.Sprintf("evidence upholds the manifest: service version %q, adapter version %q, %d probes passed", ev.ServiceVersion, ev.AdapterVersion, len(ev.Probes)))
}

// manifestDiff returns the fields a run's message names as differing (conformance writes
// "... publishes manifest <published>, not the expected <hash>; it differs in <field: got,
// expected want>; ..."), when that run read the manifest published now; else "".
func manifestDiff(r *memoryv1alpha1.ConformanceResult, published string) string {
	if r == nil || published == "" || !strings.Contains(r.Message, "manifest "+published+",") {
		return ""
	}
	_, rest, ok := strings.Cut(r.Message, "; it differs in ")
	if !ok {
		return ""
	}
	// The fields are joined with "; ", and so are the run's other findings after them.
	var fields []string
	for _, f := range strings.Split(rest, "; ") {
		if !diffField.MatchString(f) {
			break
		}
		fields = append(fields, f)
	}
	return strings.Join(fields, "; ")
}

// diffField is one entry of memory.Manifest.Diff: `json_name: got, expected want`.
var diffField = regexp.MustCompile(`^[a-z_]+: .+, expected .+$`)

func failedProbes(ev *memory.EvidenceReport) []string {
	var out []string
	for _, p := range ev.Probes {
		if !p.OK {
			s := p.Name
			if p.Detail != "" {
				s += " (" + p.Detail + ")"
			}
			out = append(out, s)
		}
	}
	return out
}

// EvidenceStatus turns a report into status, keeping the previous observedTime when nothing
// else changed.
func EvidenceStatus(ev *memory.EvidenceReport, prev *memoryv1alpha1.EvidenceStatus, immediate bool, now time.Time) *memoryv1alpha1.EvidenceStatus {
	st := &memoryv1alpha1.EvidenceStatus{
		Verdict:        memoryv1alpha1.EvidenceValid,
		ServiceVersion: cond.Truncate(ev.ServiceVersion, 256),
		AdapterVersion: cond.Truncate(ev.AdapterVersion, 256),
		ManifestHash:   ev.ManifestHash,
		Message:        cond.Truncate(ev.Reason, 1024),
	}
	// An eventual adapter's lag moves with every write; recording it would turn a steady
	// adapter into a stream of status writes, and it invalidates nothing there.
	if ev.IndexLag != nil && immediate {
		lag := max(*ev.IndexLag, 0)
		st.IndexLag = &lag
	}
	if !strings.HasPrefix(st.ManifestHash, "sha256:") || len(st.ManifestHash) != 71 {
		st.ManifestHash = "" // the schema's pattern would refuse the whole status patch
	}
	if !ev.ManifestValid {
		st.Verdict = memoryv1alpha1.EvidenceInvalid
	}
	for _, p := range ev.Probes {
		if !p.OK && len(st.FailedProbes) < 32 {
			st.FailedProbes = append(st.FailedProbes, cond.Truncate(p.Name, 64))
		}
	}
	slices.Sort(st.FailedProbes)
	st.FailedProbes = slices.Compact(st.FailedProbes)
	if prev != nil {
		st.ObservedTime = prev.ObservedTime
		if equality.Semantic.DeepEqual(st, prev) {
			return prev
		}
	}
	st.ObservedTime = metav1.NewTime(now.Truncate(time.Second))
	return st
}
