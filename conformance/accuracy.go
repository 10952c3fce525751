package conformance

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance/fake"
)

// A lie is one way of claiming the opposite of a knob's behavior: either a manifest that
// misstates it, or an adapter that hides it (a defect switched on behind an unchanged,
// truthful manifest). Expect lists exactly the cases that must fail.
type lie struct {
	Name     string
	Manifest func(*memory.Manifest)
	Adapter  fake.AdapterKnobs
	Expect   []CaseID
}

// accuracyRow is one knob: a truthful configuration that must pass, and its lies.
type accuracyRow struct {
	Knob    string
	Service fake.ServiceKnobs
	Adapter fake.AdapterKnobs
	Lies    []lie
}

// Manifest mutations used by the lies. Each keeps the manifest coherent unless its name
// says otherwise, so that the lie is about behavior, not about shape.
func setFields(native, dropped []memory.ItemField) func(*memory.Manifest) {
	return func(m *memory.Manifest) {
		m.NativeItemFields, m.DroppedItemFields = native, dropped
	}
}

var (
	allNative    = memory.AllItemFields
	anchorFields = []memory.ItemField{memory.FieldID, memory.FieldContent, memory.FieldTags}
)

func withField(fs []memory.ItemField, f memory.ItemField) []memory.ItemField {
	return append(slices.Clone(fs), f)
}

func fullManifest(m *memory.Manifest) {
	setFields(allNative, nil)(m)
	m.RetrieveFidelity, m.SearchFidelity = memory.FidelityFull, memory.FidelityFull
	m.SearchReturnsTags, m.PreservesMetadata = true, true
	m.SupportedFilters = slices.Clone(fake.DefaultFilters)
}

func metadataDropped(m *memory.Manifest) {
	setFields(withField(anchorFields, memory.FieldCreatedAt), []memory.ItemField{memory.FieldMetadata})(m)
	m.PreservesMetadata = false
	m.RetrieveFidelity, m.SearchFidelity = memory.FidelityNativeFields, memory.FidelityNativeFields
	m.SupportedFilters = nil
}

