package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/test/api/manifestcases"
)

// TestCRDBoundsAreTheContractLimits pins every bound the CRD shares with the contract to its
// one Go definition in api/memory, so a marker edited by hand (or a constant changed without
// regenerating the CRD) fails here instead of letting admission and the adapters disagree.
func TestCRDBoundsAreTheContractLimits(t *testing.T) {
	g := NewWithT(t)
	crd, err := manifestcases.LoadCRD(crdPath)
	g.Expect(err).NotTo(HaveOccurred())
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	manifest := spec.Properties["manifest"]
	scope := spec.Properties["backend"].Properties["scope"]
	filters := manifest.Properties["supportedFilters"]

	tests := []struct {
		name string
		got  any
		want any
	}{
		{"backend.scope maxLength", deref(scope.MaxLength), int64(memory.MaxScopeLength)},
		{"backend.scope pattern", scope.Pattern, memory.ScopePattern},
		{"manifest.adapter maxLength", deref(manifest.Properties["adapter"].MaxLength), int64(memory.MaxAdapterIDLength)},
		{"manifest.adapter byte rule", byteRule(manifest.Properties["adapter"]), memory.MaxAdapterIDLength},
		{"manifest.supportedFilters maxItems", deref(filters.MaxItems), int64(memory.MaxSupportedFilters)},
		{"manifest.supportedFilters[] maxLength", deref(filters.Items.Schema.MaxLength), int64(memory.MaxFilterKeyLength)},
		{"manifest.supportedFilters[] byte rule", byteRule(*filters.Items.Schema), memory.MaxFilterKeyLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.got).To(Equal(tt.want))
		})
	}
}

// TestWireBoundsAreTheContractLimits does the same for the wire's OpenAPI document, which
// the server's responses are validated against.
func TestWireBoundsAreTheContractLimits(t *testing.T) {
	g := NewWithT(t)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					MaxLength *int64 `json:"maxLength"`
					MaxItems  *int64 `json:"maxItems"`
					Items     *struct {
						MaxLength *int64 `json:"maxLength"`
					} `json:"items"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	g.Expect(yaml.Unmarshal(memory.OpenAPI, &doc)).To(Succeed())
	m := doc.Components.Schemas["Manifest"].Properties
	g.Expect(m).To(HaveKey("supported_filters"))
	g.Expect(m["adapter"].MaxLength).To(HaveValue(BeEquivalentTo(memory.MaxAdapterIDLength)))
	g.Expect(m["supported_filters"].MaxItems).To(HaveValue(BeEquivalentTo(memory.MaxSupportedFilters)))
	g.Expect(m["supported_filters"].Items).NotTo(BeNil())
	g.Expect(m["supported_filters"].Items.MaxLength).To(HaveValue(BeEquivalentTo(memory.MaxFilterKeyLength)))
}

func deref(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// byteRule returns the bound of the schema's "bytes(self).size() <= N" CEL rule, or -1.
func byteRule(s apiextensionsv1.JSONSchemaProps) int {
	for _, r := range s.XValidations {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(r.Rule), "bytes(self).size() <= %d", &n); err == nil {
			return n
		}
	}
	return -1
}
