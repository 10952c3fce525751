package render

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// TestMetricsPort: the operator's adapter serves /metrics on a port of its own, and the
// NetworkPolicy opens that port, and only that port, to the installation's monitoring
// namespace when there is one; an External server gets neither (its image's metrics are its
// own), and no monitoring namespace opens nothing.
func TestMetricsPort(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		ma                       *memoryv1alpha1.MemoryAdapter
		monitoring               string
		wantPort, wantMetricRule bool
	}{
		{"operator's adapter, no monitoring namespace", placedAdapter(memoryv1alpha1.BackendPostgres, 1), "", true, false},
		{"operator's adapter, monitoring namespace", placedAdapter(memoryv1alpha1.BackendPostgres, 1), "monitoring", true, true},
		{"External server, monitoring namespace", externalAdapter(&memoryv1alpha1.ExternalOptions{Command: []string{"srv"}}), "monitoring", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Deployment(tc.ma, EffectiveSettings(tc.ma, "img")).Spec.Template.Spec.Containers[0]
			hasPort := slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
				return p.Name == "metrics" && p.ContainerPort == MetricsPort
			})
			hasFlag := slices.Contains(c.Args, "--metrics-listen")
			if hasPort != tc.wantPort || hasFlag != tc.wantPort {
				t.Errorf("metrics port %v, --metrics-listen %v; want %v", hasPort, hasFlag, tc.wantPort)
			}
			if c.Ports[0].Name != "http" {
				t.Errorf("the data port is not the first: %v", c.Ports)
			}

			np := NetworkPolicy(tc.ma, "ops", tc.monitoring)
			want := 1
			if tc.wantMetricRule {
				want = 2
			}
			if len(np.Spec.Ingress) != want {
				t.Fatalf("%d ingress rules, want %d", len(np.Spec.Ingress), want)
			}
			for _, peer := range np.Spec.Ingress[0].From {
				if peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == tc.monitoring {
					t.Errorf("the data port admits the monitoring namespace: %v", peer)
				}
			}
			if !tc.wantMetricRule {
				return
			}
			rule := np.Spec.Ingress[1]
			if len(rule.Ports) != 1 || rule.Ports[0].Port.IntVal != MetricsPort {
				t.Errorf("the monitoring rule opens %v, want the metrics port alone", rule.Ports)
			}
			if len(rule.From) != 1 || rule.From[0].PodSelector != nil ||
				rule.From[0].NamespaceSelector == nil || len(rule.From[0].NamespaceSelector.MatchLabels) != 1 ||
				rule.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != tc.monitoring {
				t.Errorf("the monitoring rule admits %v, want exactly namespace %s", rule.From, tc.monitoring)
			}
		})
	}
}
