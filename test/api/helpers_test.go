package apitest

import (
	"errors"
	"slices"
	"strings"

	. "github.com/onsi/gomega"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	v1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

const msgManifestImmutable = "manifest is immutable: create a new MemoryAdapter to publish a different contract"

// fullManifest is a coherent full-fidelity manifest, the SQLite adapter's.
func fullManifest() v1alpha1.ManifestSpec {
	return v1alpha1.ManifestSpec{
		Adapter: "sqlite",
		NativeItemFields: []v1alpha1.ItemField{
			v1alpha1.ItemFieldID, v1alpha1.ItemFieldCreatedAt, v1alpha1.ItemFieldMetadata,
			v1alpha1.ItemFieldContent, v1alpha1.ItemFieldTags,
		},
		SupportedFilters:  []v1alpha1.FilterKey{"branch_id"},
		SearchConsistency: v1alpha1.ConsistencyImmediate,
		RetrieveFidelity:  v1alpha1.FidelityFull,
		SearchFidelity:    v1alpha1.FidelityFull,
		SearchReturnsTags: true,
		PreservesMetadata: true,
	}
}

// newAdapter wraps a manifest in an otherwise valid SQLite MemoryAdapter.
func newAdapter(ns string, m v1alpha1.ManifestSpec) *v1alpha1.MemoryAdapter {
	return &v1alpha1.MemoryAdapter{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "madp-"},
		Spec: v1alpha1.MemoryAdapterSpec{
			Manifest: m,
			Backend:  v1alpha1.BackendSpec{Type: v1alpha1.BackendSQLite, Scope: "agents"},
			Replicas: ptr.To[int32](1),
		},
	}
}

// toUnstructured turns a typed adapter into the map form, so hostile specs can carry values
// the Go types would never produce.
func toUnstructured(a *v1alpha1.MemoryAdapter) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("MemoryAdapter"))
	return u
}

// statusCauses returns the field causes of an Invalid API error.
func statusCauses(err error) []metav1.StatusCause {
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Details == nil {
		return nil
	}
	return se.ErrStatus.Details.Causes
}

// manifestRuleMessages returns, in rule order, which of the seed's six coherence messages and
// the immutability message the API server reported for spec.manifest.
func manifestRuleMessages(err error) []string {
	known := append(slices.Clone(memory.CoherenceMessages), msgManifestImmutable)
	var out []string
	for _, msg := range known {
		for _, c := range statusCauses(err) {
			if c.Field == "spec.manifest" && strings.HasSuffix(c.Message, msg) {
				out = append(out, msg)
				break
			}
		}
	}
	return out
}
