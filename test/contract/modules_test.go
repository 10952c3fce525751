package contract

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/conformance/wire/wiretest"
)

// heavyModules are the module path prefixes an adapter author must never inherit from the
// contract: Kubernetes and its clients, gRPC, and the container tooling that only this
// repository's hack/ and test/ use.
var heavyModules = []string{
	"k8s.io/", "sigs.k8s.io/", "google.golang.org/grpc", "github.com/google/go-containerregistry",
	"github.com/containerd/", "github.com/docker/", "github.com/opencontainers/",
}

// heavyIn returns the heavy modules that `go mod graph` output names, each once.
func heavyIn(graph string) []string {
	var found []string
	for _, line := range strings.Split(graph, "\n") {
		for _, node := range strings.Fields(line) {
			mod, _, _ := strings.Cut(node, "@")
			for _, p := range heavyModules {
				if (strings.HasPrefix(mod, p) || mod == strings.TrimSuffix(p, "/")) && !slices.Contains(found, mod) {
					found = append(found, mod)
				}
			}
		}
	}
	return found
}

func TestHeavyIn(t *testing.T) {
	for name, tc := range map[string]struct {
		graph string
		want  []string
	}{
		"clean": {"example.com/a github.com/google/uuid@v1.6.0\nexample.com/a go@1.26.0\n", nil},
		"kubernetes as a dependency of a dependency": {"example.com/a github.com/x/y@v1.0.0\ngithub.com/x/y@v1.0.0 k8s.io/apimachinery@v0.37.0\n", []string{"k8s.io/apimachinery"}},
		"controller-runtime":                         {"example.com/a sigs.k8s.io/controller-runtime@v0.23.0", []string{"sigs.k8s.io/controller-runtime"}},
		"grpc and the registry client, once each": {
			"example.com/a google.golang.org/grpc@v1.80.0\nexample.com/b google.golang.org/grpc@v1.79.0\nexample.com/a github.com/google/go-containerregistry@v0.22.1",
			[]string{"google.golang.org/grpc", "github.com/google/go-containerregistry"},
		},
		"a name that only starts alike": {"example.com/a k8s.io.example.com/x@v1.0.0", nil},
	} {
		t.Run(name, func(t *testing.T) {
			if got := heavyIn(tc.graph); !slices.Equal(got, tc.want) {
				t.Errorf("heavyIn = %q, want %q", got, tc.want)
			}
		})
	}
}

// repoRoot is the checkout this package sits in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// goIn runs the go command in dir with env added, failing the test on a non-zero exit.
func goIn(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	// GOWORK=off: each module is judged on its own go.mod, as an author's build would be.
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestContractModulesStandAlone builds and vets each contract module, and the author
// example, on its own go.mod (tests included), checks that go.mod is tidy, and fails if a
// heavy module is anywhere in its requirement graph.
func TestContractModulesStandAlone(t *testing.T) {
	root := repoRoot(t)
	for _, dir := range []string{"api/memory", "conformance", "examples/go-author"} {
		t.Run(dir, func(t *testing.T) {
			d := filepath.Join(root, dir)
			if heavy := heavyIn(goIn(t, d, nil, "mod", "graph")); len(heavy) > 0 {
				t.Errorf("%s's module graph holds %s: an adapter author depending on it would inherit them", dir, strings.Join(heavy, ", "))
			}
			goIn(t, d, nil, "mod", "tidy", "-diff")
			goIn(t, d, nil, "vet", "./...")
		})
	}
}

// TestAuthorExampleJudgesThePythonAdapter runs examples/go-author, a module outside the
// operator's, the way its author would (go test in their module), against the example
// Python adapter: the truthful server passes with the full claim, and the same server with a
// planted lie fails, so the example's green is the suite's verdict and not a test that
// cannot fail.
func TestAuthorExampleJudgesThePythonAdapter(t *testing.T) {
	example := filepath.Join(repoRoot(t), "examples", "go-author")
	run := func(lie string) (string, error) {
		py := wiretest.StartPython(t, lie)
		cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "-v", "./...")
		cmd.Dir = example
		cmd.Env = append(os.Environ(), "GOWORK=off",
			"ADAPTER_URL="+py.URL, "ADAPTER_TOKEN="+py.Token,
			"HARNESS_URL="+py.HarnessURL, "HARNESS_TOKEN="+py.HarnessToken)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil || !strings.Contains(out, "--- PASS: TestAdapterConformance") || strings.Contains(out, "--- SKIP") {
		t.Fatalf("the truthful Python adapter through the author's example: %v\n%s", err, out)
	}
	out, err = run("rejected-write-400")
	if err == nil || !strings.Contains(out, "--- FAIL: TestAdapterConformance/rejected-write") {
		t.Fatalf("the Python adapter answering a rejected write with 400 passed the author's example (err %v)\n%s", err, out)
	}
}
