package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// root is the repository's root, relative to this package.
var root = filepath.Join("..", "..")

const (
	chartDir = "charts/memory-adapter-operator"
	// releaseName is the release the chart is rendered as. Object names do not depend on it
	// (they come from namePrefix), only the app.kubernetes.io/instance label, which the
	// comparison ignores.
	releaseName = "memory-adapter-operator"
	// defaultNamespace is config/default's namespace.
	defaultNamespace = "memory-adapter-operator-system"
)

// pdbOnlyInChart: config/ ships no PodDisruptionBudget for the manager; issue 43 asked the
// chart for one (podDisruptionBudget.enabled, on by default).
var pdbOnlyInChart = map[string]string{
	"PodDisruptionBudget": "config/ ships no PodDisruptionBudget for the manager; the chart's is podDisruptionBudget.enabled",
}

// namespaceOnlyInKustomize: Helm installs into a release namespace it does not own
// (`helm install --create-namespace` makes it), so the chart renders the Namespace only with
// namespace.create; the renamed comparison sets it and compares the Namespace too.
var namespaceOnlyInKustomize = map[string]string{
	"Namespace": "the chart renders the release's Namespace only with namespace.create=true",
}

// TestChartMatchesKustomizeInstaller renders both installers the same way, in each variant the
// kustomize installer supports, and requires the same objects with the same content, except
// for the differences listed in comparison and normalize, each with its reason.
func TestChartMatchesKustomizeInstaller(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		kustomize renderKustomizeArgs
		chart     renderChartArgs
		cmp       comparison
	}{{
		name:      "default values against config/default",
		kustomize: renderKustomizeArgs{base: "config/default"},
		chart:     renderChartArgs{namespace: defaultNamespace},
		cmp:       comparison{onlyInChart: pdbOnlyInChart, onlyInKustomize: namespaceOnlyInKustomize},
	}, {
		name: "renamed: namespace platform-agent-memory, prefix pam-",
		kustomize: renderKustomizeArgs{base: "config/default",
			env: []string{"INSTALL_NAMESPACE=platform-agent-memory", "INSTALL_PREFIX=pam-"}},
		chart: renderChartArgs{namespace: "platform-agent-memory",
			set: []string{"namePrefix=pam-", "namespace.create=true"}},
		cmp: comparison{onlyInChart: pdbOnlyInChart},
	}, {
		name:      "monitoring namespace and dashboard",
		kustomize: renderKustomizeArgs{base: "config/default", env: []string{"MONITORING_NAMESPACE=observability"}},
		chart: renderChartArgs{namespace: defaultNamespace,
			set: []string{"monitoring.namespace=observability", "dashboard.enabled=true"}},
		cmp: comparison{onlyInChart: pdbOnlyInChart, onlyInKustomize: namespaceOnlyInKustomize},
	}, {
		name:      "cert-manager against config/certmanager",
		kustomize: renderKustomizeArgs{base: "config/certmanager"},
		chart:     renderChartArgs{namespace: defaultNamespace, set: []string{"certManager.enabled=true"}},
		cmp:       comparison{onlyInChart: pdbOnlyInChart, onlyInKustomize: namespaceOnlyInKustomize},
	}, {
		name: "renamed with cert-manager and monitoring",
		kustomize: renderKustomizeArgs{base: "config/certmanager",
			env: []string{"INSTALL_NAMESPACE=platform-agent-memory", "INSTALL_PREFIX=pam-", "MONITORING_NAMESPACE=observability"}},
		chart: renderChartArgs{namespace: "platform-agent-memory",
			set: []string{"namePrefix=pam-", "namespace.create=true", "certManager.enabled=true",
				"monitoring.namespace=observability", "dashboard.enabled=true"}},
		cmp: comparison{onlyInChart: pdbOnlyInChart},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := renderKustomize(t, tc.kustomize)
			c := renderChart(t, tc.chart)
			requireKinds(t, k, "CustomResourceDefinition", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding",
				"Deployment", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
			if diffs := compareInstalls(k, c, tc.cmp); len(diffs) > 0 {
				t.Errorf("the chart and hack/render-install.sh differ (%d):\n  %s", len(diffs), strings.Join(diffs, "\n  "))
			}
		})
	}
}

