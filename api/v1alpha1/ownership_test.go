package v1alpha1_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/agentmem/memory-adapter-operator/test/api/manifestcases"
)

// TestStatusStructsAreAtomic pins which status structs managedFields tracks as one field: those
// the MemoryAdapter controller always writes whole. Tracked leaf by leaf they made the managed
// fields half of an Available adapter's bytes, which the API server recomputes on every status
// write. The gate controller's workloads and the spec stay granular: there, per-field ownership
// tells apart writers that exist.
func TestStatusStructsAreAtomic(t *testing.T) {
	g := NewWithT(t)
	crd, err := manifestcases.LoadCRD(crdPath)
	g.Expect(err).NotTo(HaveOccurred())
	schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	status := schema.Properties["status"].Properties

	atomic := []string{"conformance", "evidence", "lifecycle", "binding", "tls", "token", "access"}
	for _, name := range atomic {
		g.Expect(status).To(HaveKey(name))
		g.Expect(status[name].XMapType).To(HaveValue(Equal("atomic")), "status.%s", name)
	}
	for name, prop := range status {
		if prop.Type == "object" && prop.XMapType == nil {
			g.Expect(name).To(Equal("workloads"), "status.%s is an object tracked leaf by leaf: make it atomic or say here why not", name)
		}
	}
	g.Expect(schema.Properties["spec"].Properties["lifecycle"].XMapType).To(BeNil(), "spec.lifecycle is the user's, merged by their apply")
}
