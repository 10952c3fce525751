package v1alpha1

import "github.com/agentmem/memory-adapter-operator/api/memory"

// ToMemory converts the CRD manifest to the Go contract's Manifest. Set fields come out
// sorted and free of duplicates (memory.Manifest.Normalize), and never nil, so the result
// validates, compares and hashes the same however the YAML listed them.
func (m ManifestSpec) ToMemory() memory.Manifest {
	out := memory.Manifest{
		Adapter:           m.Adapter,
		NativeItemFields:  make([]memory.ItemField, 0, len(m.NativeItemFields)),
		DroppedItemFields: make([]memory.ItemField, 0, len(m.DroppedItemFields)),
		SupportedFilters:  make([]string, 0, len(m.SupportedFilters)),
		SearchConsistency: memory.SearchConsistency(m.SearchConsistency),
		RetrieveFidelity:  memory.Fidelity(m.RetrieveFidelity),
		SearchFidelity:    memory.Fidelity(m.SearchFidelity),
		SearchReturnsTags: m.SearchReturnsTags,
		PreservesMetadata: m.PreservesMetadata,
	}
	for _, f := range m.NativeItemFields {
		out.NativeItemFields = append(out.NativeItemFields, memory.ItemField(f))
	}
	for _, f := range m.DroppedItemFields {
		out.DroppedItemFields = append(out.DroppedItemFields, memory.ItemField(f))
	}
	for _, k := range m.SupportedFilters {
		out.SupportedFilters = append(out.SupportedFilters, string(k))
	}
	return out.Normalize()
}

// ManifestFromMemory converts a Go contract Manifest to the CRD manifest, with set fields
// sorted and unique. nativeItemFields is never nil, because the CRD requires the field even
// when it is empty; the optional sets are nil when empty, matching their omitted form.
func ManifestFromMemory(m memory.Manifest) ManifestSpec {
	n := m.Normalize()
	out := ManifestSpec{
		Adapter:           n.Adapter,
		NativeItemFields:  make([]ItemField, 0, len(n.NativeItemFields)),
		SearchConsistency: SearchConsistency(n.SearchConsistency),
		RetrieveFidelity:  Fidelity(n.RetrieveFidelity),
		SearchFidelity:    Fidelity(n.SearchFidelity),
		SearchReturnsTags: n.SearchReturnsTags,
		PreservesMetadata: n.PreservesMetadata,
	}
	for _, f := range n.NativeItemFields {
		out.NativeItemFields = append(out.NativeItemFields, ItemField(f))
	}
	for _, f := range n.DroppedItemFields {
		out.DroppedItemFields = append(out.DroppedItemFields, ItemField(f))
	}
	for _, k := range n.SupportedFilters {
		out.SupportedFilters = append(out.SupportedFilters, FilterKey(k))
	}
	return out
}

// Hash is the manifest hash the operator keys conformance runs on. It is
// memory.Manifest.Hash of the converted value, so an adapter computing the hash of the
// manifest it serves gets the same string.
func (m ManifestSpec) Hash() string { return m.ToMemory().Hash() }

// Validate applies api/memory's Manifest.Validate to the converted manifest: the shape checks
// and the seed's six coherence rules, first failure first.
func (m ManifestSpec) Validate() error { return m.ToMemory().Validate() }