// TestChartPrometheusObjectsMatchConfigPrometheus compares the chart's ServiceMonitor,
// PodMonitor and PrometheusRule with config/prometheus as config/default renders it with its
// [PROMETHEUS] line uncommented (testdata/prometheus), which hack/render-install.sh has no
// switch for.
func TestChartPrometheusObjectsMatchConfigPrometheus(t *testing.T) {
	t.Parallel()
	k := renderKustomize(t, renderKustomizeArgs{base: "test/chart/testdata/prometheus"})
	requireKinds(t, k, "ServiceMonitor", "PodMonitor", "PrometheusRule")
	c := renderChart(t, renderChartArgs{namespace: defaultNamespace, set: []string{
		"metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true",
		"metrics.prometheusRule.enabled=true", "monitoring.namespace=monitoring"}})
	var monitoring []*unstructured.Unstructured
	for _, o := range c {
		if o.GroupVersionKind().Group == "monitoring.coreos.com" {
			monitoring = append(monitoring, o)
		}
	}
	if diffs := compareInstalls(k, monitoring, comparison{}); len(diffs) > 0 {
		t.Errorf("the chart's Prometheus Operator objects and config/prometheus differ (%d):\n  %s",
			len(diffs), strings.Join(diffs, "\n  "))
	}
}

// TestPrometheusOverlayNamesAsConfigDefault keeps testdata/prometheus honest: it must give
// config/prometheus exactly config/default's namespace and name prefix.
func TestPrometheusOverlayNamesAsConfigDefault(t *testing.T) {
	t.Parallel()
	read := func(path string) map[string]any {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return m
	}
	def := read("config/default/kustomization.yaml")
	overlay := read("test/chart/testdata/prometheus/kustomization.yaml")
	for _, f := range []string{"namespace", "namePrefix"} {
		if def[f] != overlay[f] {
			t.Errorf("testdata/prometheus has %s %v, config/default %v", f, overlay[f], def[f])
		}
	}
}

// TestWebhookPortValueChangesFlagAndContainerPort: webhook.port moves the manager's
// --webhook-port and its webhook-server container port, and nothing else (the Service targets
// the port by name).
func TestWebhookPortValueChangesFlagAndContainerPort(t *testing.T) {
	t.Parallel()
	def := renderChart(t, renderChartArgs{namespace: defaultNamespace})
	moved := renderChart(t, renderChartArgs{namespace: defaultNamespace, set: []string{"webhook.port=10443"}})
	got := compareInstalls(def, moved, comparison{})
	dep := "Deployment.apps " + defaultNamespace + "/memory-adapter-operator-controller-manager: "
	want := []string{
		dep + "spec.template.spec.containers[0].args[5]: kustomize \"--webhook-port=9443\", chart \"--webhook-port=10443\"",
		dep + "spec.template.spec.containers[0].ports[2].containerPort: kustomize 9443, chart 10443",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("webhook.port=10443 changed:\n  %s\nwant exactly:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestChartFilesAreCopies fails when a file the chart renders verbatim (files/) differs from
// its source in config/: `make chart-files` copies them again.
func TestChartFilesAreCopies(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(filepath.Join(root, "charts", "sync-files.sh"), "--check")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("charts/sync-files.sh --check: %v\n%s", err, out)
	}
}

// TestChartRefusesABadPrefix: the chart refuses the prefixes hack/render-install.sh refuses
// for length and form, before anything is installed.
func TestChartRefusesABadPrefix(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"Upper-", "1digit-", "a-prefix-that-is-far-too-long-x"} {
		_, stderr, err := runHelm(t, "template", releaseName, filepath.Join(root, chartDir),
			"--namespace", defaultNamespace, "--set", "namePrefix="+p)
		if err == nil || !strings.Contains(stderr, "namePrefix") {
			t.Errorf("namePrefix=%q: helm template did not refuse it naming namePrefix (err %v): %s", p, err, stderr)
		}
	}
}

func requireKinds(t *testing.T, objs []*unstructured.Unstructured, kinds ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, o := range objs {
		have[o.GetKind()] = true
	}
	for _, k := range kinds {
		if !have[k] {
			t.Fatalf("the rendering has no %s: a comparison without it would prove nothing", k)
		}
	}
}

// renderKustomizeArgs is one hack/render-install.sh run: the kustomization and its
// environment (INSTALL_NAMESPACE, INSTALL_PREFIX, MONITORING_NAMESPACE).
type renderKustomizeArgs struct {
	base string
	env  []string
}

// renderChartArgs is one `helm template` run: the release namespace and --set values.
type renderChartArgs struct {
	namespace string
	set       []string
}

// renders caches each rendering by its arguments: several tests compare the same one, and
// each test gets its own deep copy to change.
var renders sync.Map // string -> *renderResult

type renderResult struct {
	once sync.Once
	objs []*unstructured.Unstructured
	err  error
}

func cached(key string, render func() ([]*unstructured.Unstructured, error)) ([]*unstructured.Unstructured, error) {
	v, _ := renders.LoadOrStore(key, &renderResult{})
	r := v.(*renderResult)
	r.once.Do(func() { r.objs, r.err = render() })
	if r.err != nil {
		return nil, r.err
	}
	out := make([]*unstructured.Unstructured, len(r.objs))
	for i, o := range r.objs {
		out[i] = o.DeepCopy()
	}
	return out, nil
}

// images are the manager and adapter images both installers are rendered with: the chart's
// defaults, its appVersion as the tag.
func images(t *testing.T) (manager, adapter string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("Chart.yaml has no appVersion (%v)", err)
	}
	return "ghcr.io/agentmem/memory-adapter-operator:" + c.AppVersion, "ghcr.io/agentmem/memory-adapter:" + c.AppVersion
}

