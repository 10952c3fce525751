package health

import (
	"errors"
	"fmt"
	"math"
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
	for _, check := range healthChecks {
		if c, ok := check(o); ok {
			return c
		}
	}
	return evidenceUpholds(o)
}

// healthCheck decides Healthy when it applies to o and says so with true; one that does not
// apply leaves the verdict to the checks after it.
type healthCheck func(o Observation) (metav1.Condition, bool)

// healthChecks are tried in order, and the order is part of the decision: Healthy carries one
// reason, so where several apply the first speaks. Whether evidence is there and current
// comes before anything it says, and a rollout's mixed versions before any comparison of
// versions; the checks after evidenceStale may therefore assume evidence was read.
var healthChecks = []healthCheck{
	notDeployed,
	evidenceUnreachable,
	evidencePending,
	evidenceStale,
	versionsMixed,
	serviceVersionChanged,
	adapterVersionChanged,
	manifestMismatch,
	probesFailed,
	indexLagging,
	manifestInvalidated,
}

// healthy is the condition every check builds, so that each names only what it decides.
func healthy(s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return cond.New(memoryv1alpha1.ConditionHealthy, s, reason, msg)
}

// notDeployed keeps an adapter that has no pods yet pending rather than unreachable: its
// failed reads say nothing about it. Evidence read before the deployment went away still
// speaks, through the checks after this one.
func notDeployed(o Observation) (metav1.Condition, bool) {
	if o.Deployed || o.Evidence != nil {
		return metav1.Condition{}, false
	}
	return healthy(metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidencePending, "the adapter is not deployed yet, so no evidence has been read"), true
}

// evidenceUnreachable turns failureThreshold failed reads into False even when evidence was
// read before: the last report no longer says anything of an adapter that stopped answering.
func evidenceUnreachable(o Observation) (metav1.Condition, bool) {
	if o.Failures < o.Threshold {
		return metav1.Condition{}, false
	}
	return healthy(metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceUnreachable,
		fmt.Sprintf("%d consecutive reads of /v1/evidence from %s failed (threshold %d); last error: %s", o.Failures, o.URL, o.Threshold, o.LastErr)), true
}

// evidencePending leaves the verdict Unknown until the first read answers, naming the last
// failure so that a read failing below the threshold is not silent.
func evidencePending(o Observation) (metav1.Condition, bool) {
	if o.Evidence != nil {
		return metav1.Condition{}, false
	}
	msg := "no evidence (GET /v1/evidence) has been read from " + o.URL + " yet"
	if o.LastErr != "" {
		msg += "; the last read failed: " + o.LastErr
	}
	return healthy(metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidencePending, msg), true
}

// evidenceStale withdraws the verdict when no read answered within stalenessGrace: old
// evidence can neither uphold nor contradict the manifest now.
func evidenceStale(o Observation) (metav1.Condition, bool) {
	if o.Now.Sub(o.LastSuccess) <= o.Grace {
		return metav1.Condition{}, false
	}
	// The condition's lastTransitionTime says when the evidence went stale; a time in the
	// message would make it differ between writes of the same fact.
	return healthy(metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidenceStale,
		fmt.Sprintf("no evidence has been read for more than stalenessGrace %s", o.Grace)), true
}

// versionsMixed waits out a rollout: while the pods disagree on versions, a version check
// would judge whichever pod spoke. A pod whose evidence fails on its own speaks regardless.
func versionsMixed(o Observation) (metav1.Condition, bool) {
	ev := o.Evidence
	if o.Mixed == "" || !ev.ManifestValid || len(failedProbes(ev)) > 0 {
		return metav1.Condition{}, false
	}
	return healthy(metav1.ConditionUnknown, memoryv1alpha1.ReasonVersionsMixed,
		"the adapter's pods report different versions, as during a rollout; the verdict waits until they agree: "+o.Mixed), true
}

// versionsComparable is whether the evidence can be held to the verified run's versions.
// An adapter that cannot reach its backend reports no service version; that is an outage,
// said in the adapter's own words by manifestInvalidated, not a version change.
func versionsComparable(o Observation) bool {
	return o.Verified != nil && o.Evidence.ServiceVersion != ""
}

// serviceVersionChanged catches a backend upgraded under the adapter: the passing run
// vouched for the service version it tested, not for the one served now.
func serviceVersionChanged(o Observation) (metav1.Condition, bool) {
	if !versionsComparable(o) || o.Evidence.ServiceVersion == o.Verified.ServiceVersion {
		return metav1.Condition{}, false
	}
	v := o.Verified
	return healthy(metav1.ConditionFalse, memoryv1alpha1.ReasonServiceVersionChanged,
		fmt.Sprintf("the passing conformance run (job %s) tested service version %q, but the adapter reports %q", v.JobName, v.ServiceVersion, o.Evidence.ServiceVersion)), true
}

// adapterVersionChanged catches an adapter image the passing run did not test.
func adapterVersionChanged(o Observation) (metav1.Condition, bool) {
	if !versionsComparable(o) || o.Evidence.AdapterVersion == o.Verified.AdapterVersion {
		return metav1.Condition{}, false
	}
	v := o.Verified
	return healthy(metav1.ConditionFalse, memoryv1alpha1.ReasonAdapterVersionChanged,
		fmt.Sprintf("the passing conformance run (job %s) tested adapter version %q, but the adapter reports %q", v.JobName, v.AdapterVersion, o.Evidence.AdapterVersion)), true
}

