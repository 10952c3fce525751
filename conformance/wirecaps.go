package conformance

import (
	"context"
	"errors"
	"slices"
)

// Capability names one harness capability of the seed's MemoryAdapterHarness, as the HTTP
// harness protocol (api/memory/openapi.yaml, /harness/v1/capabilities) spells it. A case
// that needs a capability the harness lacks is NotApplicable naming it, and the run's Claim
// is ClaimPartial: such a run never stands for the full ADR-0093 claim.
type Capability string

// The capabilities that count toward the full claim.
const (
	// CapReset empties the disposable scope and restores every injected fault.
	CapReset Capability = "reset"
	// CapSearchIndexVisible returns once everything stored so far is searchable.
	CapSearchIndexVisible Capability = "search_index_visible"
	// CapTransportUnavailable cuts the adapter's backend transport until the next reset.
	CapTransportUnavailable Capability = "transport_unavailable"
	// CapWrongKindRecord plants a service record of another native kind (WrongKindMaker).
	CapWrongKindRecord Capability = "wrong_kind_record"
	// CapWriteRejected makes the service reject one write (WriteRejecter).
	CapWriteRejected Capability = "write_rejected"
	// CapResponsesMalformed makes the service answer reads with malformed payloads
	// (MalformedResponder).
	CapResponsesMalformed Capability = "responses_malformed"
	// CapIdentitylessWrite makes the service acknowledge the next write without an identity
	// (IdentitylessWriter).
	CapIdentitylessWrite Capability = "identityless_write"
	// CapBackendCalls counts the adapter's calls to its backend (TransportObserver in
	// process, BackendCallCounter over the wire), to prove that a call made none.
	CapBackendCalls Capability = "backend_calls"
	// CapDuplicateIDBehaviour is the declared duplicate-id behaviour (ADR-0093 D4) that the
	// duplicate-id case compares with what the target does; wire runs only.
	CapDuplicateIDBehaviour Capability = "duplicate_id_behaviour"
	// CapToken is the target's bearer token, without which the authentication case cannot
	// tell a token-checking server from an open one; wire runs only.
	CapToken Capability = "token"
)

// Claim values of a report.
const (
	// ClaimFull: every case ran with every capability it uses.
	ClaimFull = "full"
	// ClaimPartial: some case was NotApplicable or weaker for a missing capability; even a
	// run whose Result is Passed does not establish the full ADR-0093 claim.
	ClaimPartial = "partial"
)

// CapabilityReporter is an optional Harness capability for harnesses whose capabilities are
// discovered at run time (the HTTP harness protocol): a method the harness has in Go but
// whose capability it reports absent counts as absent.
type CapabilityReporter interface {
	// HasCapability reports whether the named capability (a Capability value) is present.
	HasCapability(name string) bool
}

// BackendCallCounter is the over-the-wire form of TransportObserver: the number of calls
// the target server made to its backend, read from the harness protocol.
type BackendCallCounter interface {
	// BackendCalls returns the backend-call count so far; only differences matter.
	BackendCalls(ctx context.Context) (int64, error)
}

// AdapterVersioner is an optional Harness capability: the adapter version the target
// reports about itself, recorded in the report instead of Options.AdapterVersion.
type AdapterVersioner interface {
	// AdapterVersion returns the version the target reports.
	AdapterVersion(ctx context.Context) (string, error)
}

// WireTarget is the Harness capability of a run against a server over the wire
// (memory-adapter conformance --target): raw HTTP exchanges with the target's data
// listener. A harness with it gets the wire-rule cases on top of the matrix. Its methods use
// only the standard library, so conformance/wire implements it without importing this
// package.
type WireTarget interface {
	// TargetURL returns the data listener's base URL, for the report.
	TargetURL() string
	// Exchange sends one request to the data listener. auth is "token" (the configured
	// token, if any), "none" (no Authorization header) or "wrong" (a token that is not the
	// target's). It returns the status, the media type and the body (bounded).
	Exchange(ctx context.Context, method, path string, body []byte, auth string) (status int, mediaType string, respBody []byte, err error)
	// ManifestReads returns the body of every 200 answer to GET /v1/manifest seen so far.
	ManifestReads() [][]byte
	// HasToken reports whether the run was given the target's token.
	HasToken() bool
	// DuplicateIDBehaviour returns the declared duplicate-id behaviour (Overwrite, Reject or
	// Duplicate), or "" when none was declared.
	DuplicateIDBehaviour() string
}

// missingCapabilityError is how a harness says that a mandatory Harness method (Reset,
// MakeSearchIndexVisible, MakeTransportUnavailable) is absent at run time: its error has a
// MissingCapability method naming the capability.
type missingCapabilityError interface {
	error
	MissingCapability() string
}

// missingCapability returns the capability err says is absent, if any.
func missingCapability(err error) (string, bool) {
	var mc missingCapabilityError
	if errors.As(err, &mc) {
		return mc.MissingCapability(), true
	}
	return "", false
}

// has reports whether the harness offers cp: the Go interface (where there is one) and, for
// a CapabilityReporter, its run-time answer.
func (c *caseRun) has(cp Capability) bool {
	if r, ok := c.h.(CapabilityReporter); ok && !r.HasCapability(string(cp)) {
		return false
	}
	switch cp {
	case CapWrongKindRecord:
		_, ok := c.h.(WrongKindMaker)
		return ok
	case CapWriteRejected:
		_, ok := c.h.(WriteRejecter)
		return ok
	case CapResponsesMalformed:
		_, ok := c.h.(MalformedResponder)
		return ok
	case CapIdentitylessWrite:
		_, ok := c.h.(IdentitylessWriter)
		return ok
	case CapGovernanceTokens:
		_, ok := c.h.(GovernanceHarness)
		return ok
	case CapRetentionSweep:
		_, ok := c.h.(RetentionSweeper)
		return ok
	case CapBackendCalls:
		_, t := c.h.(TransportObserver)
		_, b := c.h.(BackendCallCounter)
		return t || b
	}
	return true
}

// lack records that the case ran weaker for want of cp.
func (c *caseRun) lack(cp Capability) {
	if !slices.Contains(c.missing, string(cp)) {
		c.missing = append(c.missing, string(cp))
	}
}

// needCapability ends the case as NotApplicable naming cp when the harness lacks it.
func (c *caseRun) needCapability(cp Capability, what string) {
	if !c.has(cp) {
		c.lack(cp)
		c.notApplicable("missing harness capability " + string(cp) + ": " + what)
	}
}

// harnessFailed ends the case: NotApplicable naming the capability when err says a harness
// capability is absent, Failed otherwise.
func (c *caseRun) harnessFailed(call string, err error) {
	if name, ok := missingCapability(err); ok {
		c.lack(Capability(name))
		c.notApplicable("missing harness capability " + name + " (" + call + ")")
	}
	c.fatalf("harness %s failed: %v", call, err)
}
