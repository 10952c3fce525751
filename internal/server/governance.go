package server

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// GovernanceClaim is the governance/v1 claim a server with this configuration publishes in
// its manifest (issue 46): read_only and isolation with AccessControl, and the retention and
// quotas it enforces, rounded so that the claim is always true of what the server does (a max
// age down to whole seconds, a sweep period and a write rate up). Nil when it enforces none,
// so the manifest hashes as the base contract's.
func (c Config) GovernanceClaim() *memory.GovernanceV1 {
	g := &memory.GovernanceV1{ReadOnly: c.AccessControl, Isolation: c.AccessControl}
	if c.Retention.Enabled() {
		period := c.SweepPeriod
		if period <= 0 {
			period = DefaultSweepPeriod
		}
		g.Retention = &memory.GovernanceRetention{
			MaxAgeSeconds:      int64(c.Retention.MaxAge / time.Second),
			MaxItems:           c.Retention.MaxItems,
			SweepPeriodSeconds: int64(math.Ceil(period.Seconds())),
		}
	}
	if q := c.Quota; q != (QuotaLimits{}) {
		g.Quota = &memory.GovernanceQuota{MaxItems: q.MaxItems, MaxBytes: q.MaxBytes}
		if q.WriteRate > 0 {
			g.Quota.WritesPerSecond = int64(math.Ceil(q.WriteRate))
			// The burst the bucket really has: NewGovernor's default is a second's worth.
			g.Quota.WriteBurst = q.WriteBurst
			if g.Quota.WriteBurst == 0 {
				g.Quota.WriteBurst = max(1, g.Quota.WritesPerSecond)
			}
		}
	}
	return g
}

// SweepAfter runs every governor's retention sweep once as if after had passed since now: the
// conformance harness's retention_sweep, which proves an item is kept until its max age and
// removed after it without waiting that long. Only a harness calls it; a data client never
// moves the server's clock.
func (s *Server) SweepAfter(ctx context.Context, after time.Duration) (int64, error) {
	var deleted int64
	var errs []error
	for _, g := range s.governorList() {
		n, err := g.sweepAt(ctx, s.now().Add(after))
		deleted += n
		errs = append(errs, err)
	}
	return deleted, errors.Join(errs...)
}
