package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MemoryAdapterSpec is the desired state of a MemoryAdapter: the contract
// it publishes and the backend, lifecycle and checks it runs with.
// +kubebuilder:validation:XValidation:rule="(self.backend.type != 'SQLite' && self.backend.type != 'Khive') || !has(self.replicas) || self.replicas <= 1",message="replicas must be at most 1 when backend.type is 'SQLite' or 'Khive': one database file has one writer"
// +kubebuilder:validation:XValidation:rule="self.backend.type != 'Khive' || has(self.image)",message="image is required when backend.type is 'Khive': the operator's adapter image has no kkernel, so name an image holding memory-adapter and kkernel"
// +kubebuilder:validation:XValidation:rule="self.backend.type != 'External' || has(self.image)",message="image is required when backend.type is 'External': name the image of the server you bring"
// +kubebuilder:validation:XValidation:rule="self.backend.type != 'External' || !has(self.access)",message="access is not supported when backend.type is 'External': the operator cannot make a server it does not build enforce per-ServiceAccount rights"
// +kubebuilder:validation:XValidation:rule="!(self.backend.type in ['External', 'Khive']) || (!has(self.retention) && !has(self.quota))",message="retention and quota are not supported when backend.type is 'External' or 'Khive': the adapter cannot enforce them there"
// +kubebuilder:validation:XValidation:rule="self.backend.type != 'External' || !has(self.deletionPolicy) || self.deletionPolicy != 'Delete'",message="deletionPolicy Delete is not supported when backend.type is 'External': the operator cannot remove a foreign server's items"
type MemoryAdapterSpec struct {
	// manifest is the fidelity manifest the adapter publishes (lionagi
	// ADR-0093 D1). The API server enforces the seed's six coherence rules,
	// and the manifest is immutable: the seed makes it stable for an adapter
	// instance's lifetime, so a new contract is a new MemoryAdapter.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="manifest is immutable: create a new MemoryAdapter to publish a different contract"
	Manifest ManifestSpec `json:"manifest"`

	// backend says which storage service holds the items and how to reach it.
	// +required
	Backend BackendSpec `json:"backend"`

	// lifecycle records the adapter's timeouts, retry policy, concurrency
	// safety and duplicate-id behaviour (ADR-0093 D4). Omitted fields take the
	// backend adapter's documented defaults, filled in by the controller.
	// +optional
	Lifecycle *LifecycleSpec `json:"lifecycle,omitempty"`

	// replicas is the number of adapter pods. Defaults to 1; at most 1 for
	// SQLite.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	Replicas *int32 `json:"replicas,omitempty"`

	// image is the container image of the adapter and of its conformance Job
	// (one image serves both). Defaults to the operator's --adapter-image
	// flag. For an External backend it is the user's server image, which
	// runs in production and, in harness mode, beside the operator's
	// conformance container in each run.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	Image *string `json:"image,omitempty"`

	// conformance controls the live conformance runs that verify the manifest.
	// +optional
	Conformance *ConformanceSpec `json:"conformance,omitempty"`

	// health controls how the operator watches the adapter's health evidence.
	// +optional
	Health *HealthSpec `json:"health,omitempty"`

	// deletionPolicy says what happens to the adapter's items when the
	// MemoryAdapter is deleted: Retain (the default) keeps them (the SQLite
	// volume is left unowned, the backend scope untouched); Delete removes
	// the SQLite volume with the adapter, and for Postgres and Redis deletes
	// every item of backend.scope through a purge Job before the
	// MemoryAdapter goes (the memory.agentmem.io/purge-scope finalizer holds
	// it until the purge succeeded). Conformance runs' disposable scopes are
	// always removed.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// tls says how the adapter's endpoint is secured. Without it the adapter
	// serves HTTPS with a certificate the operator issues for its Service
	// names from the operator's own CA, and the binding Secret carries that
	// CA as ca.crt (mode Operator); mode Disabled serves plain HTTP, so the
	// bearer token crosses the network in clear, and status.tls says so.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// token controls the adapter's bearer token: changing token.rotation
	// rotates it, with a grace period for the old one (docs/operator.md,
	// Rotating the token).
	// +optional
	Token *TokenSpec `json:"token,omitempty"`

	// template sets what a platform team decides about the adapter's pods: labels and
	// annotations, resources, node selection, tolerations, affinity, spread, priority, pull
	// Secrets and runtime class. The conformance and purge Jobs take its metadata and its
	// scheduling fields too. Nothing else of the pods can be set: the operator keeps them
	// hardened.
	// +optional
	Template *AdapterPodTemplate `json:"template,omitempty"`

	// tracing turns on OpenTelemetry tracing of the adapter's calls, exported
	// with OTLP over HTTP to tracing.endpoint. Omitted, the adapter traces nothing.
	// +optional
	Tracing *AdapterTracing `json:"tracing,omitempty"`

	// access gives each listed ServiceAccount of the bound workloads its own token, with
	// ReadWrite or ReadOnly rights and optionally an isolated sub-scope (docs/operator.md,
	// Access per ServiceAccount). Omitted, every bound workload shares the adapter's token:
	// read and write access to the whole scope.
	// +optional
	Access *AccessSpec `json:"access,omitempty"`

	// retention removes items by age or count, enforced by the adapter (docs/server.md,
	// Retention and quotas). Omitted, items are kept until deleted with the scope.
	// +optional
	Retention *RetentionSpec `json:"retention,omitempty"`

	// quota bounds the items, bytes and write rate of each scope and sub-scope, enforced by
	// the adapter with typed refusals. Omitted, nothing is bounded but the wire's limits.
	// +optional
	Quota *QuotaSpec `json:"quota,omitempty"`
}

