package memory

import (
	_ "embed"
	"time"
)

// OpenAPI is the OpenAPI 3 document of the adapter server's wire format (contract.md §4).
// The server and the remote client are tested against it.
//
//go:embed openapi.yaml
var OpenAPI []byte

// ProblemType is the stable "type" of an application/problem+json error on the wire.
type ProblemType string

// The stable problem types. Clients branch on these, never on titles or details.
const (
	// ProblemInvalidRequest (400): malformed JSON, wrong types, unknown fields, invalid UUID.
	ProblemInvalidRequest ProblemType = "invalid_request"
	// ProblemUnauthorized (401): missing or wrong bearer token.
	ProblemUnauthorized ProblemType = "unauthorized"
	// ProblemForbidden (403): a valid token whose binding may not make this call (a
	// read-only binding's store).
	ProblemForbidden ProblemType = "forbidden"
	// ProblemNotFound (404): unknown item id, or an unknown route.
	ProblemNotFound ProblemType = "not_found"
	// ProblemMethodNotAllowed (405): a known route with another method.
	ProblemMethodNotAllowed ProblemType = "method_not_allowed"
	// ProblemPayloadTooLarge (413): the request body is over the server's limit.
	ProblemPayloadTooLarge ProblemType = "payload_too_large"
	// ProblemUnsupportedMediaType (415): a request body that is not application/json.
	ProblemUnsupportedMediaType ProblemType = "unsupported_media_type"
	// ProblemUnsupportedQuery (422): UnsupportedMemoryQuery, with rejected_keys.
	ProblemUnsupportedQuery ProblemType = "unsupported_query"
	// ProblemAdapterError (502): MemoryAdapterError from the backend.
	ProblemAdapterError ProblemType = "adapter_error"
	// ProblemUnavailable (503): MemoryAdapterUnavailable, or a manifest invalidated by evidence.
	ProblemUnavailable ProblemType = "unavailable"
	// ProblemQuotaExceeded (507): a store that would take the scope over its items or bytes
	// quota; nothing was stored.
	ProblemQuotaExceeded ProblemType = "quota_exceeded"
	// ProblemRateLimited (429): a store over the scope's write rate, with Retry-After;
	// nothing was stored.
	ProblemRateLimited ProblemType = "rate_limited"
)

// Problem is the application/problem+json body of every error the adapter server returns.
type Problem struct {
	// Type is the stable problem type.
	Type ProblemType `json:"type"`
	// Title is a short human summary of the type.
	Title string `json:"title"`
	// Status repeats the HTTP status code.
	Status int `json:"status"`
	// Detail explains this occurrence, without secrets.
	Detail string `json:"detail,omitempty"`
	// RejectedKeys is set for unsupported_query: sorted and unique.
	RejectedKeys []string `json:"rejected_keys,omitempty"`
}

// EvidenceReport is the body of GET /v1/evidence: what the operator's health watch reads.
type EvidenceReport struct {
	// Adapter is the manifest's adapter id.
	Adapter string `json:"adapter"`
	// AdapterVersion is the adapter build's version.
	AdapterVersion string `json:"adapter_version"`
	// ManifestHash is Manifest.Hash() of the published manifest.
	ManifestHash string `json:"manifest_hash"`
	// ServiceVersion is the backend service version observed at the last probe.
	ServiceVersion string `json:"service_version"`
	// InitialServiceVersion is the backend service version observed when the server started.
	InitialServiceVersion string `json:"initial_service_version,omitempty"`
	// Probes are the capability probe outcomes of the last probe.
	Probes []ProbeResult `json:"probes"`
	// IndexLag counts acknowledged writes not yet searchable; nil when the backend has no
	// asynchronous index.
	IndexLag *int64 `json:"index_lag"`
	// ManifestValid is false when the adapter's own evidence invalidates its manifest.
	ManifestValid bool `json:"manifest_valid"`
	// Reason says why the manifest is invalid; empty when valid.
	Reason string `json:"reason,omitempty"`
	// ObservedAt is when the evidence was gathered.
	ObservedAt time.Time `json:"observed_at"`
	// Usage lists each served scope's usage and quotas; absent when the server counts
	// none (no quota and a backend that cannot count).
	Usage []ScopeUsage `json:"usage,omitempty"`
}