func renderKustomize(t *testing.T, a renderKustomizeArgs) []*unstructured.Unstructured {
	t.Helper()
	manager, adapter := images(t)
	objs, err := cached(fmt.Sprintf("kustomize %s %q", a.base, a.env), func() ([]*unstructured.Unstructured, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "render-install.sh"), manager, a.base)
		// The same kubectl as the rest of the tests, so nothing is built here when
		// KUBEBUILDER_ASSETS is set.
		cmd.Env = append(append(os.Environ(), "MAO_KUBECTL="+kubectl(t), "ADAPTER_IMG="+adapter,
			"INSTALL_NAMESPACE=", "INSTALL_PREFIX=", "MONITORING_NAMESPACE="), a.env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("hack/render-install.sh %s %s (%v): %w\n%s", manager, a.base, a.env, err, stderr.String())
		}
		return splitObjects(stdout.Bytes())
	})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func renderChart(t *testing.T, a renderChartArgs) []*unstructured.Unstructured {
	t.Helper()
	objs, err := cached(fmt.Sprintf("chart %s %q", a.namespace, a.set), func() ([]*unstructured.Unstructured, error) {
		args := []string{"template", releaseName, filepath.Join(root, chartDir), "--namespace", a.namespace}
		for _, s := range a.set {
			args = append(args, "--set", s)
		}
		stdout, stderr, err := runHelm(t, args...)
		if err != nil {
			return nil, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr)
		}
		return splitObjects([]byte(stdout))
	})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func runHelm(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm(t), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// tool is a binary found or built once per test binary by a hack/ script.
type tool struct {
	once sync.Once
	path string
	err  error
}

func (tl *tool) get(t *testing.T, find func() (string, error)) string {
	t.Helper()
	tl.once.Do(func() { tl.path, tl.err = find() })
	if tl.err != nil {
		t.Fatal(tl.err)
	}
	return tl.path
}

// hackScript runs hack/NAME and returns what it printed on stdout, trimmed; its stderr goes
// into the error.
func hackScript(name string, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "hack", name), args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

var helmTool, kubectlTool tool

// helm is hack/helm.sh's binary, built from the Go module proxy on first use and cached.
func helm(t *testing.T) string {
	t.Helper()
	return helmTool.get(t, func() (string, error) { return hackScript("helm.sh") })
}

// kubectl is $KUBEBUILDER_ASSETS/kubectl (hack/test.sh puts one there), else the one
// hack/k8s-binaries.sh builds and caches.
func kubectl(t *testing.T) string {
	t.Helper()
	return kubectlTool.get(t, func() (string, error) {
		dir := os.Getenv("KUBEBUILDER_ASSETS")
		if dir == "" {
			var err error
			if dir, err = hackScript("k8s-binaries.sh", "kubectl"); err != nil {
				return "", err
			}
		}
		path := filepath.Join(dir, "kubectl")
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("no kubectl for kustomize: %w", err)
		}
		return path, nil
	})
}

// splitObjects decodes a multi-document YAML stream into objects, skipping empty documents
// (helm template leaves one where a template renders nothing).
func splitObjects(b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		switch {
		case errors.Is(err, io.EOF):
			return objs, nil
		case err != nil:
			return nil, fmt.Errorf("the document after object %d: %w", len(objs), err)
		case len(m) > 0:
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}
