package health

import (
	"fmt"
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	. "github.com/onsi/gomega"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond/condtest"
)

type want condtest.Want

func check(t *testing.T, got metav1.Condition, w want) { t.Helper(); condtest.Want(w).Check(t, got) }

func TestHealthyCondition(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	good := func() *memory.EvidenceReport {
		return &memory.EvidenceReport{ServiceVersion: "3.50", AdapterVersion: "v1", ManifestHash: condtest.HashA, ManifestValid: true,
			Probes: []memory.ProbeResult{{Name: "json1", OK: true}}}
	}
	base := func(mut func(*Observation)) Observation {
		o := Observation{Deployed: true, Evidence: good(), LastSuccess: now, URL: "http://mem.ns.svc:8080", Verified: condtest.Run("3.50", "v1", 17, 0, ""),
			ManifestHash: condtest.HashA, Immediate: true, Threshold: 3, Grace: 90 * time.Second, Now: now}
		if mut != nil {
			mut(&o)
		}
		return o
	}
	lag := int64(4)
	for name, tc := range map[string]struct {
		obs  Observation
		want want
	}{
		"not deployed":   {base(func(o *Observation) { o.Deployed, o.Evidence = false, nil }), want{metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidencePending, nil}},
		"first read due": {base(func(o *Observation) { o.Evidence = nil }), want{metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidencePending, []string{"/v1/evidence"}}},
		"first read failed": {base(func(o *Observation) { o.Evidence, o.Failures, o.LastErr = nil, 1, "no endpoints" }),
			want{metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidencePending, []string{"the last read failed: no endpoints"}}},
		"below threshold keeps the verdict": {base(func(o *Observation) { o.Failures, o.LastErr = 2, "connection refused" }),
			want{metav1.ConditionTrue, memoryv1alpha1.ReasonEvidenceValid, nil}},
		"unreachable": {base(func(o *Observation) { o.Failures, o.LastErr = 3, "connection refused" }),
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceUnreachable, []string{"3 consecutive", "connection refused", "http://mem.ns.svc:8080"}}},
		"stale": {base(func(o *Observation) { o.LastSuccess = now.Add(-2 * time.Minute) }),
			want{metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidenceStale, []string{"stalenessGrace"}}},
		"service version changed": {base(func(o *Observation) { o.Evidence.ServiceVersion = "3.51" }),
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonServiceVersionChanged, []string{`"3.50"`, `"3.51"`}}},
		"adapter version changed": {base(func(o *Observation) { o.Evidence.AdapterVersion = "v2" }),
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonAdapterVersionChanged, []string{`"v1"`, `"v2"`}}},
		"other manifest": {base(func(o *Observation) { o.Evidence.ManifestHash = "sha256:bb" }),
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonManifestMismatch, []string{"sha256:bb", condtest.HashA}}},
		"other manifest, named by the run that read it": {base(func(o *Observation) {
			o.Evidence.ManifestHash = "sha256:bb"
			o.LastRun = condtest.Run("3.50", "v1", 17, 0, `the target publishes manifest sha256:bb, not the expected `+condtest.HashA+`; it differs in supported_filters: ["branch_id"], expected ["branch_id","source"]`)
		}), want{metav1.ConditionFalse, memoryv1alpha1.ReasonManifestMismatch, []string{"sha256:bb", condtest.HashA, `found it differs in supported_filters: ["branch_id"], expected ["branch_id","source"]`}}},
		"other manifest than the run read": {base(func(o *Observation) {
			o.Evidence.ManifestHash = "sha256:cc"
			o.LastRun = condtest.Run("3.50", "v1", 17, 0, `the target publishes manifest sha256:bb, not the expected `+condtest.HashA+`; it differs in search_consistency: "eventual", expected "immediate"`)
		}), want{metav1.ConditionFalse, memoryv1alpha1.ReasonManifestMismatch, []string{"sha256:cc", condtest.HashA}}},
		"probe failed": {base(func(o *Observation) {
			o.Evidence.Probes = append(o.Evidence.Probes, memory.ProbeResult{Name: "jsonb", Detail: "missing"})
		}), want{metav1.ConditionFalse, memoryv1alpha1.ReasonCapabilityProbeFailed, []string{"jsonb (missing)"}}},
		"immediate index lags": {base(func(o *Observation) { o.Evidence.IndexLag = &lag }),
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonIndexLagging, []string{"4 acknowledged writes"}}},
		"eventual index lags": {base(func(o *Observation) { o.Evidence.IndexLag, o.Immediate = &lag, false }),
			want{metav1.ConditionTrue, memoryv1alpha1.ReasonEvidenceValid, nil}},
		"adapter cannot reach its backend": {base(func(o *Observation) {
			o.Evidence.ServiceVersion, o.Evidence.ManifestValid, o.Evidence.Reason = "", false, "backend unavailable: connection refused"
		}), want{metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceInvalidatesManifest, []string{"connection refused"}}},
		"adapter invalidated itself": {base(func(o *Observation) {
			o.Evidence.ManifestValid, o.Evidence.Reason = false, "probe wal_mode failed"
		}),
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceInvalidatesManifest, []string{"wal_mode"}}},
		"no verified run yet": {base(func(o *Observation) { o.Verified = nil; o.Evidence.ServiceVersion = "anything" }),
			want{metav1.ConditionTrue, memoryv1alpha1.ReasonEvidenceValid, nil}},
		"pods on different versions": {base(func(o *Observation) { o.Mixed = `pod a: service "3.50"; pod b: service "3.51"` }),
			want{metav1.ConditionUnknown, memoryv1alpha1.ReasonVersionsMixed, []string{"pod a", "pod b"}}},
		"an invalid pod speaks over the mix": {base(func(o *Observation) {
			o.Mixed, o.Evidence.ManifestValid, o.Evidence.Reason = "pod a; pod b", false, "probe write failed"
		}), want{metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceInvalidatesManifest, []string{"probe write failed"}}},
		"valid": {base(nil), want{metav1.ConditionTrue, memoryv1alpha1.ReasonEvidenceValid, []string{"3.50"}}},
		// The rows below pin the order of the checks where more than one applies.
		"evidence outlives the deployment": {base(func(o *Observation) { o.Deployed = false }),
			want{metav1.ConditionTrue, memoryv1alpha1.ReasonEvidenceValid, nil}},
		"unreachable before the first read": {base(func(o *Observation) { o.Evidence, o.Failures, o.LastErr = nil, 3, "no endpoints" }),
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceUnreachable, []string{"3 consecutive", "no endpoints"}}},
		"not deployed speaks over the failures": {base(func(o *Observation) { o.Deployed, o.Evidence, o.Failures = false, nil, 3 }),
			want{metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidencePending, []string{"not deployed"}}},
		"unreachable speaks over stale": {base(func(o *Observation) { o.Failures, o.LastSuccess = 3, now.Add(-2*time.Minute) }),
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceUnreachable, nil}},
		"stale speaks over the mix": {base(func(o *Observation) { o.LastSuccess, o.Mixed = now.Add(-2*time.Minute), "pod a; pod b" }),
			want{metav1.ConditionUnknown, memoryv1alpha1.ReasonEvidenceStale, nil}},
		"stale exactly at the grace is not stale": {base(func(o *Observation) { o.LastSuccess = now.Add(-90 * time.Second) }),
			want{metav1.ConditionTrue, memoryv1alpha1.ReasonEvidenceValid, nil}},
		"a failed probe speaks over the mix": {base(func(o *Observation) {
			o.Mixed = "pod a; pod b"
			o.Evidence.Probes = append(o.Evidence.Probes, memory.ProbeResult{Name: "jsonb"})
		}), want{metav1.ConditionFalse, memoryv1alpha1.ReasonCapabilityProbeFailed, []string{"jsonb"}}},
		"the mix speaks over a version change": {base(func(o *Observation) { o.Mixed, o.Evidence.ServiceVersion = "pod a; pod b", "3.51" }),
			want{metav1.ConditionUnknown, memoryv1alpha1.ReasonVersionsMixed, nil}},
		"service version speaks over adapter version": {base(func(o *Observation) { o.Evidence.ServiceVersion, o.Evidence.AdapterVersion = "3.51", "v2" }),
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonServiceVersionChanged, []string{`"3.51"`}}},
		"no service version skips the version checks": {base(func(o *Observation) { o.Evidence.ServiceVersion, o.Evidence.AdapterVersion = "", "v2" }),
			want{metav1.ConditionTrue, memoryv1alpha1.ReasonEvidenceValid, nil}},
		"a version change speaks over another manifest": {base(func(o *Observation) { o.Evidence.AdapterVersion, o.Evidence.ManifestHash = "v2", "sha256:bb" }),
			want{metav1.ConditionFalse, memoryv1alpha1.ReasonAdapterVersionChanged, nil}},
		"another manifest speaks over a failed probe": {base(func(o *Observation) {
			o.Evidence.ManifestHash = "sha256:bb"
			o.Evidence.Probes = append(o.Evidence.Probes, memory.ProbeResult{Name: "jsonb"})
		}), want{metav1.ConditionFalse, memoryv1alpha1.ReasonManifestMismatch, nil}},
		"a failed probe speaks over the lag": {base(func(o *Observation) {
			o.Evidence.IndexLag = &lag
			o.Evidence.Probes = append(o.Evidence.Probes, memory.ProbeResult{Name: "jsonb"})
		}), want{metav1.ConditionFalse, memoryv1alpha1.ReasonCapabilityProbeFailed, nil}},
		"the lag speaks over the adapter's own verdict": {base(func(o *Observation) {
			o.Evidence.IndexLag, o.Evidence.ManifestValid, o.Evidence.Reason = &lag, false, "probe write failed"
		}), want{metav1.ConditionFalse, memoryv1alpha1.ReasonIndexLagging, nil}},
	} {
		t.Run(name, func(t *testing.T) { check(t, Condition(tc.obs), tc.want) })
	}
}

