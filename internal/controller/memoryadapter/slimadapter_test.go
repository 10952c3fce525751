package memoryadapter

import (
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/intern"
)

// decodedAdapter is an adapter as the decoder leaves it: every string with storage of its
// own and every slice with room to spare.
func decodedAdapter(name string) *memoryv1alpha1.MemoryAdapter {
	d := func(s string) string { return string([]byte(s)) }
	msg := "Conformant: run " + name + " passed"
	cond := func(typ, status, reason, message string) metav1.Condition {
		return metav1.Condition{Type: d(typ), Status: metav1.ConditionStatus(d(status)), Reason: d(reason), Message: d(message), ObservedGeneration: 2}
	}
	conds := make([]metav1.Condition, 0, 16)
	conds = append(conds, cond("Deployed", "True", "DeploymentReady", "Deployment "+name+": 1 of 1 replicas updated and available"),
		cond("Available", "True", "Verified", msg), cond("Ready", "True", "Verified", msg), cond("Reconciling", "False", "Verified", msg))
	cases := make([]memoryv1alpha1.ConformanceCaseResult, 0, 32)
	for _, id := range memoryv1alpha1.AllConformanceCaseIDs {
		cases = append(cases, memoryv1alpha1.ConformanceCaseResult{ID: memoryv1alpha1.ConformanceCaseID(d(string(id))), Outcome: memoryv1alpha1.ConformanceOutcome(d("Passed"))})
	}
	profiles := make([]memoryv1alpha1.ConformanceProfileResult, 0, 8)
	profiles = append(profiles, memoryv1alpha1.ConformanceProfileResult{ID: memoryv1alpha1.ConformanceProfileID(d("read-only")), Outcome: memoryv1alpha1.ConformanceOutcome(d("NotApplicable"))})
	fields := make([]memoryv1alpha1.ItemField, 0, 8)
	for _, f := range []string{"id", "created_at", "metadata", "content", "tags"} {
		fields = append(fields, memoryv1alpha1.ItemField(d(f)))
	}
	lifecycle := func() *memoryv1alpha1.LifecycleSpec {
		safe, timeout, one := true, memoryv1alpha1.Duration(d("5s")), int32(1)
		return &memoryv1alpha1.LifecycleSpec{RequestTimeout: &timeout, ConcurrencySafe: &safe,
			ConnectionCreation: memoryv1alpha1.ConnectionCreation(d("Constructor")),
			Retry:              &memoryv1alpha1.RetryPolicies{Search: &memoryv1alpha1.RetryPolicy{MaxAttempts: &one}}}
	}
	hash := "sha256:d18ecbf74ff7e52c2e76bfd1666d9f4ee6976c27b5d7369f917fea6752da351f"
	return &memoryv1alpha1.MemoryAdapter{
		ObjectMeta: metav1.ObjectMeta{Name: d(name), Namespace: d("team-a"), ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "operator"}}},
		Spec: memoryv1alpha1.MemoryAdapterSpec{
			Manifest: memoryv1alpha1.ManifestSpec{Adapter: d("sqlite"), NativeItemFields: fields,
				SupportedFilters:  []memoryv1alpha1.FilterKey{memoryv1alpha1.FilterKey(d("branch_id")), memoryv1alpha1.FilterKey(d("source"))},
				SearchConsistency: memoryv1alpha1.SearchConsistency(d("immediate"))},
			Backend:   memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendType(d("SQLite")), Scope: d("agents")},
			Lifecycle: lifecycle(),
		},
		Status: memoryv1alpha1.MemoryAdapterStatus{Conditions: conds, ObservedGeneration: 2, ManifestHash: d(hash), ServiceVersion: d("3.50.4"),
			Conformance: &memoryv1alpha1.ConformanceResult{JobName: d(name + "-conformance-1"), ManifestHash: d(hash), Passed: int32(len(cases)), Cases: cases, Profiles: profiles},
			Evidence:    &memoryv1alpha1.EvidenceStatus{ManifestHash: d(hash), ServiceVersion: d("3.50.4"), Verdict: memoryv1alpha1.EvidenceVerdict(d("Valid"))},
			Lifecycle:   lifecycle()},
	}
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestSlimAdapterKeepsEveryValueInLessRoom(t *testing.T) {
	in := decodedAdapter("mem-1")
	want := in.DeepCopy()
	want.ManagedFields = nil
	got, err := slimAdapter(in)
	if err != nil {
		t.Fatal(err)
	}
	ma := got.(*memoryv1alpha1.MemoryAdapter)
	if !equality.Semantic.DeepEqual(ma, want) {
		t.Fatalf("slim adapter differs:\n%+v\nwant\n%+v", ma, want)
	}
	st := ma.Status
	if cap(st.Conditions) != len(st.Conditions) || cap(st.Conformance.Cases) != len(st.Conformance.Cases) || cap(st.Conformance.Profiles) != len(st.Conformance.Profiles) {
		t.Errorf("slices keep spare room: conditions %d/%d, cases %d/%d, profiles %d/%d", len(st.Conditions), cap(st.Conditions),
			len(st.Conformance.Cases), cap(st.Conformance.Cases), len(st.Conformance.Profiles), cap(st.Conformance.Profiles))
	}
	if !sameString(st.Conditions[1].Message, st.Conditions[2].Message) || !sameString(st.Conditions[1].Message, st.Conditions[3].Message) {
		t.Error("Ready and Reconciling hold copies of Available's message")
	}

	// A second adapter, decoded on its own, shares the words of the first.
	other, err := slimAdapter(decodedAdapter("mem-2"))
	if err != nil {
		t.Fatal(err)
	}
	st2 := other.(*memoryv1alpha1.MemoryAdapter).Status
	for i, c := range st.Conditions {
		c2 := st2.Conditions[i]
		if !sameString(c.Type, c2.Type) || !sameString(string(c.Status), string(c2.Status)) || !sameString(c.Reason, c2.Reason) {
			t.Errorf("condition %s: type, status or reason held twice", c.Type)
		}
	}
	for i, c := range st.Conformance.Cases {
		c2 := st2.Conformance.Cases[i]
		if !sameString(string(c.ID), string(c2.ID)) || !sameString(string(c.Outcome), string(c2.Outcome)) {
			t.Errorf("case %s: id or outcome held twice", c.ID)
		}
	}
	p, p2 := st.Conformance.Profiles[0], st2.Conformance.Profiles[0]
	if !sameString(string(p.ID), string(p2.ID)) || !sameString(string(p.Outcome), string(p2.Outcome)) {
		t.Error("profile id or outcome held twice")
	}
	if !sameString(ma.Namespace, other.(*memoryv1alpha1.MemoryAdapter).Namespace) {
		t.Error("namespace held twice")
	}
	// The manifest's words and hash, the versions and the lifecycle are held once for both.
	ma2 := other.(*memoryv1alpha1.MemoryAdapter)
	for _, pair := range [][2]string{
		{st.ManifestHash, st2.ManifestHash}, {st.ManifestHash, st.Conformance.ManifestHash}, {st.ManifestHash, st2.Evidence.ManifestHash},
		{st.ServiceVersion, st2.Evidence.ServiceVersion}, {string(st.Evidence.Verdict), string(st2.Evidence.Verdict)},
		{ma.Spec.Manifest.Adapter, ma2.Spec.Manifest.Adapter}, {string(ma.Spec.Backend.Type), string(ma2.Spec.Backend.Type)},
		{ma.Spec.Backend.Scope, ma2.Spec.Backend.Scope}, {string(ma.Spec.Manifest.SearchConsistency), string(ma2.Spec.Manifest.SearchConsistency)},
	} {
		if !sameString(pair[0], pair[1]) {
			t.Errorf("%q held twice", pair[0])
		}
	}
	if &ma.Spec.Manifest.NativeItemFields[0] != &ma2.Spec.Manifest.NativeItemFields[0] || &ma.Spec.Manifest.SupportedFilters[0] != &ma2.Spec.Manifest.SupportedFilters[0] {
		t.Error("the manifest's lists are held twice")
	}
	if ma.Spec.Lifecycle != ma2.Spec.Lifecycle || ma.Spec.Lifecycle != st2.Lifecycle {
		t.Error("equal lifecycles are held twice")
	}
	// What names the adapter is its own: shared by nobody, and never learnt.
	if sameString(st.Conformance.JobName, st2.Conformance.JobName) || sameString(st.Conditions[0].Message, st2.Conditions[0].Message) {
		t.Error("an adapter's own words were shared")
	}
	if intern.Words.Knows(st.Conditions[0].Message) {
		t.Errorf("the vocabulary learnt %q, which names an adapter", st.Conditions[0].Message)
	}
	if o, _ := slimAdapter("tombstone"); o != "tombstone" {
		t.Errorf("non-adapter changed: %v", o)
	}
}

