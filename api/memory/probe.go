package memory

import (
	"context"
	"time"
)

// Prober is an optional adapter capability: a live look at the backend service that the
// adapter server publishes on /v1/evidence and the conformance report records. Evidence that
// contradicts the manifest (a changed service version, a failed capability probe, a lagging
// index on an immediate adapter) lets the operator withdraw the adapter's availability.
type Prober interface {
	// Probe asks the backend for its version and checks the features the manifest relies on.
	// An unreachable backend is a MemoryAdapterUnavailable error, not evidence with failed
	// probes; a reachable backend missing a feature is evidence with that probe not OK.
	Probe(ctx context.Context) (Evidence, error)
}

// Evidence is one probe run's observations about the backend service.
type Evidence struct {
	// ServiceVersion is the backend's own version string (for example "PostgreSQL 15.8"),
	// compared against the version the last passing conformance run tested.
	ServiceVersion string `json:"service_version"`
	// Probes are the capability checks, each named stably so reports can be compared.
	Probes []ProbeResult `json:"probes"`
	// IndexLag counts acknowledged writes not yet visible to search; nil means the backend
	// has no asynchronous index, so lag cannot exist.
	IndexLag *int64 `json:"index_lag,omitempty"`
	// ObservedAt is when the probe ran, so that stale evidence can be recognized.
	ObservedAt time.Time `json:"observed_at"`
}

// ProbeResult is one named capability check.
type ProbeResult struct {
	// Name identifies the check, e.g. "jsonb" or "wal_mode"; stable across versions.
	Name string `json:"name"`
	// OK reports whether the capability is present and working.
	OK bool `json:"ok"`
	// Detail explains a failure (or the observed value) without secrets.
	Detail string `json:"detail,omitempty"`
}

// AllOK reports whether every probe passed; evidence without probes is vacuously OK.
func (e Evidence) AllOK() bool {
	for _, p := range e.Probes {
		if !p.OK {
			return false
		}
	}
	return true
}

// Failed returns the names of the probes that did not pass, in probe order.
func (e Evidence) Failed() []string {
	var out []string
	for _, p := range e.Probes {
		if !p.OK {
			out = append(out, p.Name)
		}
	}
	return out
}
