package memoryadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/conformance/wire/wiretest"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/runs"
	"github.com/agentmem/memory-adapter-operator/internal/pki"
)

// TestExternalRunJudgesThePythonExample is the External backend end to end without a
// cluster: the Python example (examples/python-adapter) plays the user's image. The test runs
// the containers desiredDeployment and desiredJob build, as the kubelet would: the production
// server with its args, then the run's token step, the harness-mode server and the conformance
// container, each with its command, args and environment ($(VAR) expanded). The only changes
// are the ones a pod network makes: mount paths become temporary directories, the Service URL
// becomes the production process's loopback address, and /dev/termination-log a file. The
// run must write a compact report that the controller reads as a full-claim pass. It needs
// python3 on PATH and builds cmd/memory-adapter; it fails, never skips, without them.
func TestExternalRunJudgesThePythonExample(t *testing.T) {
	py := wiretest.Interpreter(t)
	manifest := externalSampleManifest("python-example")
	runExternal(t, "python-example", manifest, func(string) *memoryv1alpha1.ExternalOptions {
		return &memoryv1alpha1.ExternalOptions{
			// In an image this is ["python3", "/app/server.py"].
			Command:     []string{py, wiretest.ServerPath()},
			Args:        []string{"--listen", "$(MEMORY_ADAPTER_LISTEN)", "--token-file", "$(MEMORY_ADAPTER_TOKEN_FILE)"},
			HarnessArgs: []string{"--listen", "$(MEMORY_ADAPTER_LISTEN)", "--token-file", "$(MEMORY_ADAPTER_TOKEN_FILE)", "--harness-listen", "$(MEMORY_ADAPTER_HARNESS_LISTEN)", "--harness-token-file", "$(MEMORY_ADAPTER_HARNESS_TOKEN_FILE)"},
		}
	})
}

// TestExternalRunJudgesTheProjectsOwnServer runs config/samples' External sample, which brings
// this project's own `memory-adapter serve` (SQLite) as if it were a foreign image; the e2e
// suite deploys the same sample on the local cluster.
func TestExternalRunJudgesTheProjectsOwnServer(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "samples", "memory_v1alpha1_memoryadapter_external.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sample := &memoryv1alpha1.MemoryAdapter{}
	if err := yaml.UnmarshalStrict(b, sample); err != nil {
		t.Fatal(err)
	}
	runExternal(t, sample.Spec.Manifest.Adapter, sample.Spec.Manifest, func(bin string) *memoryv1alpha1.ExternalOptions {
		e := sample.Spec.Backend.External.DeepCopy()
		e.Command = []string{bin} // the image's entrypoint
		return e
	})
}

// externalSampleManifest is the contract both servers publish, under their adapter id.
func externalSampleManifest(adapter string) memoryv1alpha1.ManifestSpec {
	return memoryv1alpha1.ManifestSpec{
		Adapter: adapter,
		NativeItemFields: []memoryv1alpha1.ItemField{memoryv1alpha1.ItemFieldID, memoryv1alpha1.ItemFieldCreatedAt,
			memoryv1alpha1.ItemFieldMetadata, memoryv1alpha1.ItemFieldContent, memoryv1alpha1.ItemFieldTags},
		SupportedFilters:  []memoryv1alpha1.FilterKey{"branch_id", "source"},
		SearchConsistency: memoryv1alpha1.ConsistencyImmediate,
		RetrieveFidelity:  memoryv1alpha1.FidelityFull, SearchFidelity: memoryv1alpha1.FidelityFull,
		SearchReturnsTags: true, PreservesMetadata: true,
	}
}