// The controller patches status with a merge patch from the cached copy: from the slim copy
// it must be the patch the decoded copy gives, and nothing when nothing changed.
func TestSlimAdapterStatusPatchIsTheDecodedOnes(t *testing.T) {
	full := decodedAdapter("mem-1")
	got, err := slimAdapter(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	slim := got.(*memoryv1alpha1.MemoryAdapter)
	change := func(ma *memoryv1alpha1.MemoryAdapter) *memoryv1alpha1.MemoryAdapter {
		m := ma.DeepCopy()
		m.Status.Conditions[1].Message = "Healthy: evidence is stale"
		m.Status.Conformance.Cases[0].Outcome = "Failed"
		return m
	}
	want, err := client.MergeFrom(full).Data(change(full))
	if err != nil {
		t.Fatal(err)
	}
	patch, err := client.MergeFrom(slim).Data(change(slim))
	if err != nil {
		t.Fatal(err)
	}
	if string(patch) != string(want) {
		t.Errorf("patch from the slim copy\n%s\nwant\n%s", patch, want)
	}
	if none, err := client.MergeFrom(slim).Data(slim.DeepCopy()); err != nil || string(none) != "{}" {
		t.Errorf("patch of an unchanged slim copy %s (%v)", none, err)
	}
}

func TestCacheOptionsSlimTheAdapters(t *testing.T) {
	for o, by := range CacheOptions().ByObject {
		if _, ok := o.(*memoryv1alpha1.MemoryAdapter); !ok {
			continue
		}
		if by.Transform == nil {
			t.Fatal("no transform for MemoryAdapters")
		}
		got, err := by.Transform(decodedAdapter("mem-1"))
		if err != nil {
			t.Fatal(err)
		}
		ma := got.(*memoryv1alpha1.MemoryAdapter)
		if ma.ManagedFields != nil || cap(ma.Status.Conditions) != len(ma.Status.Conditions) {
			t.Errorf("the cache's transform is not slimAdapter: managedFields %v, conditions %d/%d", ma.ManagedFields, len(ma.Status.Conditions), cap(ma.Status.Conditions))
		}
		return
	}
	t.Fatal("CacheOptions has no entry for MemoryAdapters")
}

// Adapters whose runs ended alike refer to one list of case and profile results; a list that
// differs in any result, or a message alone, keeps its own.
func TestSlimAdapterSharesEqualResultLists(t *testing.T) {
	slim := func(in *memoryv1alpha1.MemoryAdapter) *memoryv1alpha1.ConformanceResult {
		t.Helper()
		got, err := slimAdapter(in)
		if err != nil {
			t.Fatal(err)
		}
		return got.(*memoryv1alpha1.MemoryAdapter).Status.Conformance
	}
	a, b := slim(decodedAdapter("share-1")), slim(decodedAdapter("share-2"))
	if &a.Cases[0] != &b.Cases[0] || &a.Profiles[0] != &b.Profiles[0] {
		t.Error("two adapters with equal results hold two lists")
	}
	failed := decodedAdapter("share-3")
	failed.Status.Conformance.Cases[4].Outcome = memoryv1alpha1.ConformanceOutcome("Failed")
	failed.Status.Conformance.Cases[4].Message = "a filter was ignored"
	c := slim(failed)
	if &c.Cases[0] == &a.Cases[0] || c.Cases[4].Message != "a filter was ignored" || a.Cases[4].Message != "" {
		t.Errorf("a different list was shared: %+v / %+v", c.Cases[4], a.Cases[4])
	}
	// A message is part of the key, length and all: "x" then "" differs from "" then "x".
	one, other := decodedAdapter("share-4"), decodedAdapter("share-5")
	one.Status.Conformance.Cases[0].Message = "x"
	other.Status.Conformance.Cases[1].Message = "x"
	if o, p := slim(one), slim(other); &o.Cases[0] == &p.Cases[0] || o.Cases[0].Message != "x" || p.Cases[1].Message != "x" {
		t.Error("lists that differ in where a message is were shared")
	}
	// A reader's copy is its own: writing to it leaves the shared list as it was.
	cp := a.DeepCopy()
	cp.Cases[0].Outcome = "Failed"
	if b.Cases[0].Outcome != "Passed" {
		t.Error("a deep copy of a cached adapter writes to the shared list")
	}
}
