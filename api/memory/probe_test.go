package memory

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestEvidenceVerdict(t *testing.T) {
	tests := []struct {
		name       string
		probes     []ProbeResult
		wantOK     bool
		wantFailed []string
	}{
		{"no probes is vacuously OK", nil, true, nil},
		{"all pass", []ProbeResult{{Name: "jsonb", OK: true}, {Name: "wal_mode", OK: true}}, true, nil},
		{"failures in probe order", []ProbeResult{
			{Name: "z", OK: false}, {Name: "a", OK: true}, {Name: "b", OK: false, Detail: "missing"},
		}, false, []string{"z", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := Evidence{ServiceVersion: "x", Probes: tt.probes}
			g.Expect(e.AllOK()).To(Equal(tt.wantOK))
			g.Expect(e.Failed()).To(Equal(tt.wantFailed))
		})
	}
}