// TokenSpec controls the adapter's bearer token. The token is derived from
// the adapter's identity and rotation under the operator's key, so it is
// never stored anywhere the operator reads.
type TokenSpec struct {
	// rotation names the token's generation; set it to a new value (a date,
	// a counter) to rotate the token. The operator first makes every adapter
	// pod accept the new token, then switches the binding Secret's token to
	// it, and keeps accepting the old one for gracePeriodSeconds so that
	// bound pods pick up the new Secret before the old token stops working.
	// Omitted (or removed), the token stays the current one: the one the
	// adapter was created with, or the last rotation's.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`
	Rotation string `json:"rotation,omitempty"`

	// gracePeriodSeconds is how long the adapter still accepts the previous
	// token after the binding switched to the new one: long enough for the
	// kubelet to deliver the new Secret to bound pods (its sync period, about
	// a minute by default) and for them to re-read it. 0 refuses the old
	// token as soon as the switch reaches the adapter, for a token known to
	// be compromised. Defaults to 600.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`
}

// TokenStatus is where the adapter's token rotation stands.
type TokenStatus struct {
	// rotation is the spec.token.rotation the binding Secret's token is
	// derived from; empty for the token the adapter was created with.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Rotation string `json:"rotation,omitempty"`

	// pendingRotation is a rotation the adapter pods are being given: the
	// binding switches to its token once every pod accepts it. A server that
	// does not re-read its token file keeps a rotation pending until its
	// pods restart.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	PendingRotation string `json:"pendingRotation,omitempty"`

	// previousRotation is the rotation whose token the adapter still accepts
	// until previousExpiresAt ("" with previousExpiresAt set is the token the
	// adapter was created with).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	PreviousRotation string `json:"previousRotation,omitempty"`

	// previousExpiresAt is when the previous token stops being accepted;
	// unset when no previous token is.
	// +optional
	PreviousExpiresAt *metav1.Time `json:"previousExpiresAt,omitempty"`

	// rotatedAt is when the binding Secret last switched to a new token.
	// +optional
	RotatedAt *metav1.Time `json:"rotatedAt,omitempty"`
}

