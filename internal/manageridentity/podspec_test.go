package manageridentity_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodPolicyKeepsEveryPodSpecField fails when the Kubernetes API the operator is built
// against gains a PodSpec field that the pod policy does not hold constant: a new mutable
// field would otherwise be a write the manager could make unchecked.
func TestPodPolicyKeepsEveryPodSpecField(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "policy", "pods_policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	policy := string(raw)
	typ := reflect.TypeOf(corev1.PodSpec{})
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || name == "schedulingGates" {
			continue
		}
		if want := "object.spec.?" + name + " == oldObject.spec.?" + name; !strings.Contains(policy, want) {
			t.Errorf("config/policy/pods_policy.yaml does not keep spec.%s: add %q to specKept", name, want)
		}
	}
	if !strings.Contains(policy, "gatesOnlyLoseOurs") {
		t.Error("config/policy/pods_policy.yaml no longer limits spec.schedulingGates")
	}
}
