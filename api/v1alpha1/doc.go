// Package v1alpha1 holds the memory.agentmem.io/v1alpha1 API: the MemoryAdapter custom
// resource that declares a memory adapter's backend and the fidelity manifest it publishes.
//
// The manifest part of the API mirrors api/memory.Manifest field for field. The seed's six
// coherence rules are enforced twice, by Manifest.Validate in Go and by CEL rules in the CRD
// schema, with the same messages, so an incoherent manifest never enters the cluster and a user
// reads the same sentence whichever side rejected it. Conversion between the two shapes lives
// in manifest_conversion.go; the manifest hash the operator keys conformance runs on is
// memory.Manifest.Hash of the converted value.
//
// +kubebuilder:object:generate=true
// +groupName=memory.agentmem.io
package v1alpha1
