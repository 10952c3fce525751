package storetest

import (
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/conformance"
)

// FullHarness is a conformance harness with every optional capability the matrix uses; the
// real adapters' harnesses satisfy it, which [FullConformance] demands at compile time.
type FullHarness interface {
	conformance.Harness
	conformance.ServiceVersioner
	conformance.WrongKindMaker
	conformance.WriteRejecter
	conformance.TransportObserver
	conformance.FilterRecorder
	conformance.MalformedResponder
	conformance.IdentitylessWriter
}

// FullConformance runs the ADR-0093 matrix against h and fails every case that is
// NotApplicable or could not observe everything it checks: the real adapters offer every
// optional harness capability, so either outcome means a capability silently went missing.
func FullConformance(t *testing.T, h FullHarness, opts ...conformance.Options) *conformance.Report {
	t.Helper()
	r := conformance.Run(t, h, opts...)
	for _, c := range r.Cases {
		if strings.Contains(c.Message, "not observable") {
			t.Errorf("case %s could not observe everything: %s", c.ID, c.Message)
		}
		if c.Outcome == conformance.NotApplicable {
			t.Errorf("case %s is NotApplicable (%s); the adapter documents none", c.ID, c.Message)
		}
	}
	return r
}
