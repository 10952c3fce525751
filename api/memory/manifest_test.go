package memory

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// fullManifest is the reference store's contract: every field native, nothing dropped.
func fullManifest() Manifest {
	return Manifest{
		Adapter:           "test",
		NativeItemFields:  []ItemField{FieldID, FieldCreatedAt, FieldMetadata, FieldContent, FieldTags},
		DroppedItemFields: []ItemField{},
		SupportedFilters:  []string{"branch_id", "source"},
		SearchConsistency: ConsistencyImmediate,
		RetrieveFidelity:  FidelityFull,
		SearchFidelity:    FidelityFull,
		SearchReturnsTags: true,
		PreservesMetadata: true,
	}
}

func with(f func(*Manifest)) Manifest {
	m := fullManifest()
	f(&m)
	return m
}

func TestManifestValidateCoherenceRules(t *testing.T) {
	// The messages are spelled out here rather than taken from the Msg constants, so that a
	// change to a constant (which the CRD's CEL rules also use) fails this test.
	tests := []struct {
		name     string
		manifest Manifest
		wantRule int
		wantMsg  string
	}{
		{
			name: "rule 1: a field both native and dropped",
			manifest: with(func(m *Manifest) {
				m.DroppedItemFields = []ItemField{FieldMetadata}
			}),
			wantRule: 1, wantMsg: "native and dropped item fields must be disjoint",
		},
		{
			name: "rule 2: created_at in neither set",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldID, FieldMetadata, FieldContent, FieldTags}
			}),
			wantRule: 2, wantMsg: "every MemoryItem field must be classified",
		},
		{
			name: "rule 2: no field classified at all",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = nil
				m.DroppedItemFields = nil
			}),
			wantRule: 2, wantMsg: "every MemoryItem field must be classified",
		},
		{
			name: "rule 3: tags dropped",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldID, FieldCreatedAt, FieldMetadata, FieldContent}
				m.DroppedItemFields = []ItemField{FieldTags}
				m.RetrieveFidelity, m.SearchFidelity = FidelityLossy, FidelityLossy
			}),
			wantRule: 3, wantMsg: "id, content, and tags are required native fields",
		},
		{
			name: "rule 3: id dropped",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldCreatedAt, FieldMetadata, FieldContent, FieldTags}
				m.DroppedItemFields = []ItemField{FieldID}
				m.RetrieveFidelity, m.SearchFidelity = FidelityLossy, FidelityLossy
			}),
			wantRule: 3, wantMsg: "id, content, and tags are required native fields",
		},
		{
			name: "rule 3: content dropped",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldID, FieldCreatedAt, FieldMetadata, FieldTags}
				m.DroppedItemFields = []ItemField{FieldContent}
				m.RetrieveFidelity, m.SearchFidelity = FidelityLossy, FidelityLossy
			}),
			wantRule: 3, wantMsg: "id, content, and tags are required native fields",
		},
		{
			name: "rule 4: preserves metadata that is dropped",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldID, FieldCreatedAt, FieldContent, FieldTags}
				m.DroppedItemFields = []ItemField{FieldMetadata}
				m.RetrieveFidelity, m.SearchFidelity = FidelityNativeFields, FidelityNativeFields
			}),
			wantRule: 4, wantMsg: "preserved metadata must be a native field",
		},
		{
			name: "rule 5: full retrieve without preserved metadata",
			manifest: with(func(m *Manifest) {
				m.PreservesMetadata = false
				m.SearchFidelity = FidelityNativeFields
			}),
			wantRule: 5, wantMsg: "full retrieve fidelity must preserve every item field",
		},
		{
			name: "rule 5: full retrieve with a dropped field",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldID, FieldMetadata, FieldContent, FieldTags}
				m.DroppedItemFields = []ItemField{FieldCreatedAt}
				m.SearchFidelity = FidelityNativeFields
			}),
			wantRule: 5, wantMsg: "full retrieve fidelity must preserve every item field",
		},
		{
			name: "rule 6: full search without tags in hits",
			manifest: with(func(m *Manifest) {
				m.SearchReturnsTags = false
			}),
			wantRule: 6, wantMsg: "full search fidelity must preserve all fields and tags",
		},
		{
			name: "rule 6: full search with a dropped field",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldID, FieldMetadata, FieldContent, FieldTags}
				m.DroppedItemFields = []ItemField{FieldCreatedAt}
				m.RetrieveFidelity = FidelityNativeFields
			}),
			wantRule: 6, wantMsg: "full search fidelity must preserve all fields and tags",
		},
		{
			name: "rule 6: full search without preserved metadata",
			manifest: with(func(m *Manifest) {
				m.PreservesMetadata = false
				m.RetrieveFidelity = FidelityLossy
			}),
			wantRule: 6, wantMsg: "full search fidelity must preserve all fields and tags",
		},
		// When several rules fail, the first in the seed's order wins.
		{
			name: "rules 1, 2, 3, 4 fail: rule 1 wins",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldCreatedAt}
				m.DroppedItemFields = []ItemField{FieldCreatedAt, FieldMetadata}
			}),
			wantRule: 1, wantMsg: "native and dropped item fields must be disjoint",
		},
		{
			name: "rules 2, 3, 4, 5, 6 fail: rule 2 wins",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldCreatedAt}
				m.DroppedItemFields = []ItemField{FieldID, FieldMetadata}
				m.SearchReturnsTags = false
			}),
			wantRule: 2, wantMsg: "every MemoryItem field must be classified",
		},
		{
			name: "rules 3, 4, 5, 6 fail: rule 3 wins",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldID, FieldCreatedAt}
				m.DroppedItemFields = []ItemField{FieldMetadata, FieldContent, FieldTags}
			}),
			wantRule: 3, wantMsg: "id, content, and tags are required native fields",
		},
		{
			name: "rules 4, 5, 6 fail: rule 4 wins",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldID, FieldCreatedAt, FieldContent, FieldTags}
				m.DroppedItemFields = []ItemField{FieldMetadata}
			}),
			wantRule: 4, wantMsg: "preserved metadata must be a native field",
		},
		{
			name: "rules 5 and 6 fail: rule 5 wins",
			manifest: with(func(m *Manifest) {
				m.PreservesMetadata = false
			}),
			wantRule: 5, wantMsg: "full retrieve fidelity must preserve every item field",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tt.manifest.Validate()
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(Equal(tt.wantMsg))
			var ce *CoherenceError
			g.Expect(errors.As(err, &ce)).To(BeTrue(), "want a *CoherenceError, got %T", err)
			g.Expect(ce.Rule).To(Equal(tt.wantRule))
			g.Expect(CoherenceMessages[tt.wantRule-1]).To(Equal(tt.wantMsg))
			// Coherence alone agrees with Validate on shape-valid manifests.
			g.Expect(tt.manifest.Coherence()).To(MatchError(tt.wantMsg))
		})
	}
}