// runExternal runs the External adapter that options (given the built memory-adapter binary)
// describe, as the kubelet would run the render.Deployment's and the Job's containers, and requires
// a full-claim pass of adapter that the controller reads back.
func runExternal(t *testing.T, adapter string, manifest memoryv1alpha1.ManifestSpec, options func(bin string) *memoryv1alpha1.ExternalOptions) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := buildAdapterBinary(ctx, t, dir)
	e := options(bin)
	e.Port, e.HarnessPort = freePort(t), freePort(t)
	ma := &memoryv1alpha1.MemoryAdapter{}
	ma.Name, ma.Namespace = "byo", "team"
	ma.Spec.Image = ptr.To("registry.example/python-adapter:1")
	ma.Spec.Backend = memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendExternal, Scope: "agents", External: e}
	ma.UID = "0b6c8f5e-8c7e-4d6b-9c53-3f0f9d2b1a77"
	ma.Spec.Manifest = manifest
	if err := ma.Spec.Manifest.Validate(); err != nil {
		t.Fatal(err)
	}
	s := render.EffectiveSettings(ma, "operator/memory-adapter:test")

	// What the operator mounts: the binding token and CA, the manifest ConfigMap, and the
	// serving certificate (TLS is the default), here from a CA of the test's own for the
	// name the test reaches the production instance by.
	prodPort := freePort(t)
	prodAddr := fmt.Sprintf("127.0.0.1:%d", prodPort)
	ca, err := pki.NewCA("test", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Issue([]string{"localhost"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	// Registered before the containers' cleanups, so it runs after they stopped them: a
	// harness-mode server stopped as the kubelet stops it leaves no disposable scope behind.
	t.Cleanup(func() {
		if left, _ := filepath.Glob(filepath.Join(dir, "tmp", "mao-*-conformance-*")); len(left) > 0 {
			t.Errorf("a stopped harness-mode server left its disposable scope behind: %v", left)
		}
	})
	fs := map[string]string{
		"/tmp/":                              filepath.Join(dir, "tmp") + "/",
		render.BindingMountDir:               filepath.Join(dir, "binding"),
		render.ManifestMountDir:              filepath.Join(dir, "manifest"),
		render.RunTokenDir:                   filepath.Join(dir, "run"),
		corev1.TerminationMessagePathDefault: filepath.Join(dir, "termination-log"),
		render.TLSMountDir:                   filepath.Join(dir, "tls"),
		render.ServiceURL(ma):                fmt.Sprintf("https://localhost:%d", prodPort),
	}
	for _, d := range []string{"binding", "manifest", "run", "tls"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	token := render.DeriveToken([]byte(strings.Repeat("k", render.MinTokenKeyBytes)), ma, "")
	writeTestFile(t, filepath.Join(dir, "binding", "token"), token)
	writeTestFile(t, filepath.Join(dir, "binding", render.AcceptedTokensKey), token+"\n")
	writeTestFile(t, filepath.Join(dir, "binding", "ca.crt"), string(ca.CertPEM))
	writeTestFile(t, filepath.Join(dir, "tls", corev1.TLSCertKey), string(serving.CertPEM))
	writeTestFile(t, filepath.Join(dir, "tls", corev1.TLSPrivateKeyKey), string(serving.KeyPEM))
	manifestJSON, err := json.Marshal(ma.Spec.Manifest.ToMemory())
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "manifest", "manifest.json"), string(manifestJSON))
	pairs := make([]string, 0, 2*len(fs))
	for from, to := range fs {
		pairs = append(pairs, from, to)
	}
	// One pass, so a substituted temporary path is never substituted again.
	rootfs := strings.NewReplacer(pairs...)
	run := func(c corev1.Container, override map[string]string) *exec.Cmd {
		return kubeletCommand(ctx, c, rootfs, override)
	}

	// The production instance: on the pod network it listens on 0.0.0.0:port behind the
	// Service; here its own loopback port stands in for both.
	dep := render.Deployment(ma, s)
	prod := run(dep.Spec.Template.Spec.Containers[0], map[string]string{render.EnvListen: prodAddr})
	startBackground(t, prod)

	job := render.ConformanceJob(ma, s, render.JobName(ma, "seed"), render.RunKey{}, "")
	pod := job.Spec.Template.Spec
	tokens, server, conf := pod.InitContainers[0], pod.InitContainers[1], pod.Containers[0]
	tokens.Command = []string{bin} // the operator's image's entrypoint
	if out, err := run(tokens, nil).CombinedOutput(); err != nil {
		t.Fatalf("token step: %v\n%s", err, out)
	}
	startBackground(t, run(server, nil))
	conf.Command = []string{bin}
	out, err := run(conf, nil).CombinedOutput()
	if err != nil {
		t.Fatalf("conformance container: %v\n%s", err, tail(out))
	}

	msg, err := os.ReadFile(fs[corev1.TerminationMessagePathDefault])
	if err != nil {
		t.Fatal(err)
	}
	compact, err := conformance.ParseCompact(msg)
	if err != nil || compact.Result != conformance.Passed || compact.Claim != conformance.ClaimFull || compact.AdapterID != adapter {
		t.Fatalf("compact report %s (%v): want a full-claim pass of %s\n%s", msg, err, adapter, tail(out))
	}
	if !strings.Contains(string(out), "published manifest equals the expected one") {
		t.Errorf("the production instance was not checked:\n%s", tail(out))
	}
	p := corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "conformance",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: string(msg)}}}}}}
	res := runs.ResultFromJob(job, []corev1.Pod{p}, render.RunKey{}, "", "", time.Now())
	if res.Failed != 0 || res.Message != "" || len(res.Cases) != len(memoryv1alpha1.AllConformanceCaseIDs) {
		t.Errorf("the controller reads %d passed, %d failed, %d cases, message %q", res.Passed, res.Failed, len(res.Cases), res.Message)
	}
}