// accuracyTable pairs every fake knob with the lies it must expose. The expected case sets
// are exact: a lie that also trips an unrelated case is a suite bug, as is one that trips
// none.
var accuracyTable = []accuracyRow{
	{Knob: "faithful service", Lies: []lie{
		{Name: "search_returns_tags=false", Manifest: func(m *memory.Manifest) {
			m.SearchReturnsTags, m.SearchFidelity = false, memory.FidelityNativeFields
		}, Expect: []CaseID{CaseTagProjection}},
		{Name: "created_at dropped", Manifest: func(m *memory.Manifest) {
			setFields(withField(anchorFields, memory.FieldMetadata), []memory.ItemField{memory.FieldCreatedAt})(m)
			m.RetrieveFidelity, m.SearchFidelity = memory.FidelityNativeFields, memory.FidelityNativeFields
		}, Expect: []CaseID{CaseDroppedWriteField}},
		{Name: "metadata dropped", Manifest: metadataDropped,
			Expect: []CaseID{CaseDroppedWriteField, CaseMetadataProjection}},
		{Name: "incoherent manifest (full retrieve without preserved metadata)", Manifest: func(m *memory.Manifest) {
			m.PreservesMetadata = false
		}, Expect: []CaseID{CaseStructuralSurface, CaseStoreIdentifier, CaseDirectRetrieval, CaseUnknownID,
			CaseWrongNativeKind, CaseDroppedWriteField, CaseTypedSearch, CaseLimit, CaseEmptyQuery,
			CaseUnsupportedFilter, CaseSupportedFilter, CaseTagProjection, CaseMetadataProjection,
			CaseConsistency, CaseTransportOutage, CaseRejectedWrite, CaseManifestAccuracy}},
	}},
	{Knob: "eventual index", Service: fake.ServiceKnobs{EventualIndex: true}, Lies: []lie{
		{Name: "search_consistency=immediate", Manifest: func(m *memory.Manifest) {
			m.SearchConsistency = memory.ConsistencyImmediate
		}, Expect: []CaseID{CaseConsistency}},
	}},
	{Knob: "tags dropped from search hits", Service: fake.ServiceKnobs{DropSearchTags: true}, Lies: []lie{
		{Name: "search_returns_tags=true", Manifest: func(m *memory.Manifest) { m.SearchReturnsTags = true },
			Expect: []CaseID{CaseTagProjection}},
	}},
	{Knob: "metadata dropped by the service", Service: fake.ServiceKnobs{DropMetadata: true}, Lies: []lie{
		{Name: "metadata native and preserved (full)", Manifest: fullManifest,
			Expect: []CaseID{CaseDirectRetrieval, CaseDroppedWriteField, CaseSupportedFilter, CaseMetadataProjection}},
		{Name: "metadata native, not preserved (lossy)", Manifest: func(m *memory.Manifest) {
			setFields(allNative, nil)(m)
			m.RetrieveFidelity, m.SearchFidelity = memory.FidelityLossy, memory.FidelityLossy
		}, Expect: []CaseID{CaseDroppedWriteField}},
	}},
	{Knob: "metadata altered (float64)", Service: fake.ServiceKnobs{AlterMetadata: true}, Lies: []lie{
		{Name: "preserves_metadata=true at full fidelity", Manifest: fullManifest,
			Expect: []CaseID{CaseDirectRetrieval, CaseMetadataProjection}},
		// native_fields promises every native field round-trips on retrieve; preserves_metadata
		// stays false, so only direct-retrieval can see this lie.
		{Name: "retrieve_fidelity=native_fields with metadata native", Manifest: func(m *memory.Manifest) {
			m.RetrieveFidelity = memory.FidelityNativeFields
		}, Expect: []CaseID{CaseDirectRetrieval}},
		{Name: "preserves_metadata=true at lossy fidelity", Manifest: func(m *memory.Manifest) { m.PreservesMetadata = true },
			Expect: []CaseID{CaseMetadataProjection}},
	}},
	{Knob: "metadata dropped from search hits", Service: fake.ServiceKnobs{SearchDropsMetadata: true}, Lies: []lie{
		{Name: "search_fidelity=full", Manifest: func(m *memory.Manifest) { m.SearchFidelity = memory.FidelityFull },
			Expect: []CaseID{CaseMetadataProjection}},
		{Name: "metadata dropped", Manifest: metadataDropped,
			Expect: []CaseID{CaseDroppedWriteField, CaseMetadataProjection}},
	}},
	{Knob: "timestamps normalised to seconds", Service: fake.ServiceKnobs{NormalizeTimestamps: true}, Lies: []lie{
		{Name: "retrieve_fidelity=native_fields", Manifest: func(m *memory.Manifest) { m.RetrieveFidelity = memory.FidelityNativeFields },
			Expect: []CaseID{CaseDirectRetrieval}},
		{Name: "search_fidelity=native_fields", Manifest: func(m *memory.Manifest) { m.SearchFidelity = memory.FidelityNativeFields },
			Expect: []CaseID{CaseTypedSearch}},
		{Name: "full fidelity", Manifest: fullManifest,
			Expect: []CaseID{CaseDirectRetrieval, CaseTypedSearch}},
	}},
	// The lie lionagi's items met (contract.md §3, revised 2026-12): a store that keeps
	// microseconds behind a full claim. Under the earlier one-microsecond rule it passed.
	{Knob: "timestamps kept to the microsecond", Service: fake.ServiceKnobs{MicrosecondTimestamps: true}, Lies: []lie{
		{Name: "full fidelity", Manifest: fullManifest,
			Expect: []CaseID{CaseDirectRetrieval, CaseTypedSearch}},
		{Name: "retrieve_fidelity=native_fields", Manifest: func(m *memory.Manifest) { m.RetrieveFidelity = memory.FidelityNativeFields },
			Expect: []CaseID{CaseDirectRetrieval}},
	}},
	{Knob: "created_at dropped by the service", Service: fake.ServiceKnobs{DropCreatedAt: true}, Lies: []lie{
		{Name: "created_at native at full fidelity", Manifest: fullManifest,
			Expect: []CaseID{CaseDirectRetrieval, CaseDroppedWriteField, CaseTypedSearch}},
		{Name: "created_at native at lossy fidelity", Manifest: func(m *memory.Manifest) {
			setFields(allNative, nil)(m)
			m.RetrieveFidelity, m.SearchFidelity = memory.FidelityLossy, memory.FidelityLossy
		}, Expect: []CaseID{CaseDroppedWriteField}},
	}},
	{Knob: "closed filterable key set", Service: fake.ServiceKnobs{FilterableKeys: []string{"branch_id"}}, Lies: []lie{
		{Name: "supported_filters includes an unfilterable key", Manifest: func(m *memory.Manifest) {
			m.SupportedFilters = []string{"branch_id", "source"}
		}, Expect: []CaseID{CaseSupportedFilter}},
	}},
	{Knob: "mid-call outage", Service: fake.ServiceKnobs{MidCallOutage: true}, Lies: []lie{
		{Name: "adapter hides the outage", Adapter: fake.AdapterKnobs{HideOutage: true},
			Expect: []CaseID{CaseTransportOutage}},
		{Name: "adapter treats a lost response as success", Adapter: fake.AdapterKnobs{HideLostResponses: true},
			Expect: []CaseID{CaseTransportOutage}},
	}},
	{Knob: "refused connections", Lies: []lie{
		{Name: "adapter hides the outage", Adapter: fake.AdapterKnobs{HideOutage: true},
			Expect: []CaseID{CaseTransportOutage}},
		{Name: "adapter falls back to an in-process store when its transport cannot be created",
			Adapter: fake.AdapterKnobs{FallbackOnCreationFailure: true}, Expect: []CaseID{CaseTransportOutage}},
	}},
	{Knob: "adapter rejects metadata before transport", Adapter: fake.AdapterKnobs{RejectMetadata: true}, Lies: []lie{
		{Name: "metadata native and preserved", Manifest: fullManifest, Adapter: fake.AdapterKnobs{RejectMetadata: true},
			Expect: []CaseID{CaseStoreIdentifier, CaseDirectRetrieval, CaseUnknownID, CaseWrongNativeKind,
				CaseDroppedWriteField, CaseTypedSearch, CaseLimit, CaseEmptyQuery, CaseSupportedFilter, CaseTagProjection,
				CaseMetadataProjection, CaseConsistency, CaseTransportOutage}},
		{Name: "rejection only after the write reached the transport", Adapter: fake.AdapterKnobs{RejectMetadataLate: true},
			Expect: []CaseID{CaseDroppedWriteField}},
	}},
	{Knob: "write response without identity", Lies: []lie{
		{Name: "adapter accepts it", Adapter: fake.AdapterKnobs{AcceptIdentityless: true}, Expect: []CaseID{CaseStoreIdentifier}},
		{Name: "adapter returns its own id", Adapter: fake.AdapterKnobs{ReturnWrongID: true}, Expect: []CaseID{CaseStoreIdentifier}},
	}},
	{Knob: "write rejection", Lies: []lie{
		{Name: "adapter ignores the rejection", Adapter: fake.AdapterKnobs{IgnoreRejection: true}, Expect: []CaseID{CaseRejectedWrite}},
	}},
	{Knob: "wrong native record kind", Lies: []lie{
		{Name: "retrieve coerces it", Adapter: fake.AdapterKnobs{CoerceWrongKindRetrieve: true}, Expect: []CaseID{CaseWrongNativeKind}},
		{Name: "search coerces it", Adapter: fake.AdapterKnobs{CoerceWrongKindSearch: true}, Expect: []CaseID{CaseWrongNativeKind}},
	}},
	{Knob: "malformed responses", Lies: []lie{
		{Name: "adapter passes partial items through", Adapter: fake.AdapterKnobs{PassMalformed: true}, Expect: []CaseID{CaseTypedSearch}},
		{Name: "adapter leaks a native object as an item", Adapter: fake.AdapterKnobs{LeakNativeRecords: true},
			Expect: []CaseID{CaseTypedSearch, CaseLimit, CaseEmptyQuery, CaseSupportedFilter}},
	}},
	{Knob: "unknown identity", Lies: []lie{
		{Name: "adapter returns an empty item", Adapter: fake.AdapterKnobs{UnknownAsEmptyItem: true}, Expect: []CaseID{CaseUnknownID}},
		{Name: "adapter retrieves through ranked search", Adapter: fake.AdapterKnobs{RetrieveViaSearch: true}, Expect: []CaseID{CaseUnknownID}},
	}},
	{Knob: "eventual index with identity reads", Service: fake.ServiceKnobs{EventualIndex: true}, Lies: []lie{
		{Name: "adapter retrieves through the search index", Adapter: fake.AdapterKnobs{RetrieveViaSearch: true},
			Expect: []CaseID{CaseDirectRetrieval, CaseUnknownID, CaseDroppedWriteField, CaseTagProjection, CaseMetadataProjection}},
		{Name: "adapter writes records the index never sees", Adapter: fake.AdapterKnobs{IndexNeverVisible: true},
			Expect: []CaseID{CaseUnknownID, CaseWrongNativeKind, CaseTypedSearch, CaseLimit, CaseEmptyQuery,
				CaseSupportedFilter, CaseTagProjection, CaseMetadataProjection, CaseConsistency}},
	}},
	{Knob: "exact content", Lies: []lie{
		{Name: "adapter encodes content through float64", Adapter: fake.AdapterKnobs{ContentFloat64: true},
			Expect: []CaseID{CaseDirectRetrieval, CaseTypedSearch}},
	}},
	{Knob: "tags with duplicates", Lies: []lie{
		{Name: "adapter de-duplicates tags", Adapter: fake.AdapterKnobs{DedupTags: true},
			Expect: []CaseID{CaseDirectRetrieval, CaseTagProjection}},
	}},
	{Knob: "tags with duplicates, hits without tags", Service: fake.ServiceKnobs{DropSearchTags: true}, Lies: []lie{
		{Name: "adapter de-duplicates tags", Adapter: fake.AdapterKnobs{DedupTags: true},
			Expect: []CaseID{CaseDirectRetrieval, CaseTagProjection}},
	}},
	// Tags stay a direct-retrieval anchor when the retrieve fidelity is lossy.
	{Knob: "tags with duplicates, lossy retrieve", Service: fake.ServiceKnobs{NormalizeTimestamps: true}, Lies: []lie{
		{Name: "adapter de-duplicates tags", Adapter: fake.AdapterKnobs{DedupTags: true},
			Expect: []CaseID{CaseDirectRetrieval, CaseTagProjection}},
	}},
	{Knob: "limit handling", Lies: []lie{
		{Name: "adapter does not pass the limit on", Adapter: fake.AdapterKnobs{LimitIgnored: true}, Expect: []CaseID{CaseLimit}},
		{Name: "adapter treats limit 0 as the default", Adapter: fake.AdapterKnobs{LimitZeroDefault: true}, Expect: []CaseID{CaseLimit}},
		{Name: "adapter sends limit 0 to the transport", Adapter: fake.AdapterKnobs{SendLimitZero: true}, Expect: []CaseID{CaseLimit}},
		{Name: "adapter passes a negative limit on", Adapter: fake.AdapterKnobs{NegativeLimitSlice: true},
			Expect: []CaseID{CaseLimit, CaseUnsupportedFilter}},
		{Name: "adapter rejects a negative limit with a generic error", Adapter: fake.AdapterKnobs{NegativeLimitGenericError: true},
			Expect: []CaseID{CaseLimit, CaseUnsupportedFilter}},
		{Name: "adapter rejects limit 0", Adapter: fake.AdapterKnobs{LimitZeroRejected: true}, Expect: []CaseID{CaseLimit}},
	}},
	{Knob: "query validation", Lies: []lie{
		{Name: "adapter validates after the transport call", Adapter: fake.AdapterKnobs{ValidateAfterTransport: true},
			Expect: []CaseID{CaseLimit, CaseUnsupportedFilter}},
		{Name: "adapter ignores unsupported filter keys", Adapter: fake.AdapterKnobs{IgnoreUnsupportedFilters: true},
			Expect: []CaseID{CaseUnsupportedFilter}},
		{Name: "adapter reports only the first rejected key", Adapter: fake.AdapterKnobs{FirstKeyOnly: true},
			Expect: []CaseID{CaseUnsupportedFilter}},
	}},
	{Knob: "filter mapping", Lies: []lie{
		{Name: "adapter does not send a supported filter", Adapter: fake.AdapterKnobs{IgnoreSupportedFilter: true},
			Expect: []CaseID{CaseSupportedFilter}},
		{Name: "adapter maps the key to the wrong native attribute", Adapter: fake.AdapterKnobs{WrongFilterKey: true},
			Expect: []CaseID{CaseSupportedFilter}},
		{Name: "adapter sends the value as text", Adapter: fake.AdapterKnobs{FilterValueAsText: true},
			Expect: []CaseID{CaseSupportedFilter}},
	}},
	{Knob: "empty query", Lies: []lie{
		{Name: "adapter substitutes a wildcard search string", Adapter: fake.AdapterKnobs{EmptyQueryWildcard: true},
			Expect: []CaseID{CaseUnknownID, CaseWrongNativeKind, CaseTypedSearch, CaseLimit, CaseEmptyQuery,
				CaseSupportedFilter, CaseTagProjection, CaseMetadataProjection, CaseConsistency}},
	}},
	{Knob: "immutable manifest", Lies: []lie{
		{Name: "adapter changes its manifest after the first read", Adapter: fake.AdapterKnobs{MutableManifest: true},
			Expect: []CaseID{CaseStructuralSurface}},
	}},
}

