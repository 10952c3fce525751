package render

import (
	"testing"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// TestDoorbellURLReachesEveryAdapterContainer checks that built-in and External adapters are
// told where to ring, under their own namespace and name, and that no doorbell renders none.
func TestDoorbellURLReachesEveryAdapterContainer(t *testing.T) {
	builtin := &memoryv1alpha1.MemoryAdapter{}
	builtin.Name, builtin.Namespace = "notes", "team-a"
	builtin.Spec.Backend = memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendSQLite, Scope: "agents"}
	for _, ma := range []*memoryv1alpha1.MemoryAdapter{builtin, externalAdapter(&memoryv1alpha1.ExternalOptions{})} {
		s := EffectiveSettings(ma, "adapter:1")
		s.DoorbellURL = "http://mao-evidence-doorbell.ops.svc:8082/v1/doorbell/"
		env := Deployment(ma, s).Spec.Template.Spec.Containers[0].Env
		want := "http://mao-evidence-doorbell.ops.svc:8082/v1/doorbell/" + ma.Namespace + "/" + ma.Name
		if got, ok := envValue(env, EnvDoorbellURL); !ok || got != want {
			t.Errorf("%s: %s = %q (set %t), want %q", ma.Name, EnvDoorbellURL, got, ok, want)
		}
		s.DoorbellURL = ""
		if got, ok := envValue(Deployment(ma, s).Spec.Template.Spec.Containers[0].Env, EnvDoorbellURL); ok {
			t.Errorf("%s without a doorbell: %s = %q", ma.Name, EnvDoorbellURL, got)
		}
	}
}
