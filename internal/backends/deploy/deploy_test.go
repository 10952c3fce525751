package deploy

import (
	"slices"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// TestTheManagersTableHasEveryTypeAndNoRuntime: what the manager links registers an entry for
// every spec.backend.type, and none of them carries the binary's side (a runtime here would
// mean a driver in the manager).
func TestTheManagersTableHasEveryTypeAndNoRuntime(t *testing.T) {
	want := []memoryv1alpha1.BackendType{memoryv1alpha1.BackendExternal, memoryv1alpha1.BackendKhive,
		memoryv1alpha1.BackendPostgres, memoryv1alpha1.BackendRedis, memoryv1alpha1.BackendSQLite}
	if got := backend.Types(); !slices.Equal(got, want) {
		t.Fatalf("Types() = %v, want %v", got, want)
	}
	for _, typ := range want {
		b, _ := backend.ForType(typ)
		if b.Open != nil || b.Harness != nil || b.Flags != nil || b.Purge != nil {
			t.Errorf("%s: the manager's entry carries the binary's side: %+v", typ, b.Runtime)
		}
	}
	if r := backend.Runnable(); len(r) != 0 {
		t.Errorf("Runnable() = %d backends in the manager's table, want none", len(r))
	}
}
