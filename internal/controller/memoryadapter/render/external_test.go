package render

import (
	"regexp"
	"slices"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// externalAdapter is an External MemoryAdapter with the Python example's contract.
func externalAdapter(e *memoryv1alpha1.ExternalOptions) *memoryv1alpha1.MemoryAdapter {
	ma := &memoryv1alpha1.MemoryAdapter{}
	ma.Name, ma.Namespace = "byo", "team"
	ma.Spec.Image = ptr.To("registry.example/python-adapter:1")
	ma.Spec.Manifest.Adapter = "python-example"
	ma.Spec.Backend = memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendExternal, Scope: "agents", External: e}
	return ma
}

func envValue(env []corev1.EnvVar, name string) (string, bool) {
	for _, e := range env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// externalCase is one External adapter's spec and the ports and duplicate-id behaviour its
// objects must carry.
type externalCase struct {
	name                  string
	ext                   memoryv1alpha1.ExternalOptions
	lifecycle             *memoryv1alpha1.LifecycleSpec
	dataPort, harnessPort int32
	duplicate             string
}

// TestExternalResources checks what the operator builds for a server the user brings: the
// production Deployment, the NetworkPolicy port, and the conformance Job's three containers.
func TestExternalResources(t *testing.T) {
	secretEnv := []memoryv1alpha1.ExternalSecretEnv{{Name: "DB_URL", SecretKeyRef: memoryv1alpha1.SecretKeySelector{Name: "byo-db", Key: "url"}}}
	for _, tc := range []externalCase{
		{
			name: "defaults (an object stored before the CRD defaults)",
			ext: memoryv1alpha1.ExternalOptions{
				Command:     []string{"python3", "/app/server.py"},
				Args:        []string{"--listen", "$(MEMORY_ADAPTER_LISTEN)", "--token-file", "$(MEMORY_ADAPTER_TOKEN_FILE)"},
				HarnessArgs: []string{"--listen", "$(MEMORY_ADAPTER_LISTEN)", "--harness-listen", "$(MEMORY_ADAPTER_HARNESS_LISTEN)"},
			},
			dataPort: 8080, harnessPort: 8081, duplicate: "Overwrite",
		},
		{
			name: "own ports, Secret env, declared duplicate-id behaviour",
			ext: memoryv1alpha1.ExternalOptions{
				Args: []string{"serve"}, HarnessArgs: []string{"serve", "--harness"},
				Port: 9000, HarnessPort: 9001, Env: secretEnv,
			},
			lifecycle: &memoryv1alpha1.LifecycleSpec{DuplicateIDBehaviour: memoryv1alpha1.DuplicateIDReject},
			dataPort:  9000, harnessPort: 9001, duplicate: "Reject",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ma := externalAdapter(tc.ext.DeepCopy())
			ma.Spec.Lifecycle = tc.lifecycle
			s := EffectiveSettings(ma, "operator/memory-adapter:v1")

			if UsesDataClaim(ma) {
				t.Error("an External adapter keeps no data in the operator's volume")
			}
			checkExternalDeployment(t, tc, ma, Deployment(ma, s))
			checkExternalNetwork(t, tc, ma)
			checkExternalRun(t, tc, ma, ConformanceJob(ma, s, "byo-conformance-0123456789", RunKey{}, ""))
		})
	}
}

