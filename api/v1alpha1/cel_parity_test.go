package v1alpha1_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	v1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/test/api/manifestcases"
)

const crdPath = "../../config/crd/bases/memory.agentmem.io_memoryadapters.yaml"

// TestCELParityExhaustive evaluates the generated CRD's CEL rules in-process, with the API
// server's own validator, on every combination of the manifest's fields, and requires the
// same verdict and message as memory.Manifest.Validate. Each CEL rule is guarded by the rules
// before it, so an incoherent manifest gets exactly one message: Go's first failing rule.
func TestCELParityExhaustive(t *testing.T) {
	g := NewWithT(t)
	crd, err := manifestcases.LoadCRD(crdPath)
	g.Expect(err).NotTo(HaveOccurred())
	v, err := manifestcases.NewManifestValidator(crd)
	g.Expect(err).NotTo(HaveOccurred())

	// The enumeration: every item field native, dropped or neither, crossed with
	// 3 x 3 fidelities, 2 consistencies, 2 x 2 booleans and 2 filter sets.
	cases := manifestcases.All(manifestcases.Native, manifestcases.Dropped, manifestcases.Neither)
	g.Expect(cases).To(HaveLen(34992))
	// That enumeration never lists a field in both sets, so it cannot reach the "disjoint" rule.
	// Add the classifications that do, every 16th combination of the other axes, which still
	// gives each of the 781 such classifications nine manifests.
	for i, c := range manifestcases.All(manifestcases.Native, manifestcases.Dropped, manifestcases.Neither, manifestcases.Both) {
		if i%16 == 0 && strings.Contains(c.Fields, "B") {
			cases = append(cases, c)
		}
	}
	g.Expect(len(cases)).To(BeNumerically(">", 34992+781*8))

	// The validator is safe for concurrent use (the API server shares it between requests),
	// so the sweep is spread over the available CPUs.
	type verdict struct {
		goMsg    string
		mismatch string
	}
	verdicts := make([]verdict, len(cases))
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(cases); i += workers {
				c := cases[i]
				goErr := c.Manifest.Validate()
				cel, err := v.Messages(c.Manifest)
				if err != nil {
					verdicts[i].mismatch = fmt.Sprintf("%s: %v", c.Name, err)
					continue
				}
				want := []string{}
				if goErr != nil {
					var ce *memory.CoherenceError
					if !errors.As(goErr, &ce) {
						verdicts[i].mismatch = fmt.Sprintf("%s: Go rejected the manifest for its shape, not coherence: %v", c.Name, goErr)
						continue
					}
					want = []string{ce.Message}
					verdicts[i].goMsg = ce.Message
				}
				if !slices.Equal(cel, want) {
					verdicts[i].mismatch = fmt.Sprintf("%s: Go says %q, CEL says %q", c.Name, want, cel)
				}
			}
		})
	}
	wg.Wait()

	hits := map[string]int{}
	mismatches := 0
	for _, vd := range verdicts {
		if vd.mismatch != "" {
			if mismatches < 10 {
				t.Error(vd.mismatch)
			}
			mismatches++
			continue
		}
		hits[vd.goMsg]++
	}
	g.Expect(mismatches).To(BeZero(), "Go and CEL disagree on %d of %d manifests", mismatches, len(cases))
	// The sweep must reach the coherent verdict and every one of the six rules, or it proves
	// nothing about them.
	g.Expect(hits).To(HaveKey(""))
	for _, msg := range memory.CoherenceMessages {
		g.Expect(hits).To(HaveKeyWithValue(msg, BeNumerically(">", 0)), "no manifest in the sweep breaks %q first", msg)
	}
	t.Logf("verdicts: %v", hits)
}

// The manifest rules must also hold on update, where the immutability rule joins them.
func TestCELManifestImmutable(t *testing.T) {
	g := NewWithT(t)
	crd, err := manifestcases.LoadCRD(crdPath)
	g.Expect(err).NotTo(HaveOccurred())
	v, err := manifestcases.NewManifestValidator(crd)
	g.Expect(err).NotTo(HaveOccurred())

	old := v1alpha1.ManifestFromMemory(memory.Manifest{
		Adapter:           "sqlite",
		NativeItemFields:  []memory.ItemField{memory.FieldID, memory.FieldCreatedAt, memory.FieldMetadata, memory.FieldContent, memory.FieldTags},
		SearchConsistency: memory.ConsistencyImmediate,
		RetrieveFidelity:  memory.FidelityFull,
		SearchFidelity:    memory.FidelityFull,
		SearchReturnsTags: true,
		PreservesMetadata: true,
	})
	errs, err := v.Errors(old, &old)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(errs).To(BeEmpty(), "an unchanged manifest must pass")

	changed := *old.DeepCopy()
	changed.SearchConsistency = v1alpha1.ConsistencyEventual
	errs, err = v.Errors(changed, &old)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0].Detail).To(Equal("manifest is immutable: create a new MemoryAdapter to publish a different contract"))
}