// TLSSpec says how an adapter's endpoint is secured.
// +kubebuilder:validation:XValidation:rule="!has(self.certificateLifetime) || !has(self.mode) || self.mode == 'Operator'",message="certificateLifetime applies only to mode Operator: mode Disabled serves no certificate"
type TLSSpec struct {
	// mode is Operator (the default: HTTPS with an operator-issued
	// certificate) or Disabled (plain HTTP).
	// +optional
	// +kubebuilder:default=Operator
	Mode TLSMode `json:"mode,omitempty"`

	// certificateLifetime is how long each serving certificate the operator
	// issues for this adapter is valid, from 1m to 8760h (a year), as a Go
	// duration such as "720h"; the operator renews it after two thirds of
	// that. Omitted, the manager's --adapter-cert-lifetime applies (90 days
	// unless set). A lifetime shorter than what the current certificate has
	// left takes effect at once, with a new certificate; a longer one at the
	// next renewal. Under an hour, the kubelet's Secret sync (about a minute)
	// takes a large share of the third left after a renewal.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8760h')",message="must be between 1m and 8760h"
	CertificateLifetime *Duration `json:"certificateLifetime,omitempty"`
}

// TLSMode is how an adapter's endpoint is secured.
// +kubebuilder:validation:Enum=Operator;Disabled
type TLSMode string

// The TLS modes of an adapter endpoint.
const (
	// TLSOperator serves HTTPS with a certificate the operator issues and
	// renews, verifiable with the binding's ca.crt.
	TLSOperator TLSMode = "Operator"
	// TLSDisabled serves plain HTTP: an explicit opt-out, for networks that
	// encrypt on their own (a service mesh), never the default.
	TLSDisabled TLSMode = "Disabled"
)

// TLSStatus is the endpoint's transport security as deployed.
type TLSStatus struct {
	// mode is what the adapter serves: Operator (HTTPS) or Disabled (plain
	// HTTP, the token in clear).
	// +required
	Mode TLSMode `json:"mode"`

	// notAfter is when the serving certificate expires.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`

	// renewAfter is when the operator issues the next certificate, well
	// before notAfter, so that the kubelet has long since delivered the new
	// one when the old one ends.
	// +optional
	RenewAfter *metav1.Time `json:"renewAfter,omitempty"`

	// caFingerprint is the SHA-256 of the CA certificate that signed the
	// serving certificate, in hex; the binding's ca.crt holds it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	CAFingerprint string `json:"caFingerprint,omitempty"`

	// dnsNames are the names the serving certificate is valid for.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=253
	DNSNames []string `json:"dnsNames,omitempty"`
}

// DeletionPolicy says whether deleting a MemoryAdapter deletes its items.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

// The deletion policies of a MemoryAdapter.
const (
	// DeletionRetain keeps the adapter's items when the MemoryAdapter is
	// deleted, as StatefulSet's PVC retention and Crossplane's
	// deletionPolicy do by default.
	DeletionRetain DeletionPolicy = "Retain"
	// DeletionDelete removes the adapter's items with the MemoryAdapter.
	DeletionDelete DeletionPolicy = "Delete"
)

// ConformanceSpec controls the live conformance runs. A run also starts
// whenever the manifest hash, the service version or the adapter version
// changes, and on demand through the memory.agentmem.io/rerun-conformance
// annotation.
type ConformanceSpec struct {
	// interval re-runs the matrix this long after the last run, from 1m to
	// 720h (30 days), as a Go duration such as "24h". Defaults to 24h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="must be between 1m and 720h"
	Interval *Duration `json:"interval,omitempty"`

	// timeout fails a run that has not finished after this long, from 10s to
	// 1h. Defaults to 10m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('1h')",message="must be between 10s and 1h"
	Timeout *Duration `json:"timeout,omitempty"`
}

// HealthSpec controls how the operator reads the adapter's evidence
// endpoint.
// +kubebuilder:validation:XValidation:rule="!has(self.period) || !has(self.stalenessGrace) || duration(self.stalenessGrace) >= duration(self.period)",message="stalenessGrace must not be shorter than period"
type HealthSpec struct {
	// period is how often the evidence endpoint is read, from 1s to 1h.
	// Defaults to 30s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="must be between 1s and 1h"
	Period *Duration `json:"period,omitempty"`

	// failureThreshold is how many consecutive failed reads mark the adapter
	// unhealthy. Defaults to 3.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`

	// stalenessGrace is how old the last evidence may grow before Healthy
	// turns Unknown, from 1s to 24h, and not shorter than period. Defaults to
	// three periods.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="must be between 1s and 24h"
	StalenessGrace *Duration `json:"stalenessGrace,omitempty"`
}

