package memory

import (
	"fmt"
	"strings"
)

// EvidenceReason names one way evidence can invalidate a published manifest. The adapter
// server's evidence report and the controller's Healthy condition use the same words, so a
// reason read off /v1/evidence is the reason a MemoryAdapter shows.
type EvidenceReason string

// The evidence reasons, in the order JudgeEvidence reports them after the sticky one.
const (
	// ReasonBackendUnreachable: the probe could not reach the backend service at all.
	ReasonBackendUnreachable EvidenceReason = "BackendUnreachable"
	// ReasonCapabilityProbeFailed: the service answered, but a capability the manifest relies
	// on is missing or broken.
	ReasonCapabilityProbeFailed EvidenceReason = "CapabilityProbeFailed"
	// ReasonIndexLagging: an adapter that declares immediate search reports index lag above
	// its tolerance.
	ReasonIndexLagging EvidenceReason = "IndexLagging"
	// ReasonServiceVersionChanged: the service version differs from the one observed when
	// the manifest was published. Sticky: the manifest was verified against the old version.
	ReasonServiceVersionChanged EvidenceReason = "ServiceVersionChanged"
	// ReasonManifestChanged: the store now reports a manifest other than the published one.
	// Sticky: the seed never lets an adapter serve a different contract mid-life.
	ReasonManifestChanged EvidenceReason = "ManifestChanged"
)

// Finding is one reason the evidence invalidates the manifest, with its explanation.
type Finding struct {
	// Reason is the stable, CamelCase name of the finding.
	Reason EvidenceReason
	// Message explains it for people; it may carry backend details but never secrets.
	Message string
}

// EvidenceState is what one verdict hands to the next: the first service version seen and
// the sticky finding, if any. The zero value is the state before the first probe.
type EvidenceState struct {
	// InitialServiceVersion is the service version of the first successful probe.
	InitialServiceVersion string
	// Sticky is the first finding that can never clear (a version or manifest change).
	Sticky *Finding
}

// EvidenceObservation is everything one probe round gathered.
type EvidenceObservation struct {
	// Published is the manifest the adapter published at start.
	Published Manifest
	// Current is the manifest the store reports now.
	Current Manifest
	// Probed is false when the store has no Prober; then only the manifest is judged.
	Probed bool
	// ProbeErr is the probe's error; Evidence is ignored when it is set.
	ProbeErr error
	// Evidence is the probe's observations.
	Evidence Evidence
	// MaxIndexLag is the index lag an immediate manifest tolerates.
	MaxIndexLag int64
}

// Verdict is the judgement of one observation.
type Verdict struct {
	// Valid is true when nothing in the evidence invalidates the manifest.
	Valid bool
	// Findings are the reasons it is invalid: the sticky finding first, then this round's.
	Findings []Finding
	// Next is the state to judge the next observation with.
	Next EvidenceState
}

// Reason joins the findings' messages, the text the evidence report carries.
func (v Verdict) Reason() string {
	msgs := make([]string, len(v.Findings))
	for i, f := range v.Findings {
		msgs[i] = f.Message
	}
	return strings.Join(msgs, "; ")
}

// JudgeEvidence decides whether obs upholds the published manifest, given what earlier
// rounds saw. It is pure (no clock, no I/O), so the server's refresh and the controller's
// health watch reach the same verdict from the same facts.
func JudgeEvidence(prev EvidenceState, obs EvidenceObservation) Verdict {
	next := prev
	var found []Finding
	stick := func(f Finding) {
		if next.Sticky == nil {
			next.Sticky = &f
		}
	}
	if obs.Probed {
		ev := obs.Evidence
		switch {
		case obs.ProbeErr != nil:
			found = append(found, Finding{ReasonBackendUnreachable, "backend unreachable: " + obs.ProbeErr.Error()})
		default:
			for _, p := range ev.Probes {
				if !p.OK {
					found = append(found, Finding{ReasonCapabilityProbeFailed, fmt.Sprintf("capability probe %q failed: %s", p.Name, p.Detail)})
				}
			}
			if ev.IndexLag != nil && obs.Published.SearchConsistency == ConsistencyImmediate && *ev.IndexLag > obs.MaxIndexLag {
				found = append(found, Finding{ReasonIndexLagging, fmt.Sprintf("index lags %d writes but the manifest declares immediate search consistency", *ev.IndexLag)})
			}
			if next.InitialServiceVersion == "" {
				next.InitialServiceVersion = ev.ServiceVersion
			} else if ev.ServiceVersion != next.InitialServiceVersion {
				stick(Finding{ReasonServiceVersionChanged, fmt.Sprintf("service version changed from %q to %q since the manifest was published", next.InitialServiceVersion, ev.ServiceVersion)})
			}
		}
	}
	if !obs.Current.Equal(obs.Published) {
		stick(Finding{ReasonManifestChanged, fmt.Sprintf("the store now reports manifest %s, not the published %s", obs.Current.Hash(), obs.Published.Hash())})
	}
	if next.Sticky != nil {
		found = append([]Finding{*next.Sticky}, found...)
	}
	return Verdict{Valid: len(found) == 0, Findings: found, Next: next}
}