func TestManifestValidateCoherentManifestsPass(t *testing.T) {
	tests := []struct {
		name     string
		manifest Manifest
	}{
		{name: "full and immediate (reference store)", manifest: fullManifest()},
		{
			name: "eventual search, tags missing from hits",
			manifest: with(func(m *Manifest) {
				m.SearchConsistency = ConsistencyEventual
				m.SearchFidelity = FidelityNativeFields
				m.SearchReturnsTags = false
			}),
		},
		{
			name: "khive-like: metadata dropped, lossy search, no filters",
			manifest: with(func(m *Manifest) {
				m.Adapter = "khive"
				m.NativeItemFields = []ItemField{FieldID, FieldCreatedAt, FieldContent, FieldTags}
				m.DroppedItemFields = []ItemField{FieldMetadata}
				m.SupportedFilters = []string{}
				m.SearchConsistency = ConsistencyEventual
				m.RetrieveFidelity = FidelityNativeFields
				m.SearchFidelity = FidelityLossy
				m.SearchReturnsTags = false
				m.PreservesMetadata = false
			}),
		},
		{
			name: "created_at dropped with lossy fidelities",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldID, FieldMetadata, FieldContent, FieldTags}
				m.DroppedItemFields = []ItemField{FieldCreatedAt}
				m.RetrieveFidelity, m.SearchFidelity = FidelityLossy, FidelityLossy
			}),
		},
		{
			name: "metadata native but not preserved",
			manifest: with(func(m *Manifest) {
				m.PreservesMetadata = false
				m.RetrieveFidelity, m.SearchFidelity = FidelityLossy, FidelityNativeFields
			}),
		},
		{
			name: "sets given unsorted and with duplicates",
			manifest: with(func(m *Manifest) {
				m.NativeItemFields = []ItemField{FieldTags, FieldID, FieldTags, FieldContent, FieldMetadata, FieldCreatedAt}
				m.SupportedFilters = []string{"source", "branch_id", "source"}
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.manifest.Validate()).To(Succeed())
			g.Expect(tt.manifest.Coherence()).To(Succeed())
		})
	}
}

