package conditions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// toLua turns decoded JSON into Lua values, as Argo CD hands a resource to a health script.
func toLua(L *lua.LState, v any) lua.LValue {
	switch t := v.(type) {
	case map[string]any:
		tb := L.NewTable()
		for k, c := range t {
			tb.RawSetString(k, toLua(L, c))
		}
		return tb
	case []any:
		tb := L.NewTable()
		for _, c := range t {
			tb.Append(toLua(L, c))
		}
		return tb
	case string:
		return lua.LString(t)
	case float64:
		return lua.LNumber(t)
	case bool:
		return lua.LBool(t)
	default:
		return lua.LNil
	}
}

// argoHealth runs config/argocd/health.lua on obj and returns hs.status and hs.message.
func argoHealth(t *testing.T, obj *memoryv1alpha1.MemoryAdapter) (string, string) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "config", "argocd", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", toLua(L, m))
	fn, err := L.LoadString(string(script))
	if err != nil {
		t.Fatalf("health.lua: %v", err)
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		t.Fatalf("health.lua: %v", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %v, not a table", L.Get(-1))
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

// TestArgoCDHealth: the documented Argo CD health check agrees with Available over the
// condition table: Healthy exactly when Available is True, Degraded for the reasons that need
// a person, Suspended for a scale-down, Progressing for everything else and for a status the
// operator has not written for the current generation yet.
func TestArgoCDHealth(t *testing.T) {
	adapter := func(status metav1.ConditionStatus, reason string, gen, observed int64) *memoryv1alpha1.MemoryAdapter {
		ma := &memoryv1alpha1.MemoryAdapter{}
		ma.Name, ma.Namespace, ma.Generation = "mem", "team", gen
		ma.Status.ObservedGeneration = observed
		available := metav1.Condition{Type: memoryv1alpha1.ConditionAvailable, Status: status, Reason: reason, Message: "why", LastTransitionTime: metav1.Now()}
		ma.Status.Conditions = []metav1.Condition{available}
		set, _ := GitOps(available)
		for _, c := range set {
			c.LastTransitionTime = metav1.Now()
			ma.Status.Conditions = append(ma.Status.Conditions, c)
		}
		return ma
	}
	for _, tc := range []struct {
		status metav1.ConditionStatus
		reason string
		want   string
	}{
		{metav1.ConditionTrue, memoryv1alpha1.ReasonAdapterAvailable, "Healthy"},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonDeploymentProgressing, "Progressing"},
		{metav1.ConditionUnknown, memoryv1alpha1.ReasonConformanceRunning, "Progressing"},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonEvidenceUnreachable, "Progressing"},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonScaledToZero, "Suspended"},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonAdapterCrashLooping, "Degraded"},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonConformanceFailed, "Degraded"},
		{metav1.ConditionFalse, memoryv1alpha1.ReasonBackendSecretMissing, "Degraded"},
	} {
		got, msg := argoHealth(t, adapter(tc.status, tc.reason, 2, 2))
		if got != tc.want {
			t.Errorf("Available %s %s: Argo CD health %s (%s), want %s", tc.status, tc.reason, got, msg, tc.want)
		}
	}
	if got, _ := argoHealth(t, adapter(metav1.ConditionTrue, memoryv1alpha1.ReasonAdapterAvailable, 3, 2)); got != "Progressing" {
		t.Errorf("a status of an older generation: %s, want Progressing", got)
	}
	if got, _ := argoHealth(t, &memoryv1alpha1.MemoryAdapter{}); got != "Progressing" {
		t.Errorf("no status yet: %s, want Progressing", got)
	}
}
