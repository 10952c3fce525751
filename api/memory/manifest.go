package memory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ItemField names one of the five Item fields, spelled as the seed spells them.
type ItemField string

// The five Item fields. Every manifest classifies each exactly once.
const (
	FieldID        ItemField = "id"
	FieldCreatedAt ItemField = "created_at"
	FieldMetadata  ItemField = "metadata"
	FieldContent   ItemField = "content"
	FieldTags      ItemField = "tags"
)

// AllItemFields lists the five Item fields in the seed's order.
var AllItemFields = []ItemField{FieldID, FieldCreatedAt, FieldMetadata, FieldContent, FieldTags}

// Valid reports whether f is one of the five Item fields.
func (f ItemField) Valid() bool { return slices.Contains(AllItemFields, f) }

// Fidelity is how exactly an operation reconstructs stored items.
type Fidelity string

// Fidelity values, as the seed defines them.
const (
	// FidelityFull: every field is represented and round-trips without adapter-defined loss.
	FidelityFull Fidelity = "full"
	// FidelityNativeFields: every native field round-trips; dropped fields are defaulted.
	FidelityNativeFields Fidelity = "native_fields"
	// FidelityLossy: at least one accepted field is transformed, with named fixtures.
	FidelityLossy Fidelity = "lossy"
)

// Valid reports whether f is a known fidelity.
func (f Fidelity) Valid() bool {
	return f == FidelityFull || f == FidelityNativeFields || f == FidelityLossy
}

// SearchConsistency says whether a stored item must be searchable at once.
type SearchConsistency string

// SearchConsistency values, as the seed defines them.
const (
	// ConsistencyImmediate: a successful store is searchable at once.
	ConsistencyImmediate SearchConsistency = "immediate"
	// ConsistencyEventual: a stored item may be absent from search until the index converges.
	ConsistencyEventual SearchConsistency = "eventual"
)

// Valid reports whether c is a known consistency.
func (c SearchConsistency) Valid() bool {
	return c == ConsistencyImmediate || c == ConsistencyEventual
}

// The six coherence messages of the seed's coherent_projection, in its order. The CRD's CEL
// rules use the same strings, so a user sees one message whichever side rejects.
const (
	MsgFieldsDisjoint   = "native and dropped item fields must be disjoint"
	MsgFieldsClassified = "every MemoryItem field must be classified"
	MsgRequiredNative   = "id, content, and tags are required native fields"
	MsgMetadataNative   = "preserved metadata must be a native field"
	MsgFullRetrieve     = "full retrieve fidelity must preserve every item field"
	MsgFullSearch       = "full search fidelity must preserve all fields and tags"
)

// CoherenceMessages lists the six coherence messages in rule order (rule 1 first).
var CoherenceMessages = []string{
	MsgFieldsDisjoint, MsgFieldsClassified, MsgRequiredNative,
	MsgMetadataNative, MsgFullRetrieve, MsgFullSearch,
}

// Manifest is an adapter instance's immutable fidelity manifest (ADR-0093 D1). The list
// fields are sets: order and duplicates carry no meaning, and Normalize sorts them.
type Manifest struct {
	// Adapter is a stable implementation id used in diagnostics and reports.
	Adapter string `json:"adapter"`
	// NativeItemFields are the fields the service stores natively and retrieve can test.
	NativeItemFields []ItemField `json:"native_item_fields"`
	// DroppedItemFields are the fields the adapter does not persist.
	DroppedItemFields []ItemField `json:"dropped_item_fields"`
	// SupportedFilters is the exact accepted key set of Query.Filters.
	SupportedFilters []string `json:"supported_filters"`
	// SearchConsistency says whether a stored item must be searchable at once.
	SearchConsistency SearchConsistency `json:"search_consistency"`
	// RetrieveFidelity is the fidelity of direct retrieval.
	RetrieveFidelity Fidelity `json:"retrieve_fidelity"`
	// SearchFidelity is the fidelity of search hits.
	SearchFidelity Fidelity `json:"search_fidelity"`
	// SearchReturnsTags says whether search hits carry the stored tags.
	SearchReturnsTags bool `json:"search_returns_tags"`
	// PreservesMetadata says whether metadata round-trips exactly.
	PreservesMetadata bool `json:"preserves_metadata"`
	// Extensions are the manifest's versioned extensions (governance/v1), omitted when they
	// claim nothing, so a manifest without them hashes as the base contract's.
	Extensions *Extensions `json:"extensions,omitempty"`
}