// checkExternalDeployment: the production server runs the user's image as stated, told
// where to listen and which tokens to accept, and never told of the harness.
func checkExternalDeployment(t *testing.T, tc externalCase, ma *memoryv1alpha1.MemoryAdapter, dep *appsv1.Deployment) {
	t.Helper()
	if dep.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("strategy %s, want RollingUpdate", dep.Spec.Strategy.Type)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != *ma.Spec.Image || !slices.Equal(c.Command, tc.ext.Command) || !slices.Equal(c.Args, tc.ext.Args) {
		t.Errorf("production container %s %q %q, want the user's image, command and args", c.Image, c.Command, c.Args)
	}
	checkEnvValues(t, "production", c.Env, map[string]string{
		EnvListen: "0.0.0.0:" + itoa(tc.dataPort), EnvPort: itoa(tc.dataPort),
		EnvTokenFile: "/var/run/memory-adapter/binding/accepted-tokens", EnvScope: "agents",
	})
	for _, name := range []string{EnvHarnessListen, EnvHarnessTokenFile} {
		if _, ok := envValue(c.Env, name); ok {
			t.Errorf("the production server gets %s: it must never serve the harness", name)
		}
	}
	checkSecretEnv(t, "production", c.Env, tc.ext.Env)
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != tc.dataPort {
		t.Errorf("ports %+v, want http=%d", c.Ports, tc.dataPort)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/healthz" || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Port.StrVal != "http" {
		t.Errorf("probes %+v %+v, want /healthz for both on the wire", c.ReadinessProbe, c.LivenessProbe)
	}
	if !isHardened(c.SecurityContext) {
		t.Error("the production container is not hardened")
	}
}

// checkExternalNetwork: clients keep the Service's port whatever the container listens on,
// and the NetworkPolicy admits the container's.
func checkExternalNetwork(t *testing.T, tc externalCase, ma *memoryv1alpha1.MemoryAdapter) {
	t.Helper()
	svc := Service(ma)
	if svc.Spec.Ports[0].Port != AdapterPort || svc.Spec.Ports[0].TargetPort.StrVal != "http" {
		t.Errorf("Service port %+v, want 8080 to the named port", svc.Spec.Ports[0])
	}
	if np := NetworkPolicy(ma, "ops", ""); np.Spec.Ingress[0].Ports[0].Port.IntVal != tc.dataPort {
		t.Errorf("NetworkPolicy admits port %v, want the container's %d", np.Spec.Ingress[0].Ports[0].Port, tc.dataPort)
	}
}

// checkExternalRun: the conformance pod derives its tokens, runs a disposable instance of
// the user's server as a sidecar, and tests it with the operator's image; nothing restarts.
func checkExternalRun(t *testing.T, tc externalCase, ma *memoryv1alpha1.MemoryAdapter, job *batchv1.Job) {
	t.Helper()
	pod := job.Spec.Template.Spec
	if len(pod.InitContainers) != 2 || len(pod.Containers) != 1 {
		t.Fatalf("%d init containers and %d containers, want 2 and 1", len(pod.InitContainers), len(pod.Containers))
	}
	tokens, server, conf := pod.InitContainers[0], pod.InitContainers[1], pod.Containers[0]
	if tokens.Image != "operator/memory-adapter:v1" || !slices.Equal(tokens.Args, []string{"token", RunTokenDir + "/data-token", RunTokenDir + "/harness-token"}) || tokens.RestartPolicy != nil {
		t.Errorf("token step %s %q (restart %v)", tokens.Image, tokens.Args, tokens.RestartPolicy)
	}
	checkHarnessServer(t, tc, ma, job.Name, server)
	checkExternalConformance(t, tc, conf)
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		if !isHardened(c.SecurityContext) {
			t.Errorf("container %s is not hardened", c.Name)
		}
	}
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || *job.Spec.BackoffLimit != 0 {
		t.Error("the run's pod restarts")
	}
}

func checkHarnessServer(t *testing.T, tc externalCase, ma *memoryv1alpha1.MemoryAdapter, jobName string, server corev1.Container) {
	t.Helper()
	if server.Image != *ma.Spec.Image || !slices.Equal(server.Command, tc.ext.Command) || !slices.Equal(server.Args, tc.ext.HarnessArgs) ||
		server.RestartPolicy == nil || *server.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("harness server %s %q %q restart %v, want the user's image in harness mode as a native sidecar", server.Image, server.Command, server.Args, server.RestartPolicy)
	}
	checkEnvValues(t, "harness server", server.Env, map[string]string{
		EnvListen: "127.0.0.1:" + itoa(tc.dataPort), EnvHarnessListen: "127.0.0.1:" + itoa(tc.harnessPort),
		EnvTokenFile: RunTokenDir + "/data-token", EnvHarnessTokenFile: RunTokenDir + "/harness-token",
	})
	if scope, _ := envValue(server.Env, EnvScope); scope == "" || scope == "agents" || scope != ExternalRunScope(jobName) {
		t.Errorf("harness scope %q, want the run's own disposable scope", scope)
	}
	checkSecretEnv(t, "harness server", server.Env, tc.ext.Env)
	if slices.ContainsFunc(server.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "binding" }) {
		t.Error("the disposable instance mounts the production binding token")
	}
}

