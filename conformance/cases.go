package conformance

// SuiteVersion is the version of this conformance matrix. It changes whenever a case is
// added, removed or made stricter, so that a report names the exact rules it applied.
const SuiteVersion = "0.1.0"

// CaseID is the stable identifier of one conformance case. Reports, the MemoryAdapter status
// and the documentation use these ids; they never change meaning within a SuiteVersion.
type CaseID string

// The cases of ADR-0093 D2's matrix, in matrix order. The matrix's shape has one home, the
// cases slice below: the API's ids are generated from it (hack/gen-caseids) and the documents
// say "the matrix" rather than a count.
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
	// run performs the case's checks against a fresh store; every observation is guarded by
	// one named check (caseRun.check) so the mutation test can prove each is needed.
	run func(*caseRun)
	// readOnly marks a case that writes nothing: it runs without Reset, so also against a
	// target without a disposable scope.
	readOnly bool
	// wire marks a wire-rule case, run only when the harness is a WireTarget.
	wire bool
}

// cases is the matrix in order; each case is one value holding its id, texts and checks,
// defined in the file of its area (cases_identity.go, cases_search.go, cases_failure.go,
// cases_accuracy.go). Every case is required: a run in which any of them did not execute
// (neither Passed, Failed nor NotApplicable with a reason) is a failed run.
var cases = []Case{
	caseStructuralSurface, caseStoreIdentifier, caseDirectRetrieval, caseUnknownID,
	caseWrongNativeKind, caseDroppedWriteField, caseTypedSearch, caseLimit,
	caseEmptyQuery, caseUnsupportedFilter, caseSupportedFilter, caseTagProjection,
	caseMetadataProjection, caseConsistency, caseTransportOutage, caseRejectedWrite,
	caseManifestAccuracy,
}

// Cases returns the matrix's cases in matrix order. The slice is a copy.
func Cases() []Case {
	out := make([]Case, len(cases))
	copy(out, cases)
	return out
}

// CaseIDs returns the matrix's case ids in matrix order.
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
