package prometheus

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestPrometheusRuleHoldsTheRulesFile fails when config/prometheus/prometheus_rule.yaml and
// alerts.rules.yaml drift apart: promtool tests only the plain file, so the PrometheusRule
// must be that file's groups and nothing else.
func TestPrometheusRuleHoldsTheRulesFile(t *testing.T) {
	dir := filepath.Join("..", "..", "config", "prometheus")
	read := func(name string) map[string]any {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := yaml.UnmarshalStrict(b, &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return out
	}
	rules := read("alerts.rules.yaml")
	pr := read("prometheus_rule.yaml")
	if pr["apiVersion"] != "monitoring.coreos.com/v1" || pr["kind"] != "PrometheusRule" {
		t.Fatalf("prometheus_rule.yaml is %v %v, want monitoring.coreos.com/v1 PrometheusRule", pr["apiVersion"], pr["kind"])
	}
	groups, ok := rules["groups"].([]any)
	if !ok || len(groups) == 0 || len(rules) != 1 {
		t.Fatalf("alerts.rules.yaml must hold only a non-empty groups list, has %v", rules)
	}
	if !reflect.DeepEqual(rules, pr["spec"]) {
		want, _ := yaml.Marshal(rules)
		got, _ := yaml.Marshal(pr["spec"])
		t.Fatalf("the PrometheusRule's spec differs from alerts.rules.yaml; the rules file:\n%s\nthe PrometheusRule's spec:\n%s", want, got)
	}
}
