package v1alpha1

// DuplicateIDBehaviour is what a backend does when an item is stored under
// an id it already holds.
// +kubebuilder:validation:Enum=Overwrite;Reject;Duplicate
type DuplicateIDBehaviour string

// The duplicate-id behaviours an adapter can document (ADR-0093 D4).
const (
	// DuplicateIDOverwrite replaces the stored item; repeating a write is
	// idempotent.
	DuplicateIDOverwrite DuplicateIDBehaviour = "Overwrite"
	// DuplicateIDReject fails the second write with MemoryAdapterError and
	// keeps the first.
	DuplicateIDReject DuplicateIDBehaviour = "Reject"
	// DuplicateIDDuplicate keeps both records; a retried write may duplicate
	// state.
	DuplicateIDDuplicate DuplicateIDBehaviour = "Duplicate"
)

// ConnectionCreation is when an adapter opens its connections to the
// backend.
// +kubebuilder:validation:Enum=Constructor;FirstCall
type ConnectionCreation string

// The connection-creation points an adapter can document (ADR-0093 D4).
const (
	// ConnectionAtConstructor opens connections when the adapter starts; a
	// failure stops startup.
	ConnectionAtConstructor ConnectionCreation = "Constructor"
	// ConnectionAtFirstCall opens connections lazily; a failure surfaces as
	// MemoryAdapterUnavailable.
	ConnectionAtFirstCall ConnectionCreation = "FirstCall"
)

// JitterMode is how random spread is added to a retry backoff.
// +kubebuilder:validation:Enum=None;Full;Equal
type JitterMode string

// The jitter modes a retry policy can use.
const (
	// JitterNone waits exactly the backoff.
	JitterNone JitterMode = "None"
	// JitterFull waits a uniform random time between zero and the backoff.
	JitterFull JitterMode = "Full"
	// JitterEqual waits half the backoff plus a uniform random time up to the
	// other half.
	JitterEqual JitterMode = "Equal"
)

// LifecycleSpec records the seed's D4 companion facts as data: the
// timeouts, retry policy, concurrency safety and duplicate-id behaviour
// the adapter runs with. Every field is optional; the controller fills an
// omitted field from the backend adapter's documented default, so the
// effective values are always explicit and never a universal library
// default.
// +kubebuilder:validation:XValidation:rule="!has(self.retry) || !has(self.retry.store) || !has(self.retry.store.maxAttempts) || self.retry.store.maxAttempts == 1 || (has(self.duplicateIdBehaviour) && self.duplicateIdBehaviour == 'Overwrite')",message="retry.store.maxAttempts above 1 requires duplicateIdBehaviour 'Overwrite': a retried write must not duplicate or reject its own first attempt"
type LifecycleSpec struct {
	// requestTimeout bounds one backend operation (store, retrieve or search),
	// from 1ms to 10m, as a Go duration such as "5s".
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1ms') && duration(self) <= duration('10m')",message="must be between 1ms and 10m"
	RequestTimeout *Duration `json:"requestTimeout,omitempty"`

	// connectTimeout bounds opening one connection to the backend, from 1ms to
	// 5m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1ms') && duration(self) <= duration('5m')",message="must be between 1ms and 5m"
	ConnectTimeout *Duration `json:"connectTimeout,omitempty"`

	// connectionCreation says when the adapter opens its connections:
	// Constructor (at start) or FirstCall (lazily, failing the call with
	// MemoryAdapterUnavailable).
	// +optional
	ConnectionCreation ConnectionCreation `json:"connectionCreation,omitempty"`

	// retry is the retry policy per operation. Writes are retried only when
	// the backend makes repeated writes of one id idempotent
	// (duplicateIdBehaviour Overwrite).
	// +optional
	Retry *RetryPolicies `json:"retry,omitempty"`

	// concurrencySafe says whether one adapter instance serves concurrent
	// calls safely.
	// +optional
	ConcurrencySafe *bool `json:"concurrencySafe,omitempty"`

	// duplicateIdBehaviour is what the backend does when an item is stored
	// under an id it already holds: Overwrite, Reject or Duplicate.
	// +optional
	DuplicateIDBehaviour DuplicateIDBehaviour `json:"duplicateIdBehaviour,omitempty"`

	// failover says which acknowledged writes a failover of the backend's
	// servers can lose when the connection configures no promise against
	// it, and the setting that keeps them; empty for a backend of one
	// server. It describes the adapter; for a built-in backend it may only
	// repeat what that backend states.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Failover string `json:"failover,omitempty"`
}

// RetryPolicies holds one retry policy per memory operation, because a
// retried write may duplicate state while a retried read is harmless.
type RetryPolicies struct {
	// store is the retry policy of store (write) calls.
	// +optional
	Store *RetryPolicy `json:"store,omitempty"`

	// retrieve is the retry policy of retrieve (identity read) calls.
	// +optional
	Retrieve *RetryPolicy `json:"retrieve,omitempty"`

	// search is the retry policy of search calls.
	// +optional
	Search *RetryPolicy `json:"search,omitempty"`
}

// RetryPolicy is how often and how patiently one operation is retried.
// +kubebuilder:validation:XValidation:rule="!has(self.backoff) || !has(self.maxBackoff) || duration(self.backoff) <= duration(self.maxBackoff)",message="backoff must not exceed maxBackoff"
type RetryPolicy struct {
	// maxAttempts is the total number of attempts, including the first; 1
	// means no retry.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	MaxAttempts *int32 `json:"maxAttempts,omitempty"`

	// backoff is the wait before the first retry, doubled on each later one,
	// from 1ms to 1m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1ms') && duration(self) <= duration('1m')",message="must be between 1ms and 1m"
	Backoff *Duration `json:"backoff,omitempty"`

	// maxBackoff caps the doubled backoff, from 1ms to 5m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1ms') && duration(self) <= duration('5m')",message="must be between 1ms and 5m"
	MaxBackoff *Duration `json:"maxBackoff,omitempty"`

	// jitter is how random spread is added to each wait: None, Full or Equal.
	// +optional
	Jitter JitterMode `json:"jitter,omitempty"`
}
