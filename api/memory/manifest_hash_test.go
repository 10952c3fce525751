package memory

import (
	"encoding/json"
	"os"
	"testing"

	. "github.com/onsi/gomega"
)

// hashVector is one known-answer vector of testdata/manifest_hash_vectors.json. The file is
// the conformance README's table in machine form: non-Go adapters check their own hash
// against it, so this test pins the Go side to the same bytes.
type hashVector struct {
	Name         string          `json:"name"`
	Shows        string          `json:"shows"`
	Manifest     json.RawMessage `json:"manifest"`
	Canonical    string          `json:"canonical"`
	ManifestHash string          `json:"manifest_hash"`
}

// TestManifestHashVectors fails when the canonical form changes. The expected hashes were
// computed with sha256sum over hand-written canonical strings, not with this package, so a
// change here is a wire change: every stored conformance result and every non-Go adapter's
// hash would stop matching.
func TestManifestHashVectors(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile("testdata/manifest_hash_vectors.json")
	g.Expect(err).NotTo(HaveOccurred())
	var file struct {
		Vectors []hashVector `json:"vectors"`
	}
	g.Expect(json.Unmarshal(raw, &file)).To(Succeed())
	g.Expect(len(file.Vectors)).To(BeNumerically(">=", 4))

	for _, v := range file.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			g := NewWithT(t)
			var m Manifest
			g.Expect(json.Unmarshal(v.Manifest, &m)).To(Succeed())
			// The vectors are manifests an adapter may publish, not edge cases of the decoder.
			g.Expect(m.Validate()).To(Succeed())

			canonical, err := json.Marshal(m)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(canonical)).To(Equal(v.Canonical), "canonical string")
			g.Expect(m.Hash()).To(Equal(v.ManifestHash), "Hash()")

			// The canonical string is itself a wire manifest and a fixed point, so an
			// implementation may hash what it serves without keeping the input around.
			var again Manifest
			g.Expect(json.Unmarshal([]byte(v.Canonical), &again)).To(Succeed())
			g.Expect(again.Hash()).To(Equal(v.ManifestHash), "Hash() of the decoded canonical string")
		})
	}
}

// TestManifestHashAbsentLists checks that nil lists, as the CRD produces for an omitted
// droppedItemFields or supportedFilters, hash as empty lists: the canonical form has no null.
func TestManifestHashAbsentLists(t *testing.T) {
	g := NewWithT(t)
	m := Manifest{
		Adapter:           "acme-vector-store",
		NativeItemFields:  []ItemField{FieldID, FieldContent, FieldTags},
		DroppedItemFields: []ItemField{FieldMetadata, FieldCreatedAt},
		SearchConsistency: ConsistencyEventual,
		RetrieveFidelity:  FidelityLossy,
		SearchFidelity:    FidelityLossy,
	}
	// The lossy-eventual vector: the same manifest with "supported_filters": [].
	g.Expect(m.Hash()).To(Equal("sha256:369f63149ce0e581ec224627a96e3585d935a89ee09e19dd5e3160312500c4bc"))
}
