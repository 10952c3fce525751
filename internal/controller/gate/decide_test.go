package gate

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// adapter is a MemoryAdapter with the given consistency, Available status and (when
// verified) a passing run of its manifest.
func adapter(consistency memoryv1alpha1.SearchConsistency, available metav1.ConditionStatus, reason string, verified bool) *memoryv1alpha1.MemoryAdapter {
	ma := &memoryv1alpha1.MemoryAdapter{
		ObjectMeta: metav1.ObjectMeta{Name: "mem"},
		Spec: memoryv1alpha1.MemoryAdapterSpec{Manifest: memoryv1alpha1.ManifestSpec{
			Adapter:           "sqlite",
			NativeItemFields:  []memoryv1alpha1.ItemField{"id", "created_at", "metadata", "content", "tags"},
			SupportedFilters:  []memoryv1alpha1.FilterKey{"source"},
			SearchConsistency: consistency,
			RetrieveFidelity:  "full", SearchFidelity: "full", SearchReturnsTags: true, PreservesMetadata: true,
		}},
	}
	if available != "" {
		ma.Status.Conditions = []metav1.Condition{{Type: memoryv1alpha1.ConditionAvailable, Status: available, Reason: reason}}
	}
	if verified {
		ma.Status.Conformance = &memoryv1alpha1.ConformanceResult{JobName: "mem-run", ManifestHash: ma.PublishedManifestHash(), Passed: 17}
	}
	return ma
}

func TestDecide(t *testing.T) {
	stale := adapter("immediate", "True", "AdapterAvailable", true)
	stale.Status.Conformance.ManifestHash = "sha256:" + "00000000000000000000000000000000000000000000000000000000000000ff"
	failed := adapter("immediate", "True", "AdapterAvailable", true)
	failed.Status.Conformance.Failed = 1
	tests := []struct {
		name     string
		ma       *memoryv1alpha1.MemoryAdapter
		requires string
		release  bool
		message  string
	}{
		{"met by an Available, verified adapter", adapter("immediate", "True", "AdapterAvailable", true), "searchConsistency=immediate, supportedFilters=source", true,
			`MemoryAdapter "mem" is Available and its verified manifest (sha256:`},
		{"no requirements: Available is enough", adapter("eventual", "True", "AdapterAvailable", true), "", true, "meets every requirement"},
		{"unmet on an Available adapter", adapter("eventual", "True", "AdapterAvailable", true), "searchConsistency=immediate", false,
			`MemoryAdapter "mem" does not meet: searchConsistency=immediate (the manifest says "eventual")`},
		{"each unmet requirement named", adapter("eventual", "True", "AdapterAvailable", true), "searchConsistency=immediate, supportedFilters=branch_id", false,
			`searchConsistency=immediate (the manifest says "eventual"); supportedFilters=branch_id (not supported: branch_id)`},
		{"met but not Available", adapter("immediate", "False", "ConformanceRunning", false), "searchConsistency=immediate", false,
			`MemoryAdapter "mem" is not Available (ConformanceRunning)`},
		{"not Available and unmet", adapter("eventual", "False", "EvidenceUnreachable", true), "searchConsistency=immediate", false,
			`MemoryAdapter "mem" is not Available (EvidenceUnreachable) and does not meet: searchConsistency=immediate`},
		{"no status yet", adapter("immediate", "", "", false), "", false, `MemoryAdapter "mem" has no Available condition yet`},
		{"Available but the run verified another hash", stale, "", false, "has no passing conformance run of its manifest"},
		{"Available but the run failed a case", failed, "", false, "has no passing conformance run of its manifest"},
		{"adapter missing", nil, "searchConsistency=immediate", false, `MemoryAdapter "mem" does not exist in this namespace yet`},
		{"annotation edited into garbage after admission", adapter("immediate", "True", "AdapterAvailable", true), "searchConsistency=", false,
			"the requirement list no longer parses: memory.agentmem.io/requires: clause 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			pod := boundPod{requires: tt.requires, serviceAccount: "default", secret: "mem-binding"}
			v := decide("mem", tt.ma, pod)
			g.Expect(v.release).To(Equal(tt.release))
			g.Expect(v.message).To(ContainSubstring(tt.message))
			g.Expect(decide("mem", tt.ma, pod)).To(Equal(v), "the same inputs give the same message: no new Event")
		})
	}
}

// TestDecideAccess: under spec.access a pod is released only when its ServiceAccount is
// listed, every adapter pod enforces its grant (status.access) and it mounts its
// ServiceAccount's Secret; a pod that mounts another Secret is told to make way for a new one.
func TestDecideAccess(t *testing.T) {
	withAccess := func(enforced ...string) *memoryv1alpha1.MemoryAdapter {
		ma := adapter("immediate", "True", "AdapterAvailable", true)
		ma.Spec.Access = &memoryv1alpha1.AccessSpec{ServiceAccounts: []memoryv1alpha1.ServiceAccountAccess{
			{Name: "planner", Rights: memoryv1alpha1.AccessReadWrite, SubScope: "plans"},
			{Name: "recaller", Rights: memoryv1alpha1.AccessReadOnly, SubScope: "plans"},
		}}
		if enforced != nil {
			ma.Status.Access = &memoryv1alpha1.AccessStatus{ServiceAccounts: enforced}
		}
		// spec.access puts its claim in the published manifest, which the run verified.
		ma.Status.Conformance.ManifestHash = ma.PublishedManifestHash()
		return ma
	}
	tests := []struct {
		name    string
		ma      *memoryv1alpha1.MemoryAdapter
		pod     boundPod
		release bool
		message string
	}{
		{"listed, enforced, its own Secret", withAccess("planner", "recaller"), boundPod{serviceAccount: "recaller", secret: "mem-binding.recaller"}, true, "meets every requirement"},
		{"not listed", withAccess("planner", "recaller"), boundPod{serviceAccount: "default", secret: "mem-binding.default"}, false,
			`grants ServiceAccount "default" no access (spec.access lists "planner", "recaller")`},
		{"listed, not enforced yet", withAccess("planner"), boundPod{serviceAccount: "recaller", secret: "mem-binding.recaller"}, false,
			`does not enforce ServiceAccount "recaller"'s grant on every adapter pod yet`},
		{"no status.access yet", withAccess(), boundPod{serviceAccount: "planner", secret: "mem-binding.planner"}, false, "does not enforce"},
		{"bound before access was set", withAccess("planner", "recaller"), boundPod{serviceAccount: "planner", secret: "mem-binding"}, false,
			"binds ServiceAccount \"planner\" with Secret mem-binding.planner, but the pod mounts mem-binding"},
		{"bound under access that is gone", adapter("immediate", "True", "AdapterAvailable", true), boundPod{serviceAccount: "planner", secret: "mem-binding.planner"}, false,
			"with Secret mem-binding, but the pod mounts mem-binding.planner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v := decide("mem", tt.ma, tt.pod)
			g.Expect(v.release).To(Equal(tt.release))
			g.Expect(v.message).To(ContainSubstring(tt.message))
		})
	}
}
