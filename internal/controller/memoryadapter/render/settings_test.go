package render

import (
	"strings"
	"testing"
	"time"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond/condtest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestEffectiveSettings(t *testing.T) {
	ma := &memoryv1alpha1.MemoryAdapter{Spec: memoryv1alpha1.MemoryAdapterSpec{
		Backend: memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendRedis},
		Health:  &memoryv1alpha1.HealthSpec{Period: memoryv1alpha1.NewDuration(10 * time.Second)},
		Lifecycle: &memoryv1alpha1.LifecycleSpec{RequestTimeout: memoryv1alpha1.NewDuration(time.Second),
			Retry: &memoryv1alpha1.RetryPolicies{Search: &memoryv1alpha1.RetryPolicy{MaxAttempts: ptr.To[int32](1)}}},
	}}
	s := EffectiveSettings(ma, "img:dev")
	if s.Image != "img:dev" || s.Replicas != 1 || s.HealthPeriod != 10*time.Second || s.StalenessGrace != 30*time.Second ||
		s.FailureThreshold != 3 || s.ConformanceInterval != 24*time.Hour || s.ConformanceTimeout != 10*time.Minute {
		t.Fatalf("defaults: %+v", s)
	}
	l := s.Lifecycle
	if l.RequestTimeout.Or(0) != time.Second || l.ConnectTimeout.Or(0) != 2*time.Second {
		t.Errorf("timeouts: user request %v, backend connect %v", l.RequestTimeout, l.ConnectTimeout)
	}
	if *l.Retry.Search.MaxAttempts != 1 || *l.Retry.Retrieve.MaxAttempts != 3 || *l.Retry.Store.MaxAttempts != 1 {
		t.Errorf("retry overlay: %+v", l.Retry)
	}
	if l.DuplicateIDBehaviour != memoryv1alpha1.DuplicateIDOverwrite || !*l.ConcurrencySafe {
		t.Errorf("documented facts missing: %+v", l)
	}
}

func TestOperationBoundComposesTheBackendsRetries(t *testing.T) {
	for _, tc := range []struct {
		backend memoryv1alpha1.BackendType
		want    time.Duration
	}{
		// Redis: reads try 3 times, 2 s each, with 25 ms then 50 ms between: 6.075 s + 1 s.
		{memoryv1alpha1.BackendRedis, 6*time.Second + 75*time.Millisecond + time.Second},
		// PostgreSQL: 2 attempts of 5 s, at most 100 ms between.
		{memoryv1alpha1.BackendPostgres, 11*time.Second + 100*time.Millisecond},
		// SQLite: one attempt.
		{memoryv1alpha1.BackendSQLite, 6 * time.Second},
	} {
		t.Run(string(tc.backend), func(t *testing.T) {
			l := effectiveLifecycle(tc.backend, nil)
			got := operationBound(l)
			if got != tc.want {
				t.Errorf("operationBound = %v, want %v", got, tc.want)
			}
			if rt := l.RequestTimeout.Or(0); got <= rt {
				t.Errorf("the server's bound %v does not exceed the backend's request timeout %v: they race", got, rt)
			}
		})
	}
	// A user's request timeout reaches the composition.
	l := effectiveLifecycle(memoryv1alpha1.BackendSQLite, &memoryv1alpha1.LifecycleSpec{RequestTimeout: memoryv1alpha1.NewDuration(20 * time.Second)})
	if got := operationBound(l); got != 21*time.Second {
		t.Errorf("with requestTimeout 20s: %v, want 21s", got)
	}
}

func TestRunNamesAreStableAndDistinct(t *testing.T) {
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 40)}}
	k := RunKey{ManifestHash: condtest.HashA, ServiceVersion: "3.50", AdapterVersion: "v1"}
	seen := map[string]string{}
	for what, seed := range map[string]string{
		"initial":     RunSeed(k, "", ""),
		"rerun":       RunSeed(k, "now", ""),
		"interval":    RunSeed(k, "", "2026-12-03T10:00:00Z"),
		"new version": RunSeed(RunKey{ManifestHash: condtest.HashA, ServiceVersion: "3.51", AdapterVersion: "v1"}, "", ""),
		"new adapter": RunSeed(RunKey{ManifestHash: condtest.HashA, ServiceVersion: "3.50", AdapterVersion: "v2"}, "", ""),
	} {
		n := JobName(ma, seed)
		if n != JobName(ma, seed) {
			t.Fatalf("%s: the name is not deterministic", what)
		}
		if len(n) > 63 {
			t.Errorf("%s: %q is longer than a label value may be", what, n)
		}
		if other, dup := seen[n]; dup {
			t.Errorf("%s and %s share the Job name %s", what, other, n)
		}
		seen[n] = what
	}
}
