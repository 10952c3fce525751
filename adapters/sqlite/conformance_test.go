package sqlite

import (
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
)

// TestConformance runs the full ADR-0093 matrix live against a real SQLite file;
// no case may be NotApplicable or unobserved, and the harness must offer every capability.
func TestConformance(t *testing.T) { storetest.FullConformance(t, newHarness(t)) }
