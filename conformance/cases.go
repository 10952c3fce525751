package conformance

// SuiteVersion is the version of this conformance matrix. It changes whenever a case is
// added, removed or made stricter, so that a report names the exact rules it applied.
const SuiteVersion = "0.1.0"

// CaseID is the stable identifier of one conformance case. Reports, the MemoryAdapter status
// and the documentation use these ids; they never change meaning within a SuiteVersion.
type CaseID string

// The 17 cases of ADR-0093 D2, in matrix order.
const (
	CaseStructuralSurface  CaseID = "structural-surface"
	CaseStoreIdentifier    CaseID = "store-identifier"
	CaseDirectRetrieval    CaseID = "direct-retrieval"
	CaseUnknownID          CaseID = "unknown-id"
	CaseWrongNativeKind    CaseID = "wrong-native-kind"
	CaseDroppedWriteField  CaseID = "dropped-write-field"
	CaseTypedSearch        CaseID = "typed-search"
	CaseLimit              CaseID = "limit"
	CaseEmptyQuery         CaseID = "empty-query"
	CaseUnsupportedFilter  CaseID = "unsupported-filter"
	CaseSupportedFilter    CaseID = "supported-filter"
	CaseTagProjection      CaseID = "tag-projection"
	CaseMetadataProjection CaseID = "metadata-projection"
	CaseConsistency        CaseID = "consistency"
	CaseTransportOutage    CaseID = "transport-outage"
	CaseRejectedWrite      CaseID = "rejected-write"
	CaseManifestAccuracy   CaseID = "manifest-accuracy"
)

// Case describes one conformance case for reports, status and documentation.
type Case struct {
	// ID is the stable case id.
	ID CaseID `json:"id"`
	// Title is the matrix's short name for the case.
	Title string `json:"title"`
	// Description says in one line what the case observes.
	Description string `json:"description"`
	// Hint names the adapter bug that most often makes the case fail.
	Hint string `json:"hint"`
}

// cases is the matrix in order. Every case is required: a run in which any of them did not
// execute (neither Passed, Failed nor NotApplicable with a reason) is a failed run.
var cases = []Case{
	{CaseStructuralSurface, "Structural surface",
		"the store is an ExternalStore whose manifest validates and stays the same for the instance's lifetime",
		"Manifest() returns an incoherent manifest or a different value on a later call; build the manifest once in the constructor"},
	{CaseStoreIdentifier, "Store identifier",
		"a successful store returns the item's own id; a write acknowledged without an identity is a MemoryAdapterError",
		"the adapter returns the service's native key or a generated UUID instead of item.ID, or accepts a write response that lacks an identity"},
	{CaseDirectRetrieval, "Direct retrieval",
		"a stored id is retrievable at once; id, content and tags are exact at every fidelity, every other native field at full and native_fields",
		"tags are de-duplicated or reordered, or a native field is normalised (timestamps, numbers via float64, metadata) while the retrieve fidelity is full or native_fields"},
	{CaseUnknownID, "Unknown id",
		"retrieve of an unknown id returns no item and no error, never an empty item or a search result",
		"retrieve maps 'not found' to an empty Item, or is implemented as ranked search with the UUID as query text"},
	{CaseWrongNativeKind, "Wrong native kind",
		"a service record of another kind under the requested identity is reported as absent, never coerced",
		"retrieve does not check the native record kind before projecting it into an Item"},
	{CaseDroppedWriteField, "Dropped write field",
		"a field in dropped_item_fields is rejected before transport or comes back as its default; an undeclared field is never dropped",
		"the service silently discards a field (metadata, created_at) that the manifest lists as native, or keeps one the manifest lists as dropped"},
	{CaseTypedSearch, "Typed search",
		"every search hit is a well-formed Item that was stored, projected at the declared search fidelity; malformed payloads fail",
		"search passes malformed or partial service payloads through, or hits lose fields the search fidelity claims"},
	{CaseLimit, "Limit",
		"a positive limit returns at most N, 0 returns an empty list without transport, a negative limit is UnsupportedMemoryQuery naming limit",
		"limit=0 is sent to the service, or a negative limit is passed on (Python slice semantics) instead of rejected"},
	{CaseEmptyQuery, "Empty query",
		"a query with no predicates returns the backend's first page up to the limit, never a wildcard search",
		"the adapter substitutes a magic search string (\"*\", \"\") for an empty query, which the service treats literally"},
	{CaseUnsupportedFilter, "Unsupported filter",
		"filter keys outside supported_filters raise UnsupportedMemoryQuery naming every rejected key, sorted and unique, before transport",
		"unsupported keys are ignored, stripped or validated only after the service call, or only the first key is reported"},
	{CaseSupportedFilter, "Supported filter",
		"every supported filter key narrows results to exactly the matching items, and reaches the transport mapped as documented",
		"a supported key is not sent to the service, is mapped to the wrong native key, or the service cannot filter on a key the manifest lists"},
	{CaseTagProjection, "Tag projection",
		"search-hit tags agree with search_returns_tags in both directions; retrieve returns tags exactly (order and duplicates)",
		"search_returns_tags does not match what hits carry, or tags are de-duplicated or reordered"},
	{CaseMetadataProjection, "Metadata projection",
		"store, retrieve and search agree with preserves_metadata and the field classification, with exact JSON values",
		"metadata numbers pass through float64 (integers above 2^53 change) or metadata is dropped while preserves_metadata is true"},
	{CaseConsistency, "Consistency",
		"immediate: a write is searchable at once; eventual: it may miss until the index is made visible and must be found after; retrieve is never stale",
		"the manifest says immediate while search runs on an asynchronously built index, or retrieve goes through the search index"},
	{CaseTransportOutage, "Transport outage",
		"with the transport cut, store, retrieve and search raise MemoryAdapterUnavailable, also for a store created while the transport is down",
		"the adapter swallows transport errors into None, [] or a generated id, or falls back to another store"},
	{CaseRejectedWrite, "Rejected write",
		"a write the service rejects raises MemoryAdapterError and returns no identifier",
		"the adapter ignores the service's rejection status and returns item.ID"},
	{CaseManifestAccuracy, "Manifest accuracy",
		"toggling every fake behavior makes the suite fail whenever the manifest claims the opposite",
		"the conformance build in use cannot detect a manifest lie; upgrade or repair the suite before trusting any verdict"},
}

// Cases returns the 17 cases in matrix order. The slice is a copy.
func Cases() []Case {
	out := make([]Case, len(cases))
	copy(out, cases)
	return out
}

// CaseIDs returns the 17 case ids in matrix order.
func CaseIDs() []CaseID {
	out := make([]CaseID, len(cases))
	for i, c := range cases {
		out[i] = c.ID
	}
	return out
}

// LookupCase returns the case with the given id.
func LookupCase(id CaseID) (Case, bool) {
	for _, c := range cases {
		if c.ID == id {
			return c, true
		}
	}
	return Case{}, false
}