// MemoryAdapterStatus is the observed state of a MemoryAdapter.
type MemoryAdapterStatus struct {
	// conditions are ManifestValid, Deployed, Conformant, Healthy and the
	// summary Available, which is True only when all the others are.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the metadata.generation the status describes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// serviceVersion is the backend service version the adapter reports, for
	// example "16.4" for PostgreSQL.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ServiceVersion string `json:"serviceVersion,omitempty"`

	// adapterVersion is the version of the adapter build that serves the
	// manifest.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	AdapterVersion string `json:"adapterVersion,omitempty"`

	// manifestHash is the hash of spec.manifest ("sha256:" and 64 hex digits),
	// the key of conformance runs.
	// +optional
	// +kubebuilder:validation:MaxLength=71
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	ManifestHash string `json:"manifestHash,omitempty"`

	// conformance is the result of the latest finished conformance run.
	// +optional
	// +structType=atomic
	Conformance *ConformanceResult `json:"conformance,omitempty"`

	// evidence is the last health evidence read from the adapter.
	// +optional
	// +structType=atomic
	Evidence *EvidenceStatus `json:"evidence,omitempty"`

	// lifecycle is the effective lifecycle the adapter runs with: spec.lifecycle
	// with every omitted field filled from the backend adapter's documented
	// default.
	// +optional
	// +structType=atomic
	Lifecycle *LifecycleSpec `json:"lifecycle,omitempty"`

	// binding names the Secret a workload uses to reach the adapter (Service
	// Binding's Provisioned Service duck type): keys type, provider, url and
	// token, and ca.crt when the adapter serves TLS.
	// +optional
	// +structType=atomic
	Binding *BindingReference `json:"binding,omitempty"`

	// tls is the endpoint's transport security as deployed: HTTPS with the
	// serving certificate's expiry and renewal, or plain HTTP by opt-out.
	// +optional
	// +structType=atomic
	TLS *TLSStatus `json:"tls,omitempty"`

	// token is where the adapter's token rotation stands.
	// +optional
	// +structType=atomic
	Token *TokenStatus `json:"token,omitempty"`

	// access is where spec.access stands on the adapter's pods; absent without spec.access.
	// +optional
	// +structType=atomic
	Access *AccessStatus `json:"access,omitempty"`

	// workloads counts the pods bound to this adapter through the
	// memory.agentmem.io/adapter label and requires annotation
	// (docs/gating.md): those still gated and those released.
	// +optional
	Workloads *WorkloadCounts `json:"workloads,omitempty"`
}

// WorkloadCounts counts the pods the admission webhook bound to an adapter.
type WorkloadCounts struct {
	// gated counts pods still held by the memory.agentmem.io/adapter-ready
	// scheduling gate.
	// +required
	// +kubebuilder:validation:Minimum=0
	Gated int32 `json:"gated"`

	// released counts pods whose gate the operator removed and that still
	// exist (finished pods included, until they are deleted).
	// +required
	// +kubebuilder:validation:Minimum=0
	Released int32 `json:"released"`
}