// kubeletCommand starts a container's command as the kubelet would: command (or, for the
// test, the entrypoint set on it) then args, $(VAR) references expanded from the container's
// environment, with the test's mount paths substituted.
func kubeletCommand(ctx context.Context, c corev1.Container, rootfs *strings.Replacer, override map[string]string) *exec.Cmd {
	remap := rootfs.Replace
	env := map[string]string{}
	environ := os.Environ()
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			v = "test-pod"
		}
		if o, ok := override[e.Name]; ok {
			v = o
		}
		env[e.Name] = remap(v)
		environ = append(environ, e.Name+"="+env[e.Name])
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	expand := func(a string) string {
		return ref.ReplaceAllStringFunc(a, func(m string) string {
			if v, ok := env[m[2:len(m)-1]]; ok {
				return v
			}
			return m
		})
	}
	// The command is the test's entrypoint, a host path already; args name container paths.
	// Variables hold remapped values, so each string is remapped once, before expansion.
	var argv []string
	for _, a := range c.Command {
		argv = append(argv, expand(a))
	}
	for _, a := range c.Args {
		argv = append(argv, expand(remap(a)))
	}
	// The container's /tmp, where a harness puts its disposable scope.
	environ = append(environ, "TMPDIR="+strings.TrimSuffix(remap("/tmp/"), "/"))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = environ
	// The end of ctx stops the container as the kubelet would, SIGTERM and then SIGKILL after
	// a grace period, not SIGKILL at once: a harness-mode server removes its disposable scope
	// on SIGTERM (SQLite's is a directory under the temporary directory); killed, it left one
	// behind per run.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	return cmd
}

// buildAdapterBinary builds cmd/memory-adapter, the operator's image's program.
func buildAdapterBinary(ctx context.Context, t *testing.T, dir string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	bin := filepath.Join(dir, "memory-adapter")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/memory-adapter")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/memory-adapter: %v\n%s", err, out)
	}
	return bin
}

// startBackground starts cmd, a kubeletCommand, and waits for it when the test ends. By then
// its context has ended, so it has had its SIGTERM, and Wait sends SIGKILL after the grace
// period (cmd.WaitDelay) if it has not exited.
func startBackground(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Wait() })
}

func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tail keeps the end of a command's output for a failure message.
func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
