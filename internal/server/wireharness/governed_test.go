package wireharness_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/server"
	"github.com/agentmem/memory-adapter-operator/internal/server/wireharness"
)

// TestGovernanceProfilesOnLiveBackends: this build's server, governed as the operator
// renders spec.access, spec.retention and spec.quota, publishes the governance/v1 claim and
// passes every profile over the wire against each real backend, with the full claim; every
// exchange is validated against the OpenAPI document.
func TestGovernanceProfilesOnLiveBackends(t *testing.T) {
	gov := &wireharness.Governance{
		Retention:     memory.RetentionPolicy{MaxAge: 720 * time.Hour, MaxItems: 5},
		SweepPeriod:   time.Minute,
		Quota:         server.QuotaLimits{MaxItems: 60, MaxBytes: 64 << 10, WriteRate: 50, WriteBurst: 20},
		AccessControl: true,
	}
	for _, name := range []string{"sqlite", "postgres", "redis"} {
		t.Run(name, func(t *testing.T) {
			ctx := liveCtx(t)
			inner, err := backendHarness[name](ctx, t)
			if err != nil {
				t.Fatalf("harness: %v", err)
			}
			h := wireharness.New(inner, wireharness.Options{Token: "live", Governance: gov, WrapTransport: validated(t)})
			t.Cleanup(func() {
				if err := h.Close(context.Background()); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			r := conformance.Run(t, h)
			g := r.Manifest.Governance()
			if g == nil || !g.ReadOnly || !g.Isolation || g.Retention == nil || g.Quota == nil {
				t.Fatalf("the published manifest claims %+v, want every governance/v1 claim", g)
			}
			if g.Retention.MaxAgeSeconds != 720*3600 || g.Quota.WritesPerSecond != 50 || g.Quota.WriteBurst != 20 {
				t.Errorf("the claim's numbers: %+v %+v", *g.Retention, *g.Quota)
			}
			for _, id := range conformance.ProfileIDs() {
				if p, _ := r.Profile(id); p.Outcome != conformance.Passed {
					t.Errorf("profile %s is %s: %s", id, p.Outcome, p.Message)
				}
			}
		})
	}
}
