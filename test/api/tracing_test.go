package apitest

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

var _ = Describe("MemoryAdapter spec.tracing admission", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	withTracing := func(t v1alpha1.AdapterTracing) *v1alpha1.MemoryAdapter {
		a := newAdapter(ns, fullManifest())
		a.Spec.Tracing = &t
		return a
	}

	DescribeTable("accepts",
		func(t v1alpha1.AdapterTracing) {
			a := withTracing(t)
			Expect(k8sClient.Create(ctx, a, client.DryRunAll)).To(Succeed())
			Expect(*a.Spec.Tracing).To(Equal(t), "stored as given, nothing defaulted")
		},
		Entry("an http collector in the cluster", v1alpha1.AdapterTracing{Endpoint: "http://otel-collector.observability:4318/v1/traces"}),
		Entry("https with a sampling share", v1alpha1.AdapterTracing{Endpoint: "https://collector.example/v1/traces", SamplingPermille: ptr.To[int32](250)}),
		Entry("no sampling", v1alpha1.AdapterTracing{Endpoint: "http://10.0.0.7:4318/v1/traces", SamplingPermille: ptr.To[int32](0)}),
		Entry("every trace", v1alpha1.AdapterTracing{Endpoint: "http://c:4318/v1/traces", SamplingPermille: ptr.To[int32](1000)}),
	)

	DescribeTable("rejects",
		func(t v1alpha1.AdapterTracing, want string) {
			err := k8sClient.Create(ctx, withTracing(t), client.DryRunAll)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("no endpoint", v1alpha1.AdapterTracing{}, "spec.tracing.endpoint"),
		Entry("a gRPC scheme", v1alpha1.AdapterTracing{Endpoint: "grpc://c:4317"}, "endpoint must be an absolute http or https URL"),
		Entry("a relative path", v1alpha1.AdapterTracing{Endpoint: "/v1/traces"}, "endpoint must be an absolute http or https URL"),
		Entry("no host", v1alpha1.AdapterTracing{Endpoint: "http:///v1/traces"}, "endpoint must be an absolute http or https URL"),
		Entry("credentials", v1alpha1.AdapterTracing{Endpoint: "https://user:key@collector.example/v1/traces"}, "endpoint must not carry credentials"),
		Entry("an endpoint too long", v1alpha1.AdapterTracing{Endpoint: "http://c/" + strings.Repeat("a", 510)}, "spec.tracing.endpoint: Too long"),
		Entry("a share over a thousand", v1alpha1.AdapterTracing{Endpoint: "http://c:4318", SamplingPermille: ptr.To[int32](1001)}, "spec.tracing.samplingPermille"),
		Entry("a negative share", v1alpha1.AdapterTracing{Endpoint: "http://c:4318", SamplingPermille: ptr.To[int32](-1)}, "spec.tracing.samplingPermille"),
	)
})
