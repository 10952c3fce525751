package render

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

func TestTracingEnv(t *testing.T) {
	const endpoint = "http://otel-collector.observability:4318/v1/traces"
	cases := map[string]struct {
		// tracing is spec.tracing.
		tracing *memoryv1alpha1.AdapterTracing
		// want is every OTEL_* variable of the adapter container; nil wants none.
		want map[string]string
	}{
		"no spec.tracing": {},
		"sampling omitted samples every new trace": {
			tracing: &memoryv1alpha1.AdapterTracing{Endpoint: endpoint},
			want:    otelWant(endpoint, "1"),
		},
		"a quarter": {
			tracing: &memoryv1alpha1.AdapterTracing{Endpoint: endpoint, SamplingPermille: ptr.To[int32](250)},
			want:    otelWant(endpoint, "0.25"),
		},
		"one in a thousand": {
			tracing: &memoryv1alpha1.AdapterTracing{Endpoint: "https://c.example/v1/traces", SamplingPermille: ptr.To[int32](1)},
			want:    otelWant("https://c.example/v1/traces", "0.001"),
		},
		"none": {
			tracing: &memoryv1alpha1.AdapterTracing{Endpoint: endpoint, SamplingPermille: ptr.To[int32](0)},
			want:    otelWant(endpoint, "0"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, backend := range []memoryv1alpha1.BackendType{memoryv1alpha1.BackendSQLite, memoryv1alpha1.BackendPostgres} {
				ma := &memoryv1alpha1.MemoryAdapter{}
				ma.Name, ma.Namespace = "agent-memory", "team"
				ma.Spec.Manifest.Adapter = "a"
				ma.Spec.Backend = memoryv1alpha1.BackendSpec{Type: backend, Scope: "agents", ConnectionSecretRef: &memoryv1alpha1.SecretKeyReference{Name: "db"}}
				ma.Spec.Tracing = tc.tracing
				c := Deployment(ma, EffectiveSettings(ma, "img")).Spec.Template.Spec.Containers[0]
				if got := otelEnv(c.Env); !maps.Equal(got, tc.want) {
					t.Errorf("%s: OTEL_* env %v, want %v", backend, got, tc.want)
				}
				checkPodNameFirst(t, c.Env)
				// The Job that verifies the manifest exports nothing: its calls are the
				// operator's, not an agent's.
				job := ConformanceJob(ma, EffectiveSettings(ma, "img"), "job", RunKey{}, "")
				for _, jc := range job.Spec.Template.Spec.Containers {
					if got := otelEnv(jc.Env); len(got) != 0 {
						t.Errorf("%s: conformance container %s has %v", backend, jc.Name, got)
					}
				}
			}
		})
	}
}

// TestTracingEnvExternal: an External server gets the variables too, and a variable its own
// spec.backend.external.env names stays the user's.
func TestTracingEnvExternal(t *testing.T) {
	ma := externalAdapter(&memoryv1alpha1.ExternalOptions{
		Command: []string{"python3", "/app/server.py"},
		Env: []memoryv1alpha1.ExternalSecretEnv{{
			Name: "OTEL_SERVICE_NAME", SecretKeyRef: memoryv1alpha1.SecretKeySelector{Name: "s", Key: "k"},
		}},
	})
	ma.Spec.Tracing = &memoryv1alpha1.AdapterTracing{Endpoint: "http://c:4318/v1/traces"}
	c := Deployment(ma, EffectiveSettings(ma, "img")).Spec.Template.Spec.Containers[0]
	if v, _ := envValue(c.Env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "http://c:4318/v1/traces" {
		t.Errorf("External server's endpoint %q", v)
	}
	n := 0
	for _, e := range c.Env {
		if e.Name == "OTEL_SERVICE_NAME" {
			n++
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("OTEL_SERVICE_NAME is %+v, want the user's Secret variable", e)
			}
		}
	}
	if n != 1 {
		t.Errorf("OTEL_SERVICE_NAME set %d times, want once", n)
	}
	checkPodNameFirst(t, c.Env)
}

// otelWant is the OTEL_* env of the adapter agent-memory in namespace team.
func otelWant(endpoint, ratio string) map[string]string {
	return map[string]string{
		"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint,
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG": ratio, "OTEL_SERVICE_NAME": "agent-memory",
		"OTEL_RESOURCE_ATTRIBUTES": "k8s.namespace.name=team,k8s.deployment.name=agent-memory,k8s.pod.name=$(POD_NAME)",
	}
}

func otelEnv(env []corev1.EnvVar) map[string]string {
	var m map[string]string
	for _, e := range env {
		if strings.HasPrefix(e.Name, "OTEL_") {
			if m == nil {
				m = map[string]string{}
			}
			m[e.Name] = e.Value
		}
	}
	return m
}

// checkPodNameFirst: $(POD_NAME) in OTEL_RESOURCE_ATTRIBUTES expands only when POD_NAME is
// defined before it.
func checkPodNameFirst(t *testing.T, env []corev1.EnvVar) {
	t.Helper()
	pod, res := -1, -1
	for i, e := range env {
		switch e.Name {
		case "POD_NAME":
			pod = i
		case "OTEL_RESOURCE_ATTRIBUTES":
			res = i
		}
	}
	if res >= 0 && (pod < 0 || pod > res) {
		t.Errorf("POD_NAME at %d, OTEL_RESOURCE_ATTRIBUTES at %d: $(POD_NAME) would not expand", pod, res)
	}
}