// nestedOptions are the options of the table's own runs: the fake is in-process and its
// index is visible as soon as MakeSearchIndexVisible returns, so short polls suffice.
func nestedOptions(disabledCheck string) Options {
	return Options{
		CaseTimeout:       10 * time.Second,
		VisibilityTimeout: 20 * time.Millisecond,
		PollInterval:      time.Millisecond,
		nested:            true,
		disabledCheck:     disabledCheck,
	}
}

// AccuracyPairs returns the number of (knob, lie) pairs and truthful configurations in the
// built-in table.
func AccuracyPairs() (pairs, truthful int) {
	for _, row := range accuracyTable {
		pairs += len(row.Lies)
	}
	return pairs, len(accuracyTable)
}

// RunAccuracyTable runs the built-in manifest-accuracy table over the deterministic fake:
// for every knob it runs the suite on the truthful configuration, which must pass, and on
// every lie, which must fail exactly on the expected cases.
func RunAccuracyTable(ctx context.Context) (AccuracySummary, error) {
	return runAccuracyTable(ctx, "", false)
}

// runAccuracyTable runs the table with one check disabled; stopAtFirstMiss ends it at the
// first entry that does not behave as expected (the mutation test only needs one).
func runAccuracyTable(ctx context.Context, disabledCheck string, stopAtFirstMiss bool) (AccuracySummary, error) {
	var sum AccuracySummary
	sum.Total, sum.Truthful = AccuracyPairs()
	opts := nestedOptions(disabledCheck)
	for ri, row := range accuracyTable {
		for li := -1; li < len(row.Lies); li++ {
			if err := ctx.Err(); err != nil {
				return sum, err
			}
			ok, problem, _ := runAccuracyEntry(ctx, ri, li, opts)
			switch {
			case ok && li < 0:
				sum.TruthfulPassed++
			case ok:
				sum.Caught++
			default:
				sum.Problems = append(sum.Problems, problem)
				if stopAtFirstMiss {
					return sum, nil
				}
			}
		}
	}
	return sum, nil
}

