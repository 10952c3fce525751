package condtest

import (
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StatusOwners returns, for each top-level status field of an object (named as managedFields
// name it, e.g. "f:conditions"), the field managers that own it through the status
// subresource. A field with two owners is a field two writers fight over.
func StatusOwners(entries []metav1.ManagedFieldsEntry) (map[string][]string, error) {
	owners := map[string][]string{}
	for _, e := range entries {
		if e.Subresource != "status" || e.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status map[string]json.RawMessage `json:"f:status"`
		}
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields); err != nil {
			return nil, fmt.Errorf("managedFields entry of %s: %w", e.Manager, err)
		}
		for f := range fields.Status {
			if f == "." {
				continue
			}
			if !slices.Contains(owners[f], e.Manager) {
				owners[f] = append(owners[f], e.Manager)
			}
		}
	}
	return owners, nil
}
