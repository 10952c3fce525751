package v1alpha1

// ItemField names one of the five MemoryItem fields, spelled as the seed
// spells them.
// +kubebuilder:validation:Enum=id;created_at;metadata;content;tags
// +kubebuilder:validation:MaxLength=10
type ItemField string

// The five MemoryItem fields, as the seed spells them.
const (
	// ItemFieldID is the item's client-chosen UUID.
	ItemFieldID ItemField = "id"
	// ItemFieldCreatedAt is the item's creation time: a double of Unix seconds, kept bit for bit where native.
	ItemFieldCreatedAt ItemField = "created_at"
	// ItemFieldMetadata is the item's metadata mapping.
	ItemFieldMetadata ItemField = "metadata"
	// ItemFieldContent is the item's JSON content.
	ItemFieldContent ItemField = "content"
	// ItemFieldTags is the item's ordered tag list.
	ItemFieldTags ItemField = "tags"
)

// Fidelity is how exactly an operation reconstructs stored items.
// +kubebuilder:validation:Enum=full;native_fields;lossy
// +kubebuilder:validation:MaxLength=13
type Fidelity string

// Fidelity values, as the seed spells them.
const (
	// FidelityFull means every field is represented and round-trips without
	// adapter-defined loss.
	FidelityFull Fidelity = "full"
	// FidelityNativeFields means every native field round-trips and dropped
	// fields are defaulted.
	FidelityNativeFields Fidelity = "native_fields"
	// FidelityLossy means at least one accepted field is transformed, with
	// named fixtures.
	FidelityLossy Fidelity = "lossy"
)

// SearchConsistency says whether a stored item must be searchable at once.
// +kubebuilder:validation:Enum=immediate;eventual
// +kubebuilder:validation:MaxLength=9
type SearchConsistency string

// SearchConsistency values, as the seed spells them.
const (
	// ConsistencyImmediate means a successful store is searchable at once.
	ConsistencyImmediate SearchConsistency = "immediate"
	// ConsistencyEventual means a stored item may be missing from search until
	// the index converges.
	ConsistencyEventual SearchConsistency = "eventual"
)

// FilterKey is one metadata key an adapter accepts in a query's filters.
// The byte bound matches api/memory's validation, which measures keys in
// bytes, while maxLength counts characters.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=256
// +kubebuilder:validation:XValidation:rule="bytes(self).size() <= 256",message="must be at most 256 bytes when encoded as UTF-8"
type FilterKey string

