// Command kal runs kube-api-linter's analyzers over Go API packages without golangci-lint.
//
// kube-api-linter ships as a golangci-lint module plugin, which `golangci-lint custom` builds
// by cloning golangci-lint from GitHub; this machine reaches only the Go module proxy. kal
// builds the same analyzers from the linter's own registry and runs them with multichecker,
// so the checks are kube-api-linter's, configured by the same YAML (linters, lintersConfig)
// the plugin would read from .golangci.yml.
//
// Usage:
//
//	kal -config hack/kal.yaml [multichecker flags] ./api/v1alpha1/...
//
// It exits non-zero on any finding, as multichecker does.
package main

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/tools/go/analysis/multichecker"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kube-api-linter/pkg/analysis/registry"
	"sigs.k8s.io/kube-api-linter/pkg/config"
	"sigs.k8s.io/kube-api-linter/pkg/validation"
	"sigs.k8s.io/yaml"

	// The linters register themselves with the default registry on import, as in the
	// golangci-lint plugin.
	_ "sigs.k8s.io/kube-api-linter/pkg/registration"
)

func main() {
	path, args, err := configFlag(os.Args[1:])
	if err != nil {
		fail(err)
	}
	cfg, err := loadConfig(path)
	if err != nil {
		fail(err)
	}
	if err := validation.ValidateGolangCIConfig(cfg, field.NewPath("")); err != nil {
		fail(fmt.Errorf("%s: %w", path, err))
	}
	analyzers, err := registry.DefaultRegistry().InitializeLinters(cfg.Linters, cfg.LintersConfig)
	if err != nil {
		fail(fmt.Errorf("%s: %w", path, err))
	}
	// multichecker parses the command line itself, so it must not see -config.
	os.Args = append([]string{os.Args[0]}, args...)
	multichecker.Main(analyzers...)
}

// configFlag takes -config FILE (or -config=FILE) out of args. It must come before
// multichecker's flags are parsed, because the analyzers (and so those flags) depend on it.
func configFlag(args []string) (string, []string, error) {
	var path string
	rest := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-config" || a == "--config":
			if i+1 == len(args) {
				return "", nil, fmt.Errorf("%s needs a file", a)
			}
			i++
			path = args[i]
		case strings.HasPrefix(a, "-config=") || strings.HasPrefix(a, "--config="):
			path = a[strings.Index(a, "=")+1:]
		default:
			rest = append(rest, a)
		}
	}
	if path == "" {
		return "", nil, fmt.Errorf("usage: kal -config FILE [multichecker flags] PACKAGES")
	}
	return path, rest, nil
}

// loadConfig reads the plugin's settings. The plugin decodes them through encoding/json, and
// sigs.k8s.io/yaml does the same, so a file that works here works under golangci-lint too.
func loadConfig(path string) (config.GolangCIConfig, error) {
	var cfg config.GolangCIConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kal:", err)
	os.Exit(2)
}
