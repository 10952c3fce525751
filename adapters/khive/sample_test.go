package khive

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// TestSampleDeclaresTheVerifiedManifest keeps config/samples' Khive MemoryAdapter in step
// with the manifest this adapter publishes: the conformance Job fails an adapter whose
// published manifest differs from spec.manifest.
func TestSampleDeclaresTheVerifiedManifest(t *testing.T) {
	b, err := os.ReadFile("../../config/samples/extra/memory_v1alpha1_memoryadapter_khive.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ma v1alpha1.MemoryAdapter
	if err := yaml.UnmarshalStrict(b, &ma); err != nil {
		t.Fatal(err)
	}
	got, want := ma.Spec.Manifest.ToMemory(), Manifest(AdapterID)
	if !got.Equal(want) {
		t.Fatalf("sample manifest %s, adapter publishes %s", got.Hash(), want.Hash())
	}
}
