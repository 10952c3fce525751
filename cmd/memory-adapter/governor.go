package main

import (
	"math"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
	"github.com/agentmem/memory-adapter-operator/internal/server/wireharness"
)

// governanceFlags are the retention, quota and access-control flags of serve and
// conformance (issue 46): what the server enforces and claims in its manifest's governance/v1
// extension, and what a conformance run's servers enforce so that its manifest is the
// deployed one.
type governanceFlags struct {
	retention     memory.RetentionPolicy
	sweepPeriod   time.Duration
	quota         server.QuotaLimits
	accessControl bool
}

// addGovernorFlags declares the governance flags (docs/server.md, "Retention and quotas"),
// which the operator renders from spec.retention, spec.quota and spec.access.
func addGovernorFlags(fs *pflag.FlagSet, f *governanceFlags) {
	fs.BoolVar(&f.accessControl, "access-control", false,
		"claim governance/v1 read_only and isolation: the token file's read-only and sub-scope grants (spec.access) are what clients may rely on")
	fs.DurationVar(&f.retention.MaxAge, "retention-max-age", 0,
		"remove items stored at least this long ago, by the adapter's clock (0: no age limit); an item goes within max age plus one sweep period")
	fs.Int64Var(&f.retention.MaxItems, "retention-max-items", 0,
		"keep the scope's newest N items by store time and remove the rest at each sweep (0: no limit)")
	fs.DurationVar(&f.sweepPeriod, "retention-sweep-period", server.DefaultSweepPeriod,
		"how often retention sweeps and the quota's usage is recounted from the backend (0: 1m)")
	fs.Int64Var(&f.quota.MaxItems, "quota-max-items", 0,
		"refuse stores that would take the scope over N items with 507 quota_exceeded (0: no limit)")
	fs.Int64Var(&f.quota.MaxBytes, "quota-max-bytes", 0,
		"refuse stores that would take the scope over N bytes of items (content, metadata, tags) with 507 quota_exceeded (0: no limit)")
	fs.Float64Var(&f.quota.WriteRate, "quota-write-rate", 0,
		"refuse stores over R per second (a token bucket) with 429 rate_limited and Retry-After (0: no limit)")
	fs.Int64Var(&f.quota.WriteBurst, "quota-write-burst", 0,
		"the write rate's bucket size: stores admitted at once after a quiet spell (0: one second's worth of --quota-write-rate)")
}

// checkGovernor refuses negative limits and periods, a max age under a second and a burst
// without a rate, as usage errors.
func (f *governanceFlags) checkGovernor() error {
	switch {
	case f.retention.MaxAge < 0:
		return usageError("--retention-max-age must not be negative (0 keeps items of any age)")
	case f.retention.MaxAge > 0 && f.retention.MaxAge < time.Second:
		return usageError("--retention-max-age must be at least 1s (or 0 for no age limit)")
	case f.retention.MaxItems < 0:
		return usageError("--retention-max-items must not be negative (0 keeps any number)")
	case f.sweepPeriod < 0:
		return usageError("--retention-sweep-period must not be negative (0 is the default, 1m)")
	case f.quota.MaxItems < 0:
		return usageError("--quota-max-items must not be negative (0 is no limit)")
	case f.quota.MaxBytes < 0:
		return usageError("--quota-max-bytes must not be negative (0 is no limit)")
	case f.quota.WriteRate < 0 || math.IsNaN(f.quota.WriteRate) || math.IsInf(f.quota.WriteRate, 0):
		return usageError("--quota-write-rate must be a finite number, not negative (0 is no limit)")
	case f.quota.WriteBurst < 0:
		return usageError("--quota-write-burst must not be negative (0 is one second's worth of the rate)")
	case f.quota.WriteBurst > 0 && f.quota.WriteRate == 0:
		return usageError("--quota-write-burst needs --quota-write-rate")
	}
	return nil
}

// wireGovernance is the wire harness's governance from the flags; nil when they govern
// nothing, so an ungoverned run's servers are exactly as before.
func (f *governanceFlags) wireGovernance() *wireharness.Governance {
	if !f.accessControl && !f.retention.Enabled() && f.quota == (server.QuotaLimits{}) {
		return nil
	}
	return &wireharness.Governance{Retention: f.retention, SweepPeriod: f.sweepPeriod, Quota: f.quota, AccessControl: f.accessControl}
}
