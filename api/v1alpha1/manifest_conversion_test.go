package v1alpha1

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func fullManifest() memory.Manifest {
	return memory.Manifest{
		Adapter:           "sqlite",
		NativeItemFields:  []memory.ItemField{memory.FieldTags, memory.FieldID, memory.FieldContent, memory.FieldMetadata, memory.FieldCreatedAt},
		DroppedItemFields: []memory.ItemField{},
		SupportedFilters:  []string{"source", "branch_id"},
		SearchConsistency: memory.ConsistencyImmediate,
		RetrieveFidelity:  memory.FidelityFull,
		SearchFidelity:    memory.FidelityFull,
		SearchReturnsTags: true,
		PreservesMetadata: true,
	}
}

func TestManifestConversionRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   memory.Manifest
	}{
		{name: "full", in: fullManifest()},
		{name: "lossy eventual with drops", in: memory.Manifest{
			Adapter:           "khive",
			NativeItemFields:  []memory.ItemField{memory.FieldID, memory.FieldContent, memory.FieldTags},
			DroppedItemFields: []memory.ItemField{memory.FieldMetadata, memory.FieldCreatedAt},
			SearchConsistency: memory.ConsistencyEventual,
			RetrieveFidelity:  memory.FidelityNativeFields,
			SearchFidelity:    memory.FidelityLossy,
		}},
		{name: "nil sets", in: memory.Manifest{Adapter: "x", SearchConsistency: memory.ConsistencyEventual,
			RetrieveFidelity: memory.FidelityLossy, SearchFidelity: memory.FidelityLossy}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := ManifestFromMemory(tt.in)
			g.Expect(spec.NativeItemFields).NotTo(BeNil(), "nativeItemFields is required by the CRD, so it must serialise as [] rather than null")
			back := spec.ToMemory()
			g.Expect(back.Equal(tt.in)).To(BeTrue(), "round trip changed the manifest: %+v -> %+v", tt.in, back)
			g.Expect(back).To(Equal(tt.in.Normalize()))
			g.Expect(spec.Hash()).To(Equal(tt.in.Hash()))
			g.Expect(ManifestFromMemory(back)).To(Equal(spec))
		})
	}
}

func TestManifestToMemoryNormalizes(t *testing.T) {
	g := NewWithT(t)
	a := ManifestSpec{
		Adapter:           "pg",
		NativeItemFields:  []ItemField{ItemFieldTags, ItemFieldContent, ItemFieldID, ItemFieldMetadata, ItemFieldCreatedAt},
		SupportedFilters:  []FilterKey{"z", "a", "m"},
		SearchConsistency: ConsistencyImmediate,
		RetrieveFidelity:  FidelityFull,
		SearchFidelity:    FidelityFull,
		SearchReturnsTags: true,
		PreservesMetadata: true,
	}
	b := a.DeepCopy()
	slices.Reverse(b.NativeItemFields)
	slices.Reverse(b.SupportedFilters)
	m := a.ToMemory()
	g.Expect(m.SupportedFilters).To(Equal([]string{"a", "m", "z"}))
	g.Expect(m.DroppedItemFields).To(Equal([]memory.ItemField{}))
	g.Expect(a.Hash()).To(Equal(b.Hash()), "set order must not change the hash")
	g.Expect(a.Hash()).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	g.Expect(a.Validate()).To(Succeed())
}

// Every field of the manifest must take part in the hash; otherwise two different contracts
// would share conformance results.
func TestManifestHashCoversEveryField(t *testing.T) {
	base := ManifestFromMemory(fullManifest())
	mutations := map[string]func(m *ManifestSpec){
		"adapter":           func(m *ManifestSpec) { m.Adapter = "other" },
		"nativeItemFields":  func(m *ManifestSpec) { m.NativeItemFields = m.NativeItemFields[1:] },
		"droppedItemFields": func(m *ManifestSpec) { m.DroppedItemFields = []ItemField{ItemFieldCreatedAt} },
		"supportedFilters":  func(m *ManifestSpec) { m.SupportedFilters = nil },
		"searchConsistency": func(m *ManifestSpec) { m.SearchConsistency = ConsistencyEventual },
		"retrieveFidelity":  func(m *ManifestSpec) { m.RetrieveFidelity = FidelityLossy },
		"searchFidelity":    func(m *ManifestSpec) { m.SearchFidelity = FidelityNativeFields },
		"searchReturnsTags": func(m *ManifestSpec) { m.SearchReturnsTags = false },
		"preservesMetadata": func(m *ManifestSpec) { m.PreservesMetadata = false },
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			m := *base.DeepCopy()
			mutate(&m)
			g.Expect(m.Hash()).NotTo(Equal(base.Hash()))
		})
	}
}

// The CRD's JSON names are camelCase, while the wire manifest uses the seed's snake_case; the
// conversion, not a JSON round trip, is the bridge. This pins the CRD names.
func TestManifestSpecJSONNames(t *testing.T) {
	g := NewWithT(t)
	b, err := json.Marshal(ManifestSpec{Adapter: "a", NativeItemFields: []ItemField{}})
	g.Expect(err).NotTo(HaveOccurred())
	var got map[string]any
	g.Expect(json.Unmarshal(b, &got)).To(Succeed())
	g.Expect(got).To(HaveKey("nativeItemFields"))
	g.Expect(got["nativeItemFields"]).To(Equal([]any{}))
	g.Expect(got).NotTo(HaveKey("droppedItemFields"), "an empty optional set is omitted")
	for _, k := range []string{"adapter", "searchConsistency", "retrieveFidelity", "searchFidelity", "searchReturnsTags", "preservesMetadata"} {
		g.Expect(got).To(HaveKey(k))
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "30s", want: 30 * time.Second},
		{in: "1h0m0s", want: time.Hour},
		{in: "1.5µs", want: 1500 * time.Nanosecond},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "", wantErr: true},
		{in: "-1s", wantErr: true},
		{in: "forever", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Duration(tt.in).Parse()
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				g.Expect((*Duration)(&tt.in).Or(7 * time.Second)).To(Equal(7 * time.Second))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(NewDuration(tt.want).Parse()).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	var nilDur *Duration
	g.Expect(nilDur.Or(time.Minute)).To(Equal(time.Minute))
}
