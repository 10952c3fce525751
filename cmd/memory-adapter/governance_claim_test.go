package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// TestOperatorAndServerClaimTheSameGovernance: the claim the operator expects of an adapter
// (MemoryAdapter.GovernanceClaim, in the published manifest's hash) is the claim the server
// publishes when started with the flags the operator renders for it (render.GovernanceArgs),
// for specs that round (a fractional max age, an omitted burst, an omitted sweep period).
func TestOperatorAndServerClaimTheSameGovernance(t *testing.T) {
	specs := map[string]memoryv1alpha1.MemoryAdapterSpec{
		"nothing":     {},
		"access only": {Access: &memoryv1alpha1.AccessSpec{}},
		"everything": {
			Access:    &memoryv1alpha1.AccessSpec{},
			Retention: &memoryv1alpha1.RetentionSpec{MaxAge: memoryv1alpha1.NewDuration(90*time.Second + 500*time.Millisecond), MaxItems: ptr.To[int64](5), SweepPeriod: memoryv1alpha1.NewDuration(1500 * time.Millisecond)},
			Quota:     &memoryv1alpha1.QuotaSpec{MaxItems: ptr.To[int64](6), MaxBytes: ptr.To[int64](1 << 20), WritesPerSecond: ptr.To[int32](7)},
		},
		"items retention, default sweep, burst given": {
			Retention: &memoryv1alpha1.RetentionSpec{MaxItems: ptr.To[int64](100)},
			Quota:     &memoryv1alpha1.QuotaSpec{WritesPerSecond: ptr.To[int32](3), WriteBurst: ptr.To[int32](9)},
		},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			ma := &memoryv1alpha1.MemoryAdapter{Spec: spec}
			var f governanceFlags
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			addGovernorFlags(fs, &f)
			if err := fs.Parse(render.GovernanceArgs(ma)); err != nil {
				t.Fatal(err)
			}
			if err := f.checkGovernor(); err != nil {
				t.Fatal(err)
			}
			got := server.Config{Retention: f.retention, SweepPeriod: f.sweepPeriod, Quota: f.quota, AccessControl: f.accessControl}.GovernanceClaim()
			if served := ma.Spec.Manifest.ToMemory().WithGovernance(got); served.Hash() != ma.PublishedManifestHash() {
				t.Errorf("server claims %+v, operator expects %+v: %v", served.Governance(), ma.PublishedManifest().Governance(), served.Diff(ma.PublishedManifest()))
			}
		})
	}
}
