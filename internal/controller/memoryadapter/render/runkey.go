package render

import (
	"fmt"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// RunKey identifies what one conformance run verifies.
type RunKey struct {
	ManifestHash   string
	ServiceVersion string
	AdapterVersion string
}

func (k RunKey) String() string {
	return fmt.Sprintf("manifest %s, service version %q, adapter version %q", k.ManifestHash, k.ServiceVersion, k.AdapterVersion)
}

// Matches reports whether a recorded run verified this key.
func (k RunKey) Matches(r *memoryv1alpha1.ConformanceResult) bool {
	return r != nil && r.ManifestHash == k.ManifestHash && r.ServiceVersion == k.ServiceVersion && r.AdapterVersion == k.AdapterVersion
}
