package v1alpha1

import (
	"slices"
	"strings"
	"testing"
)

// FuzzManifestConversion checks the conversion invariants on arbitrary manifests: converting
// to api/memory and back is stable after one step, the hash does not depend on set order or
// duplicates, and the Go verdict survives the round trip.
func FuzzManifestConversion(f *testing.F) {
	f.Add("sqlite", "id,created_at,metadata,content,tags", "", "branch_id,source", "immediate", "full", "full", true, true)
	f.Add("khive", "id,content,tags", "metadata,created_at", "", "eventual", "native_fields", "lossy", false, false)
	f.Add("", "id,id,bogus", "id", ",", "never", "perfect", "", true, false)
	f.Fuzz(func(t *testing.T, adapter, native, dropped, filters, consistency, retrieve, search string, tags, meta bool) {
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		spec := ManifestSpec{
			Adapter:           adapter,
			SearchConsistency: SearchConsistency(consistency),
			RetrieveFidelity:  Fidelity(retrieve),
			SearchFidelity:    Fidelity(search),
			SearchReturnsTags: tags,
			PreservesMetadata: meta,
		}
		for _, s := range split(native) {
			spec.NativeItemFields = append(spec.NativeItemFields, ItemField(s))
		}
		for _, s := range split(dropped) {
			spec.DroppedItemFields = append(spec.DroppedItemFields, ItemField(s))
		}
		for _, s := range split(filters) {
			spec.SupportedFilters = append(spec.SupportedFilters, FilterKey(s))
		}

		m := spec.ToMemory()
		back := ManifestFromMemory(m)
		if !slices.Equal(back.ToMemory().NativeItemFields, m.NativeItemFields) || !back.ToMemory().Equal(m) {
			t.Fatalf("round trip changed the manifest: %+v -> %+v", m, back.ToMemory())
		}
		if back.Hash() != spec.Hash() || spec.Hash() != m.Hash() {
			t.Fatalf("hash differs between the two shapes")
		}
		if (back.Validate() == nil) != (spec.Validate() == nil) {
			t.Fatalf("verdict changed across the round trip: %v vs %v", spec.Validate(), back.Validate())
		}

		reordered := *spec.DeepCopy()
		slices.Reverse(reordered.NativeItemFields)
		reordered.DroppedItemFields = append(reordered.DroppedItemFields, reordered.DroppedItemFields...)
		slices.Reverse(reordered.SupportedFilters)
		if reordered.Hash() != spec.Hash() {
			t.Fatalf("set order or duplicates changed the hash")
		}
	})
}
