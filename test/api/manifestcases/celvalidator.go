package manifestcases

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// LoadCRD reads one generated CustomResourceDefinition file.
func LoadCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CRD: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		return nil, fmt.Errorf("decode CRD %s: %w", path, err)
	}
	return crd, nil
}

// ManifestValidator evaluates the CEL rules of a CRD's spec.manifest schema in-process with the
// API server's own validator, so that the exhaustive sweep needs no server round trip.
type ManifestValidator struct {
	structural *schema.Structural
	validator  *cel.Validator
}

// NewManifestValidator builds the validator for spec.manifest of the CRD's v1alpha1 version.
func NewManifestValidator(crd *apiextensionsv1.CustomResourceDefinition) (*ManifestValidator, error) {
	var props *apiextensionsv1.JSONSchemaProps
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == v1alpha1.GroupVersion.Version && crd.Spec.Versions[i].Schema != nil {
			props = crd.Spec.Versions[i].Schema.OpenAPIV3Schema
		}
	}
	if props == nil {
		return nil, fmt.Errorf("CRD %s has no %s schema", crd.Name, v1alpha1.GroupVersion.Version)
	}
	internal := &apiextensionsinternal.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props, internal, nil); err != nil {
		return nil, fmt.Errorf("convert schema: %w", err)
	}
	root, err := schema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("structural schema: %w", err)
	}
	spec, ok := root.Properties["spec"]
	if !ok {
		return nil, fmt.Errorf("schema has no spec")
	}
	manifest, ok := spec.Properties["manifest"]
	if !ok {
		return nil, fmt.Errorf("schema has no spec.manifest")
	}
	v := cel.NewValidator(&manifest, false, celconfig.PerCallLimit)
	if v == nil {
		return nil, fmt.Errorf("spec.manifest carries no CEL rules")
	}
	return &ManifestValidator{structural: &manifest, validator: v}, nil
}

// Errors evaluates the rules on m (a create when old is nil, an update otherwise) and returns
// the field errors the API server would report from CEL.
func (v *ManifestValidator) Errors(m v1alpha1.ManifestSpec, old *v1alpha1.ManifestSpec) (field.ErrorList, error) {
	obj, err := toUnstructured(m)
	if err != nil {
		return nil, err
	}
	var oldObj any
	if old != nil {
		if oldObj, err = toUnstructured(*old); err != nil {
			return nil, err
		}
	}
	errs, _ := v.validator.Validate(context.Background(), field.NewPath("spec", "manifest"), v.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
	return errs, nil
}

// Messages is Errors reduced to the messages, in rule order.
func (v *ManifestValidator) Messages(m v1alpha1.ManifestSpec) ([]string, error) {
	errs, err := v.Errors(m, nil)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Detail)
	}
	return out, nil
}

func toUnstructured(m v1alpha1.ManifestSpec) (map[string]any, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshal manifest: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("unmarshal manifest: %w", err)
	}
	return out, nil
}