func checkExternalConformance(t *testing.T, tc externalCase, conf corev1.Container) {
	t.Helper()
	if conf.Image != "operator/memory-adapter:v1" {
		t.Errorf("conformance image %s, want the operator's", conf.Image)
	}
	want := []string{"conformance",
		"--target", "http://127.0.0.1:" + itoa(tc.dataPort), "--token-file", RunTokenDir + "/data-token",
		"--harness-url", "http://127.0.0.1:" + itoa(tc.harnessPort), "--harness-token-file", RunTokenDir + "/harness-token",
		"--target-wait", "2m0s", "--adapter-id", "python-example", "--duplicate-id-behaviour", tc.duplicate,
		"--server-ca-file", "/var/run/memory-adapter/binding/ca.crt",
		"--server-url", "https://byo.team.svc:8080", "--server-token-file", "/var/run/memory-adapter/binding/token",
		"--expected-manifest-file", "/etc/memory-adapter/manifest/manifest.json",
		"--report-file=", "--termination-log", "/dev/termination-log",
	}
	if !inOrder(conf.Args, want) {
		t.Errorf("conformance args %q lack %q in order", conf.Args, want)
	}
	for _, a := range []string{"--backend", "--scope", "--supported-filters"} {
		if slices.ContainsFunc(conf.Args, func(x string) bool { return x == a || len(x) > len(a) && x[:len(a)+1] == a+"=" }) {
			t.Errorf("conformance args %q contain %s, which --target refuses", conf.Args, a)
		}
	}
	if conf.TerminationMessagePath != corev1.TerminationMessagePathDefault || conf.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Error("the report no longer goes to the termination message")
	}
}

func checkEnvValues(t *testing.T, what string, env []corev1.EnvVar, want map[string]string) {
	t.Helper()
	for name, w := range want {
		if got, ok := envValue(env, name); !ok || got != w {
			t.Errorf("%s %s=%q, want %q", what, name, got, w)
		}
	}
}

func TestExternalRunScope(t *testing.T) {
	a, b := ExternalRunScope("byo-conformance-a"), ExternalRunScope("byo-conformance-b")
	if a == b || len(a) > 63 || !scopePattern.MatchString(a) {
		t.Errorf("run scopes %q and %q: want distinct valid scopes", a, b)
	}
}

func checkSecretEnv(t *testing.T, what string, env []corev1.EnvVar, want []memoryv1alpha1.ExternalSecretEnv) {
	t.Helper()
	for _, w := range want {
		i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == w.Name })
		if i < 0 || env[i].Value != "" || env[i].ValueFrom == nil || env[i].ValueFrom.SecretKeyRef == nil ||
			env[i].ValueFrom.SecretKeyRef.Name != w.SecretKeyRef.Name || env[i].ValueFrom.SecretKeyRef.Key != w.SecretKeyRef.Key {
			t.Errorf("%s: %s is not a reference to Secret %s key %s", what, w.Name, w.SecretKeyRef.Name, w.SecretKeyRef.Key)
		}
	}
}

func isHardened(sc *corev1.SecurityContext) bool {
	return sc != nil && ptr.Deref(sc.RunAsNonRoot, false) && !ptr.Deref(sc.AllowPrivilegeEscalation, true) &&
		ptr.Deref(sc.ReadOnlyRootFilesystem, false) && sc.Capabilities != nil && slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) &&
		sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

// scopePattern is api/memory's scope rule, as the CRD states it.
var scopePattern = regexp.MustCompile(`^[a-z][a-z0-9_.-]*$`)
