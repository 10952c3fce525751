package sqlite

import (
	"context"
	"testing"

	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/storetest"
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

// TestConformance runs the full ADR-0093 matrix live against a real SQLite file;
// no case may be NotApplicable or unobserved.
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
	storetest.FullConformance(t, h)
}
