package v1alpha1

// RetentionSpec is how long the adapter keeps items. The adapter enforces it on every
// backend, by the time it stored each item (never the client's created_at), in the scope and
// in each sub-scope of spec.access on its own.
// +kubebuilder:validation:XValidation:rule="has(self.maxAge) || has(self.maxItems)",message="retention needs maxAge or maxItems"
type RetentionSpec struct {
	// maxAge removes an item once it was stored at least this long ago: never before, and
	// at the latest one sweepPeriod after. From 1m to 87600h (ten years).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('87600h')",message="must be between 1m and 87600h"
	MaxAge *Duration `json:"maxAge,omitempty"`

	// maxItems keeps the newest maxItems items by store time and removes the rest at each
	// sweep.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	MaxItems *int64 `json:"maxItems,omitempty"`

	// sweepPeriod is how often the adapter sweeps; 1m when omitted. From 10s to 1h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('1h')",message="must be between 10s and 1h"
	SweepPeriod *Duration `json:"sweepPeriod,omitempty"`
}

// QuotaSpec bounds what the adapter's writers may store, per scope (and per sub-scope of
// spec.access). A store past a limit is refused with a typed problem and stores nothing;
// nothing acknowledged is ever removed to make room.
// +kubebuilder:validation:XValidation:rule="has(self.maxItems) || has(self.maxBytes) || has(self.writesPerSecond)",message="quota needs maxItems, maxBytes or writesPerSecond"
// +kubebuilder:validation:XValidation:rule="!has(self.writeBurst) || has(self.writesPerSecond)",message="writeBurst needs writesPerSecond"
type QuotaSpec struct {
	// maxItems refuses a store that would take the scope over this many items (507
	// quota_exceeded).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	MaxItems *int64 `json:"maxItems,omitempty"`

	// maxBytes refuses a store that would take the scope's items (content, metadata and
	// tags) over this many bytes (507 quota_exceeded).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1099511627776
	MaxBytes *int64 `json:"maxBytes,omitempty"`

	// writesPerSecond refuses stores past this rate (429 rate_limited with Retry-After).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	WritesPerSecond *int32 `json:"writesPerSecond,omitempty"`

	// writeBurst is how many stores are admitted at once after a quiet spell; one second's
	// worth of writesPerSecond when omitted.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	WriteBurst *int32 `json:"writeBurst,omitempty"`
}
