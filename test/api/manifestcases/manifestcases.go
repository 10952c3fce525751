// Package manifestcases enumerates MemoryAdapter manifests for the Go/CEL parity tests: every
// combination of the manifest's fields, so that Manifest.Validate and the CRD's CEL rules can
// be compared exhaustively in-process and on a sample through a real API server.
package manifestcases

import (
	"fmt"

	v1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// FieldState is how a manifest classifies one item field.
type FieldState int

// The classifications of one item field. Both is outside the enumeration (native,
// dropped or neither) but is the only way to reach the "disjoint" rule, so the sweep adds it.
const (
	// Native lists the field in nativeItemFields only.
	Native FieldState = iota
	// Dropped lists the field in droppedItemFields only.
	Dropped
	// Neither leaves the field unclassified.
	Neither
	// Both lists the field in both sets.
	Both
)

var itemFields = []v1alpha1.ItemField{
	v1alpha1.ItemFieldID, v1alpha1.ItemFieldCreatedAt, v1alpha1.ItemFieldMetadata,
	v1alpha1.ItemFieldContent, v1alpha1.ItemFieldTags,
}

var fidelities = []v1alpha1.Fidelity{v1alpha1.FidelityFull, v1alpha1.FidelityNativeFields, v1alpha1.FidelityLossy}

var consistencies = []v1alpha1.SearchConsistency{v1alpha1.ConsistencyImmediate, v1alpha1.ConsistencyEventual}

// Case is one enumerated manifest with a readable name for failure messages.
type Case struct {
	// Name describes the combination.
	Name string
	// Fields is the item-field classification, one letter per field in the seed's order:
	// N native, D dropped, - neither, B both.
	Fields string
	// Manifest is the combination as the CRD spells it.
	Manifest v1alpha1.ManifestSpec
}

// All returns every combination: each of the five item fields in one of states, both
// fidelities over full/native_fields/lossy, both consistencies, both booleans, and
// supportedFilters empty or not. With states {Native, Dropped, Neither} that is
// 3^5*3*3*2*2*2*2 = 34992 cases; adding Both makes 4^5*144 = 147456.
func All(states ...FieldState) []Case {
	n := 1
	for range itemFields {
		n *= len(states)
	}
	out := make([]Case, 0, n*len(fidelities)*len(fidelities)*len(consistencies)*8)
	for code := 0; code < n; code++ {
		native := []v1alpha1.ItemField{}
		var dropped []v1alpha1.ItemField
		name := ""
		c := code
		for _, f := range itemFields {
			s := states[c%len(states)]
			c /= len(states)
			switch s {
			case Native:
				native = append(native, f)
				name += "N"
			case Dropped:
				dropped = append(dropped, f)
				name += "D"
			case Neither:
				name += "-"
			case Both:
				native = append(native, f)
				dropped = append(dropped, f)
				name += "B"
			}
		}
		for _, rf := range fidelities {
			for _, sf := range fidelities {
				for _, sc := range consistencies {
					for _, tags := range []bool{false, true} {
						for _, meta := range []bool{false, true} {
							for _, withFilters := range []bool{false, true} {
								m := v1alpha1.ManifestSpec{
									Adapter:           "sweep",
									NativeItemFields:  append([]v1alpha1.ItemField{}, native...),
									DroppedItemFields: append([]v1alpha1.ItemField(nil), dropped...),
									SearchConsistency: sc,
									RetrieveFidelity:  rf,
									SearchFidelity:    sf,
									SearchReturnsTags: tags,
									PreservesMetadata: meta,
								}
								if withFilters {
									m.SupportedFilters = []v1alpha1.FilterKey{"branch_id", "source"}
								}
								out = append(out, Case{
									Name: fmt.Sprintf("fields=%s retrieve=%s search=%s consistency=%s tags=%t metadata=%t filters=%t",
										name, rf, sf, sc, tags, meta, withFilters),
									Fields:   name,
									Manifest: m,
								})
							}
						}
					}
				}
			}
		}
	}
	return out
}
