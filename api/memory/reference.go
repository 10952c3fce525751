package memory

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// DefaultSupportedFilters are lionagi's provenance metadata keys, the filter set every
// backend publishes unless configured otherwise.
func DefaultSupportedFilters() []string { return []string{"branch_id", "source"} }

// FullManifest is the manifest of a backend that keeps every item field and answers search
// immediately: the reference store's, and what the relational backends publish.
func FullManifest(adapterID string, supportedFilters []string) Manifest {
	return Manifest{
		Adapter:           adapterID,
		NativeItemFields:  slices.Clone(AllItemFields),
		DroppedItemFields: []ItemField{},
		SupportedFilters:  slices.Clone(supportedFilters),
		SearchConsistency: ConsistencyImmediate,
		RetrieveFidelity:  FidelityFull,
		SearchFidelity:    FidelityFull,
		SearchReturnsTags: true,
		PreservesMetadata: true,
	}.Normalize()
}

// Matches reports whether it satisfies q's predicates, lionagi's InMemoryStore semantics that
// every backend must reproduce: the text is a case-insensitive literal substring of the
// content's text, any one query tag is enough, and every filter must equal its metadata value
// as JSON. lowerText is Needle(*q.Text), passed in so a scan lowers it once.
func Matches(it Item, q Query, lowerText string) bool {
	if q.Text != nil && !strings.Contains(SearchText(it.ContentJSON()), lowerText) {
		return false
	}
	if len(q.Tags) > 0 && !slices.ContainsFunc(q.Tags, func(t string) bool { return slices.Contains(it.Tags, t) }) {
		return false
	}
	for k, want := range q.Filters {
		got, ok := it.Metadata[k]
		if !ok || !JSONEqual(got, want) {
			return false
		}
	}
	return true
}

// ContentText is the text a substring search looks at: a JSON string's own characters,
// otherwise the value's compact JSON. (lionagi uses Python's str(); a Go store cannot
// reproduce Python's repr, so JSON text is the documented equivalent.)
func ContentText(content json.RawMessage) string {
	var s string
	if err := json.Unmarshal(content, &s); err == nil {
		return s
	}
	var b bytes.Buffer
	if err := json.Compact(&b, content); err != nil {
		return string(content)
	}
	return b.String()
}

// SearchText is the lower-cased content text a text query matches against; backends that
// precompute it store this value.
func SearchText(content json.RawMessage) string { return strings.ToLower(ContentText(content)) }

// Needle lower-cases query text the same way SearchText lower-cases content.
func Needle(text string) string { return strings.ToLower(text) }