// runAccuracyEntry runs one entry of the table: the truthful configuration of row ri when
// li is -1, otherwise its lie li. It reports whether the suite behaved as expected.
func runAccuracyEntry(ctx context.Context, ri, li int, opts Options) (bool, string, *Report) {
	row := accuracyTable[ri]
	if li < 0 {
		r := Execute(ctx, fake.New(fake.Config{Service: row.Service, Adapter: row.Adapter}), opts)
		if failed := r.FailedIDs(); len(failed) == 0 && r.Error == "" {
			return true, "", r
		}
		return false, fmt.Sprintf("%s (truthful): failed %v %s", row.Knob, r.FailedIDs(), r.Error), r
	}
	l := row.Lies[li]
	m := fake.TruthfulManifest(row.Service, row.Adapter)
	if l.Manifest != nil {
		l.Manifest(&m)
		m = m.Normalize()
	}
	adapter := row.Adapter
	if l.Adapter != (fake.AdapterKnobs{}) {
		adapter = l.Adapter
	}
	r := Execute(ctx, fake.New(fake.Config{Service: row.Service, Adapter: adapter, Manifest: m}), opts)
	if failed := r.FailedIDs(); slices.Equal(failed, inMatrixOrder(l.Expect)) {
		return true, "", r
	}
	return false, fmt.Sprintf("%s / %s: failed %v, want %v", row.Knob, l.Name, r.FailedIDs(), l.Expect), r
}

// inMatrixOrder sorts ids by their position in the matrix, the order reports use.
func inMatrixOrder(ids []CaseID) []CaseID {
	pos := map[CaseID]int{}
	for i, c := range cases {
		pos[c.ID] = i
	}
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b CaseID) int { return pos[a] - pos[b] })
	return out
}