// CoherenceError is a manifest that breaks one of the seed's six coherence rules.
type CoherenceError struct {
	// Rule is the 1-based rule number in the seed's order.
	Rule int
	// Message is the seed's message for that rule.
	Message string
}

// Error implements error with the seed's exact message.
func (e *CoherenceError) Error() string { return e.Message }

// Normalize returns a copy whose set fields are sorted and unique, so that equal manifests
// compare and hash equal whatever order they were written in.
func (m Manifest) Normalize() Manifest {
	m.NativeItemFields = sortedUnique(m.NativeItemFields)
	m.DroppedItemFields = sortedUnique(m.DroppedItemFields)
	m.SupportedFilters = sortedUnique(m.SupportedFilters)
	m.Extensions = m.Extensions.normalize()
	return m
}

func sortedUnique[T ~string](in []T) []T {
	out := slices.Clone(in)
	if out == nil {
		out = []T{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Validate checks the manifest's shape (known enum values and field names, a non-empty
// adapter id, sane filter keys) and then the seed's six coherence rules in the seed's order.
// The first failing coherence rule is returned as a *CoherenceError with the seed's message.
func (m Manifest) Validate() error {
	if err := m.validateShape(); err != nil {
		return err
	}
	return m.Coherence()
}

// Coherence applies only the six coherence rules, in order, and returns the first failure.
func (m Manifest) Coherence() error {
	native := toSet(m.NativeItemFields)
	dropped := toSet(m.DroppedItemFields)
	for f := range native {
		if dropped[f] {
			return &CoherenceError{Rule: 1, Message: MsgFieldsDisjoint}
		}
	}
	for _, f := range AllItemFields {
		if !native[f] && !dropped[f] {
			return &CoherenceError{Rule: 2, Message: MsgFieldsClassified}
		}
	}
	// Rule 2 is set equality: an unknown field name also breaks it. validateShape rejects
	// unknown names earlier, but Coherence stays correct on its own.
	for f := range native {
		if !f.Valid() {
			return &CoherenceError{Rule: 2, Message: MsgFieldsClassified}
		}
	}
	for f := range dropped {
		if !f.Valid() {
			return &CoherenceError{Rule: 2, Message: MsgFieldsClassified}
		}
	}
	if !native[FieldID] || !native[FieldContent] || !native[FieldTags] {
		return &CoherenceError{Rule: 3, Message: MsgRequiredNative}
	}
	if m.PreservesMetadata && !native[FieldMetadata] {
		return &CoherenceError{Rule: 4, Message: MsgMetadataNative}
	}
	if m.RetrieveFidelity == FidelityFull && (len(dropped) > 0 || !m.PreservesMetadata) {
		return &CoherenceError{Rule: 5, Message: MsgFullRetrieve}
	}
	if m.SearchFidelity == FidelityFull && (len(dropped) > 0 || !m.SearchReturnsTags || !m.PreservesMetadata) {
		return &CoherenceError{Rule: 6, Message: MsgFullSearch}
	}
	return nil
}

func toSet(fields []ItemField) map[ItemField]bool {
	s := make(map[ItemField]bool, len(fields))
	for _, f := range fields {
		s[f] = true
	}
	return s
}

func (m Manifest) validateShape() error {
	var errs []error
	if m.Adapter == "" {
		errs = append(errs, errors.New("adapter: must not be empty"))
	} else if len(m.Adapter) > MaxAdapterIDLength {
		errs = append(errs, fmt.Errorf("adapter: longer than %d bytes", MaxAdapterIDLength))
	}
	for _, f := range m.NativeItemFields {
		if !f.Valid() {
			errs = append(errs, fmt.Errorf("native_item_fields: unknown item field %q", f))
		}
	}
	for _, f := range m.DroppedItemFields {
		if !f.Valid() {
			errs = append(errs, fmt.Errorf("dropped_item_fields: unknown item field %q", f))
		}
	}
	if len(m.SupportedFilters) > MaxSupportedFilters {
		errs = append(errs, fmt.Errorf("supported_filters: more than %d keys", MaxSupportedFilters))
	}
	for _, k := range m.SupportedFilters {
		if k == "" || len(k) > MaxFilterKeyLength {
			errs = append(errs, fmt.Errorf("supported_filters: key must be 1 to %d bytes", MaxFilterKeyLength))
			break
		}
	}
	if !m.SearchConsistency.Valid() {
		errs = append(errs, fmt.Errorf("search_consistency: unknown value %q (want immediate or eventual)", m.SearchConsistency))
	}
	if !m.RetrieveFidelity.Valid() {
		errs = append(errs, fmt.Errorf("retrieve_fidelity: unknown value %q (want full, native_fields or lossy)", m.RetrieveFidelity))
	}
	if !m.SearchFidelity.Valid() {
		errs = append(errs, fmt.Errorf("search_fidelity: unknown value %q (want full, native_fields or lossy)", m.SearchFidelity))
	}
	if err := m.Extensions.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Native reports whether the manifest declares f a native field.
func (m Manifest) Native(f ItemField) bool { return slices.Contains(m.NativeItemFields, f) }

// Dropped reports whether the manifest declares f a dropped field.
func (m Manifest) Dropped(f ItemField) bool { return slices.Contains(m.DroppedItemFields, f) }

// SupportsFilter reports whether key is in the manifest's supported filter set.
func (m Manifest) SupportsFilter(key string) bool { return slices.Contains(m.SupportedFilters, key) }

// Equal reports whether two manifests state the same contract (sets compared as sets).
func (m Manifest) Equal(o Manifest) bool {
	a, b := m.Normalize(), o.Normalize()
	return a.Adapter == b.Adapter &&
		slices.Equal(a.NativeItemFields, b.NativeItemFields) &&
		slices.Equal(a.DroppedItemFields, b.DroppedItemFields) &&
		slices.Equal(a.SupportedFilters, b.SupportedFilters) &&
		a.SearchConsistency == b.SearchConsistency &&
		a.RetrieveFidelity == b.RetrieveFidelity &&
		a.SearchFidelity == b.SearchFidelity &&
		a.SearchReturnsTags == b.SearchReturnsTags &&
		a.PreservesMetadata == b.PreservesMetadata &&
		a.Extensions.equal(b.Extensions)
}

// Hash returns "sha256:<hex>" over the canonical JSON of the normalized manifest (the nine
// base members, then extensions when they claim anything). It is
// stable across set order and duplicates, so the operator can key conformance runs on it.
// The canonical form is a wire contract that non-Go adapters reproduce: it is specified in
// conformance/README.md ("The manifest hash") and on manifest_hash in openapi.yaml, and
// pinned by the vectors in testdata/manifest_hash_vectors.json. It includes encoding/json's
// HTML-safe escaping, so changing how the manifest is marshalled changes every hash.
func (m Manifest) Hash() string {
	b, err := json.Marshal(m.Normalize())
	if err != nil {
		// Manifest holds only strings and bools; Marshal cannot fail on it.
		panic(fmt.Sprintf("memory: marshal manifest: %v", err))
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// manifestWire has pointer fields so that decoding can tell a missing field from a zero one:
// the seed's manifest has no defaults.
type manifestWire struct {
	Adapter           *string            `json:"adapter"`
	NativeItemFields  *[]ItemField       `json:"native_item_fields"`
	DroppedItemFields *[]ItemField       `json:"dropped_item_fields"`
	SupportedFilters  *[]string          `json:"supported_filters"`
	SearchConsistency *SearchConsistency `json:"search_consistency"`
	RetrieveFidelity  *Fidelity          `json:"retrieve_fidelity"`
	SearchFidelity    *Fidelity          `json:"search_fidelity"`
	SearchReturnsTags *bool              `json:"search_returns_tags"`
	PreservesMetadata *bool              `json:"preserves_metadata"`
	Extensions        json.RawMessage    `json:"extensions"`
}

// MarshalJSON writes the normalized manifest, so the wire form is canonical.
func (m Manifest) MarshalJSON() ([]byte, error) {
	type plain Manifest
	return json.Marshal(plain(m.Normalize()))
}

// UnmarshalJSON decodes a manifest strictly: every base field is required (extensions is
// optional), unknown fields and wrong types are errors. It does not apply the coherence rules; call Validate for that.
func (m *Manifest) UnmarshalJSON(data []byte) error {
	var w manifestWire
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("decode manifest: %w", err)
	}
	if dec.More() {
		return errors.New("decode manifest: trailing data after the object")
	}
	var missing []string
	need := func(present bool, name string) {
		if !present {
			missing = append(missing, name)
		}
	}
	need(w.Adapter != nil, "adapter")
	need(w.NativeItemFields != nil, "native_item_fields")
	need(w.DroppedItemFields != nil, "dropped_item_fields")
	need(w.SupportedFilters != nil, "supported_filters")
	need(w.SearchConsistency != nil, "search_consistency")
	need(w.RetrieveFidelity != nil, "retrieve_fidelity")
	need(w.SearchFidelity != nil, "search_fidelity")
	need(w.SearchReturnsTags != nil, "search_returns_tags")
	need(w.PreservesMetadata != nil, "preserves_metadata")
	if len(missing) > 0 {
		return fmt.Errorf("decode manifest: missing required fields: %v", missing)
	}
	var ext *Extensions
	if w.Extensions != nil {
		ext = &Extensions{}
		if err := ext.UnmarshalJSON(w.Extensions); err != nil {
			return fmt.Errorf("decode manifest: %w", err)
		}
	}
	*m = Manifest{
		Adapter:           *w.Adapter,
		NativeItemFields:  *w.NativeItemFields,
		DroppedItemFields: *w.DroppedItemFields,
		SupportedFilters:  *w.SupportedFilters,
		SearchConsistency: *w.SearchConsistency,
		RetrieveFidelity:  *w.RetrieveFidelity,
		SearchFidelity:    *w.SearchFidelity,
		SearchReturnsTags: *w.SearchReturnsTags,
		PreservesMetadata: *w.PreservesMetadata,
		Extensions:        ext,
	}
	return nil
}

// Diff names the fields in which m differs from want, each as `field: got, expected want` in
// the manifest's JSON form, sorted by field, so a mismatch message says what differs and not
// only that two hashes do.
func (m Manifest) Diff(want Manifest) []string {
	fields := func(x Manifest) map[string]json.RawMessage {
		b, err := json.Marshal(x.Normalize())
		if err != nil {
			return nil
		}
		out := map[string]json.RawMessage{}
		if json.Unmarshal(b, &out) != nil {
			return nil
		}
		return out
	}
	got, exp := fields(m), fields(want)
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range exp {
		keys[k] = true
	}
	show := func(v json.RawMessage) string {
		if v == nil {
			return "absent"
		}
		if len(v) > 120 {
			return string(v[:120]) + "…"
		}
		return string(v)
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !bytes.Equal(got[k], exp[k]) {
			diffs = append(diffs, fmt.Sprintf("%s: %s, expected %s", k, show(got[k]), show(exp[k])))
		}
	}
	return diffs
}
