package memory_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func TestJudgeEvidence(t *testing.T) {
	immediate := memory.FullManifest("a", []string{"source"})
	eventual := immediate
	eventual.SearchConsistency = memory.ConsistencyEventual
	other := memory.FullManifest("b", nil)
	lag := func(n int64) *int64 { return &n }
	probe := func(version string, probes ...memory.ProbeResult) memory.Evidence {
		return memory.Evidence{ServiceVersion: version, Probes: probes}
	}
	versionChanged := &memory.Finding{Reason: memory.ReasonServiceVersionChanged, Message: `service version changed from "15" to "16" since the manifest was published`}

	tests := []struct {
		name        string
		prev        memory.EvidenceState
		obs         memory.EvidenceObservation
		wantReasons []memory.EvidenceReason
		wantMessage string
		wantNext    memory.EvidenceState
	}{
		{
			name:     "no prober, same manifest",
			obs:      memory.EvidenceObservation{Published: immediate, Current: immediate},
			wantNext: memory.EvidenceState{},
		},
		{
			name:     "first probe records the initial version",
			obs:      memory.EvidenceObservation{Published: immediate, Current: immediate, Probed: true, Evidence: probe("15")},
			wantNext: memory.EvidenceState{InitialServiceVersion: "15"},
		},
		{
			name:        "unreachable backend is not sticky",
			prev:        memory.EvidenceState{InitialServiceVersion: "15"},
			obs:         memory.EvidenceObservation{Published: immediate, Current: immediate, Probed: true, ProbeErr: errors.New("dial tcp: refused")},
			wantReasons: []memory.EvidenceReason{memory.ReasonBackendUnreachable},
			wantMessage: "backend unreachable: dial tcp: refused",
			wantNext:    memory.EvidenceState{InitialServiceVersion: "15"},
		},
		{
			name: "failed probes, in probe order",
			prev: memory.EvidenceState{InitialServiceVersion: "15"},
			obs: memory.EvidenceObservation{Published: immediate, Current: immediate, Probed: true, Evidence: probe("15",
				memory.ProbeResult{Name: "jsonb", OK: false, Detail: "missing"}, memory.ProbeResult{Name: "utf8", OK: true}, memory.ProbeResult{Name: "wal", OK: false})},
			wantReasons: []memory.EvidenceReason{memory.ReasonCapabilityProbeFailed, memory.ReasonCapabilityProbeFailed},
			wantMessage: `capability probe "jsonb" failed: missing; capability probe "wal" failed: `,
			wantNext:    memory.EvidenceState{InitialServiceVersion: "15"},
		},
		{
			name:        "an immediate manifest tolerates lag up to the bound",
			prev:        memory.EvidenceState{InitialServiceVersion: "15"},
			obs:         memory.EvidenceObservation{Published: immediate, Current: immediate, Probed: true, MaxIndexLag: 3, Evidence: memory.Evidence{ServiceVersion: "15", IndexLag: lag(3)}},
			wantReasons: nil,
			wantNext:    memory.EvidenceState{InitialServiceVersion: "15"},
		},
		{
			name:        "an immediate manifest with lag beyond the bound",
			prev:        memory.EvidenceState{InitialServiceVersion: "15"},
			obs:         memory.EvidenceObservation{Published: immediate, Current: immediate, Probed: true, MaxIndexLag: 3, Evidence: memory.Evidence{ServiceVersion: "15", IndexLag: lag(4)}},
			wantReasons: []memory.EvidenceReason{memory.ReasonIndexLagging},
			wantMessage: "index lags 4 writes but the manifest declares immediate search consistency",
			wantNext:    memory.EvidenceState{InitialServiceVersion: "15"},
		},
		{
			name:     "an eventual manifest may lag",
			prev:     memory.EvidenceState{InitialServiceVersion: "15"},
			obs:      memory.EvidenceObservation{Published: eventual, Current: eventual, Probed: true, Evidence: memory.Evidence{ServiceVersion: "15", IndexLag: lag(1000)}},
			wantNext: memory.EvidenceState{InitialServiceVersion: "15"},
		},
		{
			name:        "a version change sticks and comes first",
			prev:        memory.EvidenceState{InitialServiceVersion: "15"},
			obs:         memory.EvidenceObservation{Published: immediate, Current: immediate, Probed: true, Evidence: probe("16", memory.ProbeResult{Name: "jsonb"})},
			wantReasons: []memory.EvidenceReason{memory.ReasonServiceVersionChanged, memory.ReasonCapabilityProbeFailed},
			wantMessage: versionChanged.Message + `; capability probe "jsonb" failed: `,
			wantNext:    memory.EvidenceState{InitialServiceVersion: "15", Sticky: versionChanged},
		},
		{
			name:        "a sticky finding survives a healthy round",
			prev:        memory.EvidenceState{InitialServiceVersion: "15", Sticky: versionChanged},
			obs:         memory.EvidenceObservation{Published: immediate, Current: immediate, Probed: true, Evidence: probe("15")},
			wantReasons: []memory.EvidenceReason{memory.ReasonServiceVersionChanged},
			wantMessage: versionChanged.Message,
			wantNext:    memory.EvidenceState{InitialServiceVersion: "15", Sticky: versionChanged},
		},
		{
			name:        "a changed manifest sticks",
			obs:         memory.EvidenceObservation{Published: immediate, Current: other},
			wantReasons: []memory.EvidenceReason{memory.ReasonManifestChanged},
			wantMessage: "the store now reports manifest " + other.Hash() + ", not the published " + immediate.Hash(),
			wantNext: memory.EvidenceState{Sticky: &memory.Finding{Reason: memory.ReasonManifestChanged,
				Message: "the store now reports manifest " + other.Hash() + ", not the published " + immediate.Hash()}},
		},
		{
			name:        "the first sticky finding wins",
			prev:        memory.EvidenceState{InitialServiceVersion: "15", Sticky: versionChanged},
			obs:         memory.EvidenceObservation{Published: immediate, Current: other},
			wantReasons: []memory.EvidenceReason{memory.ReasonServiceVersionChanged},
			wantMessage: versionChanged.Message,
			wantNext:    memory.EvidenceState{InitialServiceVersion: "15", Sticky: versionChanged},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v := memory.JudgeEvidence(tt.prev, tt.obs)
			var reasons []memory.EvidenceReason
			for _, f := range v.Findings {
				reasons = append(reasons, f.Reason)
			}
			g.Expect(reasons).To(Equal(tt.wantReasons))
			g.Expect(v.Valid).To(Equal(len(tt.wantReasons) == 0))
			g.Expect(v.Reason()).To(Equal(tt.wantMessage))
			g.Expect(v.Next).To(Equal(tt.wantNext))
		})
	}
}
