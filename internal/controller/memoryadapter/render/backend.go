package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// entry is the backend table's entry for a spec.backend.type. A type this build does not
// link gets an entry with nothing of its own (no flags, no volume, no purge, conservative
// timeouts), so rendering never fails on it; BackendErr refuses such a spec.
func entry(t memoryv1alpha1.BackendType) *backend.Backend {
	if b, ok := backend.ForType(t); ok {
		return b
	}
	return &backend.Backend{
		Name: strings.ToLower(string(t)), Type: t, UserDescribed: true,
		Lifecycle: backend.Lifecycle(5*time.Second, 30*time.Second, backend.NoRetries()),
	}
}

// BackendErr refuses a spec this operator cannot deploy: a backend type it is not built
// with, or one whose parts are not in the operator's adapter image without spec.image.
func BackendErr(ma *memoryv1alpha1.MemoryAdapter) error {
	t := ma.Spec.Backend.Type
	b, ok := backend.ForType(t)
	if !ok {
		have := make([]string, 0, 8)
		for _, known := range backend.Types() {
			have = append(have, string(known))
		}
		return fmt.Errorf("spec.backend.type %s is not a backend this operator is built with (it has %s)", t, strings.Join(have, ", "))
	}
	if b.ImageRequired != "" && ma.Spec.Image == nil {
		return fmt.Errorf("spec.image is required when spec.backend.type is %s: %s", t, b.ImageRequired)
	}
	return nil
}

// BackendFlag is the serve/conformance --backend value of a backend type.
func BackendFlag(t memoryv1alpha1.BackendType) string { return entry(t).Name }

// UsesDataClaim reports whether the backend keeps its database in a volume the adapter
// owns (SQLite's file, kkernel's for Khive).
func UsesDataClaim(ma *memoryv1alpha1.MemoryAdapter) bool {
	return entry(ma.Spec.Backend.Type).DataVolume != nil
}