// manifestMismatch catches an adapter that serves another manifest than spec.manifest, the
// one conformance verified; when the last run read the served manifest its field diff is
// quoted, so the message says how they differ and not only that they do.
func manifestMismatch(o Observation) (metav1.Condition, bool) {
	ev := o.Evidence
	if ev.ManifestHash == o.ManifestHash {
		return metav1.Condition{}, false
	}
	msg := fmt.Sprintf("the adapter serves manifest %s, but spec.manifest hashes to %s", ev.ManifestHash, o.ManifestHash)
	if d := manifestDiff(o.LastRun, ev.ManifestHash); d != "" {
		msg += fmt.Sprintf("; job %s found it differs in %s", o.LastRun.JobName, d)
	}
	return healthy(metav1.ConditionFalse, memoryv1alpha1.ReasonManifestMismatch, msg), true
}

// probesFailed names the capability probes that failed: each is a claim of the manifest the
// backend no longer bears out.
func probesFailed(o Observation) (metav1.Condition, bool) {
	failed := failedProbes(o.Evidence)
	if len(failed) == 0 {
		return metav1.Condition{}, false
	}
	return healthy(metav1.ConditionFalse, memoryv1alpha1.ReasonCapabilityProbeFailed,
		"capability probes failed: "+strings.Join(failed, "; ")), true
}

// indexLagging holds a manifest that claims immediate search to it: acknowledged writes
// that are not searchable yet contradict the claim. An eventual adapter's lag is expected.
func indexLagging(o Observation) (metav1.Condition, bool) {
	ev := o.Evidence
	if !o.Immediate || ev.IndexLag == nil || *ev.IndexLag <= 0 {
		return metav1.Condition{}, false
	}
	return healthy(metav1.ConditionFalse, memoryv1alpha1.ReasonIndexLagging,
		fmt.Sprintf("the manifest claims immediate search, but %d acknowledged writes are not searchable yet", *ev.IndexLag)), true
}

// manifestInvalidated takes the adapter at its word: while it reports its own manifest
// unavailable (a backend outage among other reasons) it refuses data calls, so Healthy
// cannot be True.
func manifestInvalidated(o Observation) (metav1.Condition, bool) {
	ev := o.Evidence
	if ev.ManifestValid {
		return metav1.Condition{}, false
	}
	return healthy(metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceInvalidatesManifest,
		"the adapter reports its own manifest unavailable: "+ev.Reason), true
}

// evidenceUpholds is the verdict when no check found a contradiction; its message names the
// versions and probes, so a True condition says what it was decided from.
func evidenceUpholds(o Observation) metav1.Condition {
	ev := o.Evidence
	return healthy(metav1.ConditionTrue, memoryv1alpha1.ReasonEvidenceValid,
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
	st.QuotaUsage = QuotaUsage(ev.Usage)
	if prev != nil {
		st.ObservedTime = prev.ObservedTime
		if equality.Semantic.DeepEqual(st, prev) {
			return prev
		}
	}
	st.ObservedTime = metav1.NewTime(now.Truncate(time.Second))
	return st
}

// maxQuotaUsage is the CRD's bound on status.evidence.quotaUsage.
const maxQuotaUsage = 16

// QuotaUsage is status.evidence.quotaUsage of an evidence report's usage: the scopes with an
// item or byte quota, in whole percent of it (clamped to the schema's 0..10000, since the
// report is the adapter's word), the fullest maxQuotaUsage of them, ordered by scope.
func QuotaUsage(usage []memory.ScopeUsage) []memoryv1alpha1.ScopeQuotaUsage {
	type entry struct {
		u    memoryv1alpha1.ScopeQuotaUsage
		full int32
	}
	percent := func(n, limit int64) *int32 {
		if limit <= 0 {
			return nil
		}
		// In floating point: the counts are the adapter's word and may be anything.
		p := int32(math.Floor(min(max(float64(n)*100/float64(limit), 0), 10000)))
		return &p
	}
	var out []entry
	for _, u := range usage {
		if (u.MaxItems <= 0 && u.MaxBytes <= 0) || u.Scope == "" {
			continue
		}
		e := entry{u: memoryv1alpha1.ScopeQuotaUsage{Scope: cond.Truncate(u.Scope, 253), ItemsPercent: percent(u.Items, u.MaxItems), BytesPercent: percent(u.Bytes, u.MaxBytes)}}
		for _, p := range []*int32{e.u.ItemsPercent, e.u.BytesPercent} {
			if p != nil {
				e.full = max(e.full, *p)
			}
		}
		if slices.ContainsFunc(out, func(o entry) bool { return o.u.Scope == e.u.Scope }) {
			continue
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b entry) int { return int(b.full - a.full) })
	out = out[:min(len(out), maxQuotaUsage)]
	res := make([]memoryv1alpha1.ScopeQuotaUsage, len(out))
	for i, e := range out {
		res[i] = e.u
	}
	slices.SortFunc(res, func(a, b memoryv1alpha1.ScopeQuotaUsage) int { return strings.Compare(a.Scope, b.Scope) })
	if len(res) == 0 {
		return nil
	}
	return res
}