func TestManifestValidateShape(t *testing.T) {
	tests := []struct {
		name     string
		manifest Manifest
		wantSub  []string
	}{
		{"empty adapter id", with(func(m *Manifest) { m.Adapter = "" }), []string{"adapter: must not be empty"}},
		{"overlong adapter id", with(func(m *Manifest) { m.Adapter = strings.Repeat("a", 254) }), []string{"adapter: longer than 253 bytes"}},
		{"unknown native field", with(func(m *Manifest) {
			m.NativeItemFields = append(m.NativeItemFields, "score")
		}), []string{`native_item_fields: unknown item field "score"`}},
		{"unknown dropped field", with(func(m *Manifest) { m.DroppedItemFields = []ItemField{"embedding"} }),
			[]string{`dropped_item_fields: unknown item field "embedding"`}},
		{"unknown consistency", with(func(m *Manifest) { m.SearchConsistency = "strong" }), []string{`search_consistency: unknown value "strong"`}},
		{"unknown retrieve fidelity", with(func(m *Manifest) { m.RetrieveFidelity = "exact" }), []string{`retrieve_fidelity: unknown value "exact"`}},
		{"unknown search fidelity", with(func(m *Manifest) { m.SearchFidelity = "" }), []string{`search_fidelity: unknown value ""`}},
		{"empty filter key", with(func(m *Manifest) { m.SupportedFilters = []string{""} }), []string{"supported_filters: key must be 1 to 256 bytes"}},
		{"too many filter keys", with(func(m *Manifest) {
			m.SupportedFilters = nil
			for i := range 65 {
				m.SupportedFilters = append(m.SupportedFilters, strings.Repeat("k", i+1))
			}
		}), []string{"supported_filters: more than 64 keys"}},
		{"several shape errors are all reported", with(func(m *Manifest) {
			m.Adapter = ""
			m.SearchConsistency = "x"
		}), []string{"adapter: must not be empty", `search_consistency: unknown value "x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tt.manifest.Validate()
			g.Expect(err).To(HaveOccurred())
			for _, sub := range tt.wantSub {
				g.Expect(err.Error()).To(ContainSubstring(sub))
			}
			var ce *CoherenceError
			g.Expect(errors.As(err, &ce)).To(BeFalse(), "shape errors are reported before coherence rules")
		})
	}
}

func TestCoherenceRejectsUnknownFieldNamesAsUnclassified(t *testing.T) {
	// Coherence is usable without Validate (the CRD conversion calls it); a sixth field name
	// breaks set equality, so rule 2 must fire even when all five real fields are present.
	g := NewWithT(t)
	m := with(func(m *Manifest) { m.NativeItemFields = append(m.NativeItemFields, "score") })
	var ce *CoherenceError
	g.Expect(errors.As(m.Coherence(), &ce)).To(BeTrue())
	g.Expect(ce.Rule).To(Equal(2))
}

func TestManifestNormalizeEqualHash(t *testing.T) {
	g := NewWithT(t)
	a := fullManifest()
	b := with(func(m *Manifest) {
		m.NativeItemFields = []ItemField{FieldTags, FieldContent, FieldID, FieldTags, FieldMetadata, FieldCreatedAt}
		m.DroppedItemFields = nil
		m.SupportedFilters = []string{"source", "branch_id", "branch_id"}
	})
	g.Expect(a.Equal(b)).To(BeTrue())
	g.Expect(a.Hash()).To(Equal(b.Hash()))
	g.Expect(a.Hash()).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	g.Expect(b.Normalize().NativeItemFields).To(Equal([]ItemField{"content", "created_at", "id", "metadata", "tags"}))
	g.Expect(b.Normalize().DroppedItemFields).To(Equal([]ItemField{}))
	g.Expect(b.NativeItemFields[0]).To(Equal(FieldTags), "Normalize must not modify its receiver's slices")

	// Every field takes part in equality and in the hash.
	changes := map[string]func(*Manifest){
		"adapter":             func(m *Manifest) { m.Adapter = "other" },
		"native_item_fields":  func(m *Manifest) { m.NativeItemFields = m.NativeItemFields[1:] },
		"dropped_item_fields": func(m *Manifest) { m.DroppedItemFields = []ItemField{FieldID} },
		"supported_filters":   func(m *Manifest) { m.SupportedFilters = []string{"source"} },
		"search_consistency":  func(m *Manifest) { m.SearchConsistency = ConsistencyEventual },
		"retrieve_fidelity":   func(m *Manifest) { m.RetrieveFidelity = FidelityLossy },
		"search_fidelity":     func(m *Manifest) { m.SearchFidelity = FidelityLossy },
		"search_returns_tags": func(m *Manifest) { m.SearchReturnsTags = false },
		"preserves_metadata":  func(m *Manifest) { m.PreservesMetadata = false },
	}
	for name, change := range changes {
		c := with(change)
		g.Expect(a.Equal(c)).To(BeFalse(), name)
		g.Expect(a.Hash()).NotTo(Equal(c.Hash()), name)
	}
}

func TestManifestQueries(t *testing.T) {
	g := NewWithT(t)
	m := with(func(m *Manifest) {
		m.NativeItemFields = []ItemField{FieldID, FieldCreatedAt, FieldContent, FieldTags}
		m.DroppedItemFields = []ItemField{FieldMetadata}
	})
	g.Expect(m.Native(FieldID)).To(BeTrue())
	g.Expect(m.Native(FieldMetadata)).To(BeFalse())
	g.Expect(m.Dropped(FieldMetadata)).To(BeTrue())
	g.Expect(m.Dropped(FieldTags)).To(BeFalse())
	g.Expect(m.SupportsFilter("source")).To(BeTrue())
	g.Expect(m.SupportsFilter("Source")).To(BeFalse(), "filter keys are exact")
}

func TestManifestJSONRoundTrip(t *testing.T) {
	g := NewWithT(t)
	m := with(func(m *Manifest) {
		m.NativeItemFields = []ItemField{FieldTags, FieldID, FieldContent, FieldMetadata, FieldCreatedAt}
		m.SupportedFilters = []string{"source", "branch_id"}
	})
	b, err := json.Marshal(m)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal(`{"adapter":"test",` +
		`"native_item_fields":["content","created_at","id","metadata","tags"],` +
		`"dropped_item_fields":[],"supported_filters":["branch_id","source"],` +
		`"search_consistency":"immediate","retrieve_fidelity":"full","search_fidelity":"full",` +
		`"search_returns_tags":true,"preserves_metadata":true}`))
	var back Manifest
	g.Expect(json.Unmarshal(b, &back)).To(Succeed())
	g.Expect(back.Equal(m)).To(BeTrue())
	g.Expect(back.Validate()).To(Succeed())
}

func TestManifestJSONDecodeRejectsMalformed(t *testing.T) {
	valid := `{"adapter":"a","native_item_fields":["id","created_at","metadata","content","tags"],` +
		`"dropped_item_fields":[],"supported_filters":[],"search_consistency":"immediate",` +
		`"retrieve_fidelity":"full","search_fidelity":"full","search_returns_tags":true,"preserves_metadata":true}`
	tests := []struct {
		name    string
		input   string
		wantSub string
	}{
		{"unknown field", strings.Replace(valid, `"adapter":"a",`, `"adapter":"a","ranked":true,`, 1), `unknown field "ranked"`},
		{"missing field", strings.Replace(valid, `"supported_filters":[],`, ``, 1), "missing required fields: [supported_filters]"},
		{"null counts as missing", strings.Replace(valid, `"dropped_item_fields":[]`, `"dropped_item_fields":null`, 1), "missing required fields: [dropped_item_fields]"},
		{"bool as string", strings.Replace(valid, `"search_returns_tags":true`, `"search_returns_tags":"true"`, 1), "cannot unmarshal string"},
		{"set as string", strings.Replace(valid, `"supported_filters":[]`, `"supported_filters":"source"`, 1), "cannot unmarshal string"},
		{"adapter as number", strings.Replace(valid, `"adapter":"a"`, `"adapter":1`, 1), "cannot unmarshal number"},
		{"trailing data", valid + `{}`, "trailing data"},
		{"not an object", `[]`, "cannot unmarshal array"},
		{"truncated", valid[:40], "unexpected EOF"},
		{"empty", ``, "EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			// UnmarshalJSON directly: json.Unmarshal would catch syntax errors before it.
			var m Manifest
			err := m.UnmarshalJSON([]byte(tt.input))
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantSub)))
			g.Expect(err.Error()).To(HavePrefix("decode manifest: "))
		})
	}
	// A decodable but incoherent manifest decodes; Validate is what rejects it.
	g := NewWithT(t)
	var m Manifest
	g.Expect(json.Unmarshal([]byte(strings.Replace(valid, `"preserves_metadata":true`, `"preserves_metadata":false`, 1)), &m)).To(Succeed())
	g.Expect(m.Validate()).To(MatchError("full retrieve fidelity must preserve every item field"))
}

func TestManifestDiffNamesTheFields(t *testing.T) {
	a := Manifest{Adapter: "x", NativeItemFields: []ItemField{FieldID, FieldContent}, SupportedFilters: []string{"source"},
		SearchConsistency: ConsistencyImmediate, RetrieveFidelity: FidelityFull, SearchFidelity: FidelityFull}
	if d := a.Diff(a); len(d) != 0 {
		t.Fatalf("a manifest differs from itself: %v", d)
	}
	b := a
	b.SupportedFilters = []string{"branch_id", "source"}
	b.SearchConsistency = ConsistencyEventual
	d := a.Diff(b)
	if len(d) != 2 || !strings.HasPrefix(d[0], "search_consistency: \"immediate\", expected \"eventual\"") ||
		!strings.HasPrefix(d[1], `supported_filters: ["source"], expected ["branch_id","source"]`) {
		t.Fatalf("diff %q", d)
	}
}
