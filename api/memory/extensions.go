package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ExtensionGovernanceV1 is the name of the governance extension (issue 46) in a manifest's
// extensions map.
const ExtensionGovernanceV1 = "governance/v1"

// Bounds on the governance claim's numbers: far beyond any real policy, and small enough that
// every implementation reads them as exact integers (below 2^53).
const (
	// MaxGovernanceSeconds bounds max_age_seconds and sweep_period_seconds (100 years).
	MaxGovernanceSeconds = 100 * 366 * 24 * 3600
	// MaxGovernanceCount bounds the item, byte and rate numbers.
	MaxGovernanceCount = 1 << 50
)

// Extensions holds a manifest's versioned extensions (issue 46): capabilities beyond the
// seed's base contract, each under its own versioned name, so the base fields never change
// meaning. The only extension of this version is governance/v1; decoding refuses any other
// name, since a claim a client cannot check is not one it may accept.
type Extensions struct {
	// Governance is the governance/v1 extension: the rights, isolation, retention and quotas
	// the adapter enforces.
	Governance *GovernanceV1 `json:"governance/v1,omitempty"`
}

// GovernanceV1 is what an adapter claims to enforce for its scope (conformance profiles
// read-only, isolation, retention and quota check each claim). Field order is the canonical
// form's.
type GovernanceV1 struct {
	// ReadOnly claims that tokens may be read-only and that their stores are refused with the
	// 403 forbidden problem, storing nothing.
	ReadOnly bool `json:"read_only"`
	// Isolation claims that tokens may name sub-scopes whose items no other scope sees.
	Isolation bool `json:"isolation"`
	// Retention is the retention policy the adapter enforces, if any.
	Retention *GovernanceRetention `json:"retention,omitempty"`
	// Quota is the quota the adapter enforces per scope and per sub-scope, if any.
	Quota *GovernanceQuota `json:"quota,omitempty"`
}

// GovernanceRetention is a retention claim: an item is never removed before MaxAgeSeconds
// after the adapter stored it, and is removed within MaxAgeSeconds + SweepPeriodSeconds.
type GovernanceRetention struct {
	// MaxAgeSeconds is the age at which items expire; 0 means no age limit.
	MaxAgeSeconds int64 `json:"max_age_seconds"`
	// MaxItems keeps a scope's newest MaxItems items; 0 means no count limit.
	MaxItems int64 `json:"max_items"`
	// SweepPeriodSeconds is how often the adapter sweeps; 0 means its default.
	SweepPeriodSeconds int64 `json:"sweep_period_seconds"`
}

// GovernanceQuota is a quota claim, per scope and per sub-scope; 0 means no limit of a kind.
type GovernanceQuota struct {
	// MaxItems is the most items a scope holds; a store beyond it is 507 quota_exceeded.
	MaxItems int64 `json:"max_items"`
	// MaxBytes is the most item bytes a scope holds; a store beyond it is 507 quota_exceeded.
	MaxBytes int64 `json:"max_bytes"`
	// WritesPerSecond is the sustained store rate; beyond it a store is 429 rate_limited.
	WritesPerSecond int64 `json:"writes_per_second"`
	// WriteBurst is how many stores may come at once above the rate.
	WriteBurst int64 `json:"write_burst"`
}

// normalize drops what claims nothing, so that a manifest without governance hashes exactly
// as the base contract's and an empty extension cannot make two equal claims differ.
func (e *Extensions) normalize() *Extensions {
	if e == nil {
		return nil
	}
	g := e.Governance.normalize()
	if g == nil {
		return nil
	}
	return &Extensions{Governance: g}
}

func (g *GovernanceV1) normalize() *GovernanceV1 {
	if g == nil {
		return nil
	}
	out := GovernanceV1{ReadOnly: g.ReadOnly, Isolation: g.Isolation}
	if r := g.Retention; r != nil && (r.MaxAgeSeconds != 0 || r.MaxItems != 0) {
		c := *r
		out.Retention = &c
	}
	if q := g.Quota; q != nil && *q != (GovernanceQuota{}) {
		c := *q
		out.Quota = &c
	}
	if !out.ReadOnly && !out.Isolation && out.Retention == nil && out.Quota == nil {
		return nil
	}
	return &out
}

// Claims reports the governance claim of the extensions, nil when there is none.
func (e *Extensions) Claims() *GovernanceV1 {
	if n := e.normalize(); n != nil {
		return n.Governance
	}
	return nil
}

// Governance returns the manifest's governance/v1 claim, nil when it makes none.
func (m Manifest) Governance() *GovernanceV1 { return m.Extensions.Claims() }

// WithGovernance returns a copy of m claiming g (nil or an empty claim removes the
// extension).
func (m Manifest) WithGovernance(g *GovernanceV1) Manifest {
	if g.normalize() == nil {
		m.Extensions = nil
		return m
	}
	c := *g
	m.Extensions = &Extensions{Governance: &c}
	return m
}