// BindingReference names the binding Secret of a provisioned service.
type BindingReference struct {
	// name is the Secret's name, in the MemoryAdapter's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ConformanceCaseID, its constants and AllConformanceCaseIDs are generated from the
// conformance registry into zz_generated.caseids.go (hack/gen-caseids).

// ConformanceOutcome is the verdict of one conformance case.
// +kubebuilder:validation:Enum=Passed;Failed;NotApplicable
type ConformanceOutcome string

// The outcomes of a conformance case.
const (
	// OutcomePassed means the case observed what the manifest claims.
	OutcomePassed ConformanceOutcome = "Passed"
	// OutcomeFailed means the case observed something the manifest does not
	// allow.
	OutcomeFailed ConformanceOutcome = "Failed"
	// OutcomeNotApplicable means the manifest or harness makes the case moot
	// (for example wrong-native-kind on a backend with one record kind).
	OutcomeNotApplicable ConformanceOutcome = "NotApplicable"
)

// ConformanceResult is one finished run of the conformance matrix.
type ConformanceResult struct {
	// jobName is the batch/v1 Job that ran the matrix.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	JobName string `json:"jobName"`

	// manifestHash is the hash of the manifest the run verified.
	// +required
	// +kubebuilder:validation:MaxLength=71
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	ManifestHash string `json:"manifestHash"`

	// serviceVersion is the backend service version the run tested.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ServiceVersion string `json:"serviceVersion,omitempty"`

	// adapterVersion is the adapter build the run tested.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	AdapterVersion string `json:"adapterVersion,omitempty"`

	// rerunToken is the value of the memory.agentmem.io/rerun-conformance
	// annotation the run answered; a new value asks for a new run.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	RerunToken string `json:"rerunToken,omitempty"`

	// completionTime is when the run finished.
	// +required
	CompletionTime metav1.Time `json:"completionTime"`

	// passed counts the cases that passed.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	Passed int32 `json:"passed"`

	// failed counts the cases that failed.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	Failed int32 `json:"failed"`

	// notApplicable counts the cases that did not apply.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	NotApplicable int32 `json:"notApplicable"`

	// message is the run-level failure: a check of the deployed adapter that
	// failed, or why the Job ended without a readable report. Empty when the
	// run itself raised nothing.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// cases holds one entry per matrix case id.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=32
	Cases []ConformanceCaseResult `json:"cases,omitempty"`

	// profiles holds one entry per governance profile of the run (read-only,
	// isolation, retention, quota): each checks one claim of the published
	// manifest's governance/v1 extension, and is NotApplicable unless the
	// manifest makes that claim.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=8
	Profiles []ConformanceProfileResult `json:"profiles,omitempty"`
}

// ScopeQuotaUsage is one scope's use of its quota.
type ScopeQuotaUsage struct {
	// scope is the scope's name; a sub-scope's is SCOPE~NAME.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Scope string `json:"scope"`

	// itemsPercent is the scope's items in whole percent of spec.quota.maxItems;
	// absent without that limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	ItemsPercent *int32 `json:"itemsPercent,omitempty"`

	// bytesPercent is the scope's bytes in whole percent of spec.quota.maxBytes;
	// absent without that limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	BytesPercent *int32 `json:"bytesPercent,omitempty"`
}

// ConformanceProfileID is the id of one governance profile of the conformance
// suite (conformance.ProfileIDs).
// +kubebuilder:validation:Enum=read-only;isolation;retention;quota
type ConformanceProfileID string

// The governance profiles, in the suite's order.
const (
	// ProfileReadOnly checks the governance/v1 read_only claim.
	ProfileReadOnly ConformanceProfileID = "read-only"
	// ProfileIsolation checks the governance/v1 isolation claim.
	ProfileIsolation ConformanceProfileID = "isolation"
	// ProfileRetention checks the governance/v1 retention claim.
	ProfileRetention ConformanceProfileID = "retention"
	// ProfileQuota checks the governance/v1 quota claim.
	ProfileQuota ConformanceProfileID = "quota"
)

// AllConformanceProfileIDs lists the governance profiles in the suite's order.
var AllConformanceProfileIDs = []ConformanceProfileID{ProfileReadOnly, ProfileIsolation, ProfileRetention, ProfileQuota}

// ConformanceProfileResult is the outcome of one governance profile.
type ConformanceProfileResult struct {
	// id is the profile's id, for example "isolation".
	// +required
	ID ConformanceProfileID `json:"id"`

	// outcome is Passed, Failed or NotApplicable.
	// +required
	Outcome ConformanceOutcome `json:"outcome"`

	// message says briefly what was observed, or why the profile did not apply.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// ConformanceCaseResult is the outcome of one conformance case.
type ConformanceCaseResult struct {
	// id is the case's stable id, for example "unsupported-filter".
	// +required
	// +kubebuilder:validation:MaxLength=32
	ID ConformanceCaseID `json:"id"`

	// outcome is Passed, Failed or NotApplicable.
	// +required
	Outcome ConformanceOutcome `json:"outcome"`

	// message says briefly what was observed; it is set for every Failed case.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// EvidenceVerdict is the adapter's own judgement of whether its evidence
// upholds its manifest.
// +kubebuilder:validation:Enum=Valid;Invalid
type EvidenceVerdict string

// The verdicts an evidence report can carry.
const (
	// EvidenceValid means every probe upholds the manifest.
	EvidenceValid EvidenceVerdict = "Valid"
	// EvidenceInvalid means some evidence invalidates the manifest; the
	// adapter refuses calls.
	EvidenceInvalid EvidenceVerdict = "Invalid"
)

// EvidenceStatus is the last health evidence read from the adapter's
// evidence endpoint.
type EvidenceStatus struct {
	// observedTime is when the operator first read evidence with this
	// content; reads that find the same evidence do not move it, so a steady
	// adapter causes no status writes.
	// +required
	ObservedTime metav1.Time `json:"observedTime"`

	// verdict is Valid when the evidence upholds the manifest, Invalid
	// otherwise.
	// +required
	Verdict EvidenceVerdict `json:"verdict"`

	// serviceVersion is the backend service version the adapter reported.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ServiceVersion string `json:"serviceVersion,omitempty"`

	// adapterVersion is the adapter build that reported.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	AdapterVersion string `json:"adapterVersion,omitempty"`

	// manifestHash is the hash of the manifest the adapter serves.
	// +optional
	// +kubebuilder:validation:MaxLength=71
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	ManifestHash string `json:"manifestHash,omitempty"`

	// indexLag counts acknowledged writes not yet visible to search, as the
	// adapter's evidence reports it (index_lag on the wire); omitted when the
	// backend has no asynchronous index.
	// +optional
	// +kubebuilder:validation:Minimum=0
	IndexLag *int64 `json:"indexLag,omitempty"`

	// failedProbes names the capability probes that failed, sorted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=64
	FailedProbes []string `json:"failedProbes,omitempty"`

	// message explains an Invalid verdict in one sentence.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// quotaUsage is each governed scope's use of its spec.quota limits, in whole
	// percent (a scope at its limit shows 100), as the adapter counts them: its
	// scope and the sub-scopes spec.access names, the fullest 16. Percent rather
	// than counts, so that a busy adapter's status changes at most a hundred
	// times on its way to full; the exact counts are the adapter's metrics.
	// +optional
	// +listType=map
	// +listMapKey=scope
	// +kubebuilder:validation:MaxItems=16
	QuotaUsage []ScopeQuotaUsage `json:"quotaUsage,omitempty"`
}

// MemoryAdapter deploys a memory adapter for one backend, verifies its
// published fidelity manifest with the live conformance matrix, and
// reports whether agent workloads may rely on it. spec.manifest is the
// contract; status.conditions say whether it currently holds.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=madp,categories=agentmem
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS label of at most 40 characters starting with a letter: it names the adapter's Service and its conformance Jobs"
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backend.type`
// +kubebuilder:printcolumn:name="Consistency",type=string,JSONPath=`.spec.manifest.searchConsistency`
// +kubebuilder:printcolumn:name="Conformant",type=string,JSONPath=`.status.conditions[?(@.type=="Conformant")].status`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].reason`
// +kubebuilder:printcolumn:name="Service Version",type=string,JSONPath=`.status.serviceVersion`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Available")].message`
type MemoryAdapter struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is the desired state: the manifest and where and how the adapter
	// runs.
	// +required
	Spec MemoryAdapterSpec `json:"spec"`

	// status is the observed state, written by the operator.
	// +optional
	Status MemoryAdapterStatus `json:"status,omitzero"`
}

// MemoryAdapterList is a list of MemoryAdapters.
// +kubebuilder:object:root=true
type MemoryAdapterList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// items are the MemoryAdapters.
	Items []MemoryAdapter `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MemoryAdapter{}, &MemoryAdapterList{})
}
