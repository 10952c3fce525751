package apitest

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// The PodMonitor cannot be dry-run here (the Prometheus Operator's CRDs are not served by the
// module proxy), so this spec ties it to what the operator renders: a PodMonitor whose
// selector or port name drifted from the adapter's pods would scrape nothing, silently.
var _ = Describe("config/prometheus's PodMonitor", func() {
	It("selects the operator's adapter pods, at the port serving the adapter's metrics, and relabels the adapter's name", func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "prometheus", "podmonitor.yaml"))
		Expect(err).NotTo(HaveOccurred())
		objs, err := splitObjects(b)
		Expect(err).NotTo(HaveOccurred())
		Expect(objs).To(HaveLen(1))
		pm := objs[0]
		Expect(pm.GetKind()).To(Equal("PodMonitor"))

		ma := &memoryv1alpha1.MemoryAdapter{}
		ma.Name, ma.Namespace = "mem", "team"
		ma.Spec.Image = ptr.To("img")
		ma.Spec.Manifest.Adapter = "sqlite"
		ma.Spec.Backend = memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendSQLite, Scope: "agents"}
		dep := render.Deployment(ma, render.EffectiveSettings(ma, "img"))
		podLabels := dep.Spec.Template.Labels

		selector, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
		Expect(selector).NotTo(BeEmpty())
		for k, v := range selector {
			Expect(podLabels).To(HaveKeyWithValue(k, v), "the adapter's pods lack the PodMonitor's selector label %s", k)
		}
		anyNS, _, _ := unstructured.NestedBool(pm.Object, "spec", "namespaceSelector", "any")
		Expect(anyNS).To(BeTrue(), "adapters live in every namespace")

		endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
		Expect(endpoints).To(HaveLen(1))
		ep := endpoints[0].(map[string]any)
		var metricsPort *corev1.ContainerPort
		for i, p := range dep.Spec.Template.Spec.Containers[0].Ports {
			if p.Name == ep["port"] {
				metricsPort = &dep.Spec.Template.Spec.Containers[0].Ports[i]
			}
		}
		Expect(metricsPort).NotTo(BeNil(), "the adapter container has no port named %v", ep["port"])
		Expect(metricsPort.ContainerPort).To(BeEquivalentTo(render.MetricsPort), "the PodMonitor scrapes a port that is not the metrics port")
		Expect(ep).To(HaveKeyWithValue("scheme", "http"))
		Expect(ep).To(HaveKeyWithValue("path", "/metrics"))
		relabel, _, _ := unstructured.NestedSlice(ep, "relabelings")
		Expect(relabel).To(ContainElement(And(
			HaveKeyWithValue("sourceLabels", ContainElement("__meta_kubernetes_pod_label_memory_agentmem_io_adapter")),
			HaveKeyWithValue("targetLabel", "adapter"))), "the dashboard reads the adapter label")
		Expect(podLabels).To(HaveKeyWithValue(render.LabelAdapter, ma.Name))
	})
})
