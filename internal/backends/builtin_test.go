package backends

import (
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// TestTheBinaryRunsEveryTypeTheOperatorDeploys: in the memory-adapter binary every backend the
// operator deploys has its runtime (Provide joined it to the <name>deploy entry), except
// External, the user's own server, which the binary never opens; and an entry that declares a
// purge has one.
func TestTheBinaryRunsEveryTypeTheOperatorDeploys(t *testing.T) {
	types := backend.Types()
	if len(types) < 5 {
		t.Fatalf("Types() = %v, want the five built-in types", types)
	}
	for _, typ := range types {
		b, _ := backend.ForType(typ)
		if runs := b.Open != nil && b.Harness != nil; runs == (typ == memoryv1alpha1.BackendExternal) {
			t.Errorf("%s: Open and Harness set = %v", typ, runs)
		}
		if b.Purges != (b.Purge != nil) {
			t.Errorf("%s: Purges = %v but Purge set = %v", typ, b.Purges, b.Purge != nil)
		}
	}
}
