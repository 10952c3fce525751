package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/conformance"
)

var (
	_ conformance.Harness            = (*Harness)(nil)
	_ conformance.ServiceVersioner   = (*Harness)(nil)
	_ conformance.WrongKindMaker     = (*Harness)(nil)
	_ conformance.WriteRejecter      = (*Harness)(nil)
	_ conformance.TransportObserver  = (*Harness)(nil)
	_ conformance.FilterRecorder     = (*Harness)(nil)
	_ conformance.MalformedResponder = (*Harness)(nil)
	_ conformance.IdentitylessWriter = (*Harness)(nil)
)

// TestConformance runs the full ADR-0093 matrix live against a real SQLite file.
func TestConformance(t *testing.T) {
	h, err := NewHarness(context.Background(), HarnessOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("NewHarness: %v", err)
	}
	defer func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("harness Close: %v", err)
		}
	}()
	r := conformance.Run(t, h)
	for _, c := range r.Cases {
		if strings.Contains(c.Message, "not observable") {
			t.Errorf("case %s could not observe everything: %s", c.ID, c.Message)
		}
		if c.Outcome == conformance.NotApplicable {
			t.Errorf("case %s is NotApplicable (%s); the SQLite adapter documents none", c.ID, c.Message)
		}
	}
}