func (e *Extensions) validate() error {
	g := e.Claims()
	if g == nil {
		return nil
	}
	var errs []error
	count := func(name string, v int64, maxV int64) {
		if v < 0 || v > maxV {
			errs = append(errs, fmt.Errorf("extensions.governance/v1.%s: must be 0 to %d", name, maxV))
		}
	}
	if r := g.Retention; r != nil {
		count("retention.max_age_seconds", r.MaxAgeSeconds, MaxGovernanceSeconds)
		count("retention.max_items", r.MaxItems, MaxGovernanceCount)
		count("retention.sweep_period_seconds", r.SweepPeriodSeconds, MaxGovernanceSeconds)
	}
	if q := g.Quota; q != nil {
		count("quota.max_items", q.MaxItems, MaxGovernanceCount)
		count("quota.max_bytes", q.MaxBytes, MaxGovernanceCount)
		count("quota.writes_per_second", q.WritesPerSecond, MaxGovernanceCount)
		count("quota.write_burst", q.WriteBurst, MaxGovernanceCount)
		if q.WriteBurst > 0 && q.WritesPerSecond == 0 {
			errs = append(errs, errors.New("extensions.governance/v1.quota.write_burst: needs writes_per_second"))
		}
	}
	return errors.Join(errs...)
}

func (e *Extensions) equal(o *Extensions) bool {
	a, b := e.Claims(), o.Claims()
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ra, rb := a.Retention, b.Retention
	qa, qb := a.Quota, b.Quota
	return a.ReadOnly == b.ReadOnly && a.Isolation == b.Isolation &&
		(ra == nil) == (rb == nil) && (ra == nil || *ra == *rb) &&
		(qa == nil) == (qb == nil) && (qa == nil || *qa == *qb)
}

// UnmarshalJSON decodes extensions strictly: governance/v1 is the only known name, every
// member of it is required except retention and quota, and unknown members are errors.
func (e *Extensions) UnmarshalJSON(data []byte) error {
	var names map[string]json.RawMessage
	if err := strictDecode(data, &names); err != nil {
		return fmt.Errorf("extensions: %w", err)
	}
	out := Extensions{}
	for name, raw := range names {
		if name != ExtensionGovernanceV1 {
			return fmt.Errorf("extensions: unknown extension %q (this version knows %s)", truncateName(name), ExtensionGovernanceV1)
		}
		var g GovernanceV1
		if err := decodeGovernance(raw, &g); err != nil {
			return err
		}
		out.Governance = &g
	}
	*e = out
	return nil
}

func truncateName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// decodeGovernance decodes governance/v1 with every member required: the wire has no
// defaults, as the base manifest has none.
func decodeGovernance(raw []byte, g *GovernanceV1) error {
	var w struct {
		ReadOnly  *bool           `json:"read_only"`
		Isolation *bool           `json:"isolation"`
		Retention json.RawMessage `json:"retention"`
		Quota     json.RawMessage `json:"quota"`
	}
	if err := strictDecode(raw, &w); err != nil {
		return fmt.Errorf("extensions.governance/v1: %w", err)
	}
	if w.ReadOnly == nil || w.Isolation == nil {
		return errors.New("extensions.governance/v1: read_only and isolation are required")
	}
	*g = GovernanceV1{ReadOnly: *w.ReadOnly, Isolation: *w.Isolation}
	if w.Retention != nil {
		var r struct {
			MaxAgeSeconds      *int64 `json:"max_age_seconds"`
			MaxItems           *int64 `json:"max_items"`
			SweepPeriodSeconds *int64 `json:"sweep_period_seconds"`
		}
		if err := strictDecode(w.Retention, &r); err != nil {
			return fmt.Errorf("extensions.governance/v1.retention: %w", err)
		}
		if r.MaxAgeSeconds == nil || r.MaxItems == nil || r.SweepPeriodSeconds == nil {
			return errors.New("extensions.governance/v1.retention: max_age_seconds, max_items and sweep_period_seconds are required")
		}
		g.Retention = &GovernanceRetention{MaxAgeSeconds: *r.MaxAgeSeconds, MaxItems: *r.MaxItems, SweepPeriodSeconds: *r.SweepPeriodSeconds}
	}
	if w.Quota != nil {
		var q struct {
			MaxItems        *int64 `json:"max_items"`
			MaxBytes        *int64 `json:"max_bytes"`
			WritesPerSecond *int64 `json:"writes_per_second"`
			WriteBurst      *int64 `json:"write_burst"`
		}
		if err := strictDecode(w.Quota, &q); err != nil {
			return fmt.Errorf("extensions.governance/v1.quota: %w", err)
		}
		if q.MaxItems == nil || q.MaxBytes == nil || q.WritesPerSecond == nil || q.WriteBurst == nil {
			return errors.New("extensions.governance/v1.quota: max_items, max_bytes, writes_per_second and write_burst are required")
		}
		g.Quota = &GovernanceQuota{MaxItems: *q.MaxItems, MaxBytes: *q.MaxBytes, WritesPerSecond: *q.WritesPerSecond, WriteBurst: *q.WriteBurst}
	}
	return nil
}

// strictDecode decodes one JSON object into v, refusing unknown members, null and trailing
// data. Numbers must be integers: encoding/json refuses 1.5 and 1e3 for an int64.
func strictDecode(raw []byte, v any) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return errors.New("must be an object, not null")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}