// ManifestSpec is the adapter's immutable fidelity manifest (lionagi
// ADR-0093 D1): what the adapter stores, drops, filters on and how
// faithfully it reads items back. The operator verifies every claim with
// the live conformance matrix before it marks the adapter Available.
//
// The six coherence rules below are the seed's, in the seed's order, with
// the seed's messages. Each rule is guarded by the rules before it, so
// that exactly one message, the first failing rule's, is reported; that is
// also the one error Manifest.Validate returns in Go. Rule 2 is the seed's
// set equality (native | dropped == all five fields); the sets library
// reads each list once, which keeps the rules cheap for the API server's
// cost budget.
// +kubebuilder:validation:XValidation:rule="!has(self.droppedItemFields) || !sets.intersects(self.nativeItemFields, self.droppedItemFields)",message="native and dropped item fields must be disjoint"
// +kubebuilder:validation:XValidation:rule="!((!has(self.droppedItemFields) || !sets.intersects(self.nativeItemFields, self.droppedItemFields))) || (sets.equivalent(has(self.droppedItemFields) ? self.nativeItemFields + self.droppedItemFields : self.nativeItemFields, ['id', 'created_at', 'metadata', 'content', 'tags']))",message="every MemoryItem field must be classified"
// +kubebuilder:validation:XValidation:rule="!((!has(self.droppedItemFields) || !sets.intersects(self.nativeItemFields, self.droppedItemFields)) && (sets.equivalent(has(self.droppedItemFields) ? self.nativeItemFields + self.droppedItemFields : self.nativeItemFields, ['id', 'created_at', 'metadata', 'content', 'tags']))) || (sets.contains(self.nativeItemFields, ['id', 'content', 'tags']))",message="id, content, and tags are required native fields"
// +kubebuilder:validation:XValidation:rule="!((!has(self.droppedItemFields) || !sets.intersects(self.nativeItemFields, self.droppedItemFields)) && (sets.equivalent(has(self.droppedItemFields) ? self.nativeItemFields + self.droppedItemFields : self.nativeItemFields, ['id', 'created_at', 'metadata', 'content', 'tags'])) && (sets.contains(self.nativeItemFields, ['id', 'content', 'tags']))) || (!self.preservesMetadata || 'metadata' in self.nativeItemFields)",message="preserved metadata must be a native field"
// +kubebuilder:validation:XValidation:rule="!((!has(self.droppedItemFields) || !sets.intersects(self.nativeItemFields, self.droppedItemFields)) && (sets.equivalent(has(self.droppedItemFields) ? self.nativeItemFields + self.droppedItemFields : self.nativeItemFields, ['id', 'created_at', 'metadata', 'content', 'tags'])) && (sets.contains(self.nativeItemFields, ['id', 'content', 'tags'])) && (!self.preservesMetadata || 'metadata' in self.nativeItemFields)) || (self.retrieveFidelity != 'full' || ((!has(self.droppedItemFields) || size(self.droppedItemFields) == 0) && self.preservesMetadata))",message="full retrieve fidelity must preserve every item field"
// +kubebuilder:validation:XValidation:rule="!((!has(self.droppedItemFields) || !sets.intersects(self.nativeItemFields, self.droppedItemFields)) && (sets.equivalent(has(self.droppedItemFields) ? self.nativeItemFields + self.droppedItemFields : self.nativeItemFields, ['id', 'created_at', 'metadata', 'content', 'tags'])) && (sets.contains(self.nativeItemFields, ['id', 'content', 'tags'])) && (!self.preservesMetadata || 'metadata' in self.nativeItemFields) && (self.retrieveFidelity != 'full' || ((!has(self.droppedItemFields) || size(self.droppedItemFields) == 0) && self.preservesMetadata))) || (self.searchFidelity != 'full' || ((!has(self.droppedItemFields) || size(self.droppedItemFields) == 0) && self.searchReturnsTags && self.preservesMetadata))",message="full search fidelity must preserve all fields and tags"
type ManifestSpec struct {
	// adapter is the stable implementation id used in diagnostics and
	// conformance reports, for example "sqlite" or "acme-vector-store".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="bytes(self).size() <= 253",message="must be at most 253 bytes when encoded as UTF-8"
	Adapter string `json:"adapter"`

	// nativeItemFields are the MemoryItem fields the service stores natively
	// and that direct retrieval can be tested on. A set of id, created_at,
	// metadata, content and tags; id, content and tags must always be native.
	// +required
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	NativeItemFields []ItemField `json:"nativeItemFields"`

	// droppedItemFields are the MemoryItem fields the adapter does not
	// persist; each must be documented by the adapter. Together with
	// nativeItemFields every one of the five fields must be classified exactly
	// once. Omitted means none.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	DroppedItemFields []ItemField `json:"droppedItemFields,omitempty"`

	// supportedFilters is the exact set of metadata keys the adapter accepts
	// in a query's filters. A query naming any other key is rejected with
	// UnsupportedMemoryQuery, never broadened. Omitted means no filter key is
	// supported.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	SupportedFilters []FilterKey `json:"supportedFilters,omitempty"`

	// searchConsistency says whether a stored item must be searchable at once
	// ("immediate") or only after the search index converges ("eventual").
	// Direct retrieval is immediate either way.
	// +required
	SearchConsistency SearchConsistency `json:"searchConsistency"`

	// retrieveFidelity is how exactly direct retrieval by id reconstructs a
	// stored item: "full", "native_fields" or "lossy".
	// +required
	RetrieveFidelity Fidelity `json:"retrieveFidelity"`

	// searchFidelity is how exactly search hits reconstruct stored items:
	// "full", "native_fields" or "lossy".
	// +required
	SearchFidelity Fidelity `json:"searchFidelity"`

	// searchReturnsTags says whether search hits carry the stored tags.
	// +required
	SearchReturnsTags bool `json:"searchReturnsTags"`

	// preservesMetadata says whether the metadata mapping round-trips exactly;
	// it requires metadata to be a native field.
	// +required
	PreservesMetadata bool `json:"preservesMetadata"`
}
