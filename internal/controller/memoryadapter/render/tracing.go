package render

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// fullSampling is spec.tracing.samplingPermille's default: every new trace recorded.
const fullSampling = 1000

// TracingEnv are the standard OpenTelemetry variables that make the adapter export its spans
// as spec.tracing says (cmd/memory-adapter reads them through the OTel SDK), none without
// spec.tracing. The sampler is parent-based, so a call in a client's trace follows the
// client's decision; the resource names the MemoryAdapter and its pod ($(POD_NAME), which
// the container defines first).
func TracingEnv(ma *memoryv1alpha1.MemoryAdapter) []corev1.EnvVar {
	t := ma.Spec.Tracing
	if t == nil {
		return nil
	}
	permille := int32(fullSampling)
	if t.SamplingPermille != nil {
		permille = *t.SamplingPermille
	}
	return []corev1.EnvVar{
		{Name: "OTEL_TRACES_EXPORTER", Value: "otlp"},
		{Name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", Value: t.Endpoint},
		{Name: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", Value: "http/protobuf"},
		{Name: "OTEL_TRACES_SAMPLER", Value: "parentbased_traceidratio"},
		// The ratio as a decimal, exactly: 250 is "0.25", 1000 is "1", 1 is "0.001".
		{Name: "OTEL_TRACES_SAMPLER_ARG", Value: strconv.FormatFloat(float64(permille)/fullSampling, 'f', -1, 64)},
		{Name: "OTEL_SERVICE_NAME", Value: ma.Name},
		// Names and namespaces are DNS labels, which need no percent-encoding here.
		{Name: "OTEL_RESOURCE_ATTRIBUTES", Value: "k8s.namespace.name=" + ma.Namespace + ",k8s.deployment.name=" + DeploymentName(ma) + ",k8s.pod.name=$(POD_NAME)"},
	}
}

// withTracingEnv appends TracingEnv to a container's env, leaving out any variable the env
// already names: an External server's own Secret variables (spec.backend.external.env, an
// OTEL_EXPORTER_OTLP_HEADERS with a collector's key, say) are the user's choice and win.
// The operator's own serve container never sets one of these names itself.
func withTracingEnv(ma *memoryv1alpha1.MemoryAdapter, env []corev1.EnvVar) []corev1.EnvVar {
	for _, v := range TracingEnv(ma) {
		if !slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == v.Name }) {
			env = append(env, v)
		}
	}
	return env
}
