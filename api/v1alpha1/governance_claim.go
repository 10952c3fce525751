package v1alpha1

import (
	"math"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// defaultSweepPeriod is the adapter server's sweep period when spec.retention.sweepPeriod is
// omitted (memory-adapter serve --retention-sweep-period's default).
const defaultSweepPeriod = time.Minute

// GovernanceClaim is the governance/v1 claim the adapter's server publishes for this spec:
// what spec.access, spec.retention and spec.quota make it enforce, rounded as the server
// rounds (a max age down to whole seconds, a sweep period and a write rate up, an omitted
// burst as one second's worth of the rate). The operator renders those fields as serve's
// flags, and a test holds the two to the same claim. Nil when the spec governs nothing.
func (ma *MemoryAdapter) GovernanceClaim() *memory.GovernanceV1 {
	s := ma.Spec
	access := s.Access != nil
	g := &memory.GovernanceV1{ReadOnly: access, Isolation: access}
	if r := s.Retention; r != nil {
		maxAge := r.MaxAge.Or(0)
		var maxItems int64
		if r.MaxItems != nil {
			maxItems = *r.MaxItems
		}
		if maxAge > 0 || maxItems > 0 {
			period := r.SweepPeriod.Or(defaultSweepPeriod)
			if period <= 0 {
				period = defaultSweepPeriod
			}
			g.Retention = &memory.GovernanceRetention{
				MaxAgeSeconds:      int64(maxAge / time.Second),
				MaxItems:           maxItems,
				SweepPeriodSeconds: int64(math.Ceil(period.Seconds())),
			}
		}
	}
	if q := s.Quota; q != nil {
		c := &memory.GovernanceQuota{}
		if q.MaxItems != nil {
			c.MaxItems = *q.MaxItems
		}
		if q.MaxBytes != nil {
			c.MaxBytes = *q.MaxBytes
		}
		if q.WritesPerSecond != nil && *q.WritesPerSecond > 0 {
			c.WritesPerSecond = int64(*q.WritesPerSecond)
			c.WriteBurst = c.WritesPerSecond
			if q.WriteBurst != nil && *q.WriteBurst > 0 {
				c.WriteBurst = int64(*q.WriteBurst)
			}
		}
		if *c != (memory.GovernanceQuota{}) {
			g.Quota = c
		}
	}
	return g
}

// PublishedManifest is the manifest the adapter publishes: spec.manifest with the governance
// claim as its governance/v1 extension. Without governance it is spec.manifest exactly, and
// hashes as it always has.
func (ma *MemoryAdapter) PublishedManifest() memory.Manifest {
	return ma.Spec.Manifest.ToMemory().WithGovernance(ma.GovernanceClaim())
}

// PublishedManifestHash is PublishedManifest's hash: what the adapter's evidence names, what
// conformance runs are keyed on and what status.manifestHash shows.
func (ma *MemoryAdapter) PublishedManifestHash() string { return ma.PublishedManifest().Hash() }