func TestEvidenceStatusMovesOnlyOnChange(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	ev := &memory.EvidenceReport{ServiceVersion: "3.50", AdapterVersion: "v1", ManifestHash: condtest.HashA, ManifestValid: true, ObservedAt: t0}
	first := EvidenceStatus(ev, nil, true, t0)
	again := *ev
	again.ObservedAt = t0.Add(time.Minute) // the adapter probes again and finds the same
	if got := EvidenceStatus(&again, first, true, t0.Add(time.Minute)); got != first {
		t.Fatalf("unchanged evidence produced a new status: %+v", got)
	}
	again.ManifestValid, again.Reason = false, "service version changed"
	got := EvidenceStatus(&again, first, true, t0.Add(2*time.Minute))
	if got.Verdict != memoryv1alpha1.EvidenceInvalid || !got.ObservedTime.Equal(&metav1.Time{Time: t0.Add(2 * time.Minute)}) {
		t.Fatalf("changed evidence: %+v", got)
	}
	bad := *ev
	bad.ManifestHash = "not a hash"
	if EvidenceStatus(&bad, nil, true, t0).ManifestHash != "" {
		t.Error("a malformed hash would make the API server refuse the whole status patch")
	}
}

func TestManifestDiffQuotesOnlyTheRunThatReadThePublishedManifest(t *testing.T) {
	msg := `the target publishes manifest sha256:bb, not the expected ` + condtest.HashA + `; it differs in supported_filters: ["branch_id"], expected ["branch_id","source"]`
	for _, tc := range []struct {
		name      string
		r         *memoryv1alpha1.ConformanceResult
		published string
		want      string
	}{
		{"the run read the served manifest", condtest.Run("3.50", "v1", 17, 0, msg), "sha256:bb", `supported_filters: ["branch_id"], expected ["branch_id","source"]`},
		{"the run read another manifest", condtest.Run("3.50", "v1", 17, 0, msg), "sha256:cc", ""},
		{"no field list", condtest.Run("3.50", "v1", 17, 0, "deployed server: manifest sha256:bb, unreadable"), "sha256:bb", ""},
		{"the run's other findings stay out", condtest.Run("3.50", "v1", 17, 0, msg+`; search_fidelity: "partial", expected "full"; deployed server: manifest: published sha256:bb differs from the expected `+condtest.HashA+` in supported_filters: x, expected y`), "sha256:bb",
			`supported_filters: ["branch_id"], expected ["branch_id","source"]; search_fidelity: "partial", expected "full"`},
		{"no run", nil, "sha256:bb", ""},
		{"no published hash", condtest.Run("3.50", "v1", 17, 0, msg), "", ""},
	} {
		if got := manifestDiff(tc.r, tc.published); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestQuotaUsage(t *testing.T) {
	g := NewWithT(t)
	g.Expect(QuotaUsage(nil)).To(BeNil())
	g.Expect(QuotaUsage([]memory.ScopeUsage{{Scope: "s", Items: 5}})).To(BeNil(), "no quota, no entry")
	got := QuotaUsage([]memory.ScopeUsage{
		{Scope: "s~b", Items: 3, MaxItems: 6},
		{Scope: "s", Items: 7, MaxItems: 6, Bytes: 10, MaxBytes: 1000},
		{Scope: "s~a", Items: -4, MaxItems: 6, Bytes: math.MaxInt64, MaxBytes: 1},
		{Scope: "s~b", Items: 6, MaxItems: 6},
	})
	g.Expect(got).To(Equal([]memoryv1alpha1.ScopeQuotaUsage{
		{Scope: "s", ItemsPercent: ptr.To[int32](116), BytesPercent: ptr.To[int32](1)},
		{Scope: "s~a", ItemsPercent: ptr.To[int32](0), BytesPercent: ptr.To[int32](10000)},
		{Scope: "s~b", ItemsPercent: ptr.To[int32](50)},
	}))
	var many []memory.ScopeUsage
	for i := range 40 {
		many = append(many, memory.ScopeUsage{Scope: fmt.Sprintf("s~%02d", i), Items: int64(i), MaxItems: 40})
	}
	got = QuotaUsage(many)
	g.Expect(got).To(HaveLen(16))
	g.Expect(got[0].Scope).To(Equal("s~24"), "the fullest 16, by scope")
}

// TestQuotaUsageWakesTheControllerOnlyByWholePercent: a store that moves a governed scope's
// usage by a whole percent of its quota is a change the controller must see (status shows
// it); one that does not is not, so a busy adapter is not a stream of reconciles.
func TestQuotaUsageWakesTheControllerOnlyByWholePercent(t *testing.T) {
	g := NewWithT(t)
	at := func(items int64) *memory.EvidenceReport {
		return &memory.EvidenceReport{ManifestHash: condtest.HashA, ManifestValid: true,
			Usage: []memory.ScopeUsage{{Scope: "s", Items: items, MaxItems: 1000}}}
	}
	g.Expect(sameEvidence(at(100), at(109), true)).To(BeTrue())
	g.Expect(sameEvidence(at(109), at(110), true)).To(BeFalse())
	g.Expect(sameEvidence(&memory.EvidenceReport{Usage: []memory.ScopeUsage{{Scope: "s", Items: 5}}},
		&memory.EvidenceReport{Usage: []memory.ScopeUsage{{Scope: "s", Items: 6}}}, true)).To(BeTrue(), "no quota: usage is not status")
}
