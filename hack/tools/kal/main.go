// Command kal runs kube-api-linter's analyzers over Go API packages without golangci-lint.
//
// kube-api-linter ships as a golangci-lint module plugin, which `golangci-lint custom` builds
// by cloning golangci-lint from GitHub; the project's machines reach only the Go module proxy. kal
// builds the same analyzers from the linter's own registry and runs them with multichecker,
// so the checks are kube-api-linter's, configured by the same YAML (linters, lintersConfig)
// the plugin would read from .golangci.yml.
//
// Usage:
//
//	kal -config hack/kube-api-linter.yaml [multichecker flags] ./api/v1alpha1/...
//
// It exits non-zero on any finding, as multichecker does. The file may also hold exclusions,
// which golangci-lint would otherwise provide: each drops the findings of one linter whose file
// path and message match its regular expressions, and must say why.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/tools/go/analysis"
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
	if err := validation.ValidateGolangCIConfig(cfg.GolangCIConfig, field.NewPath("")); err != nil {
		fail(fmt.Errorf("%s: %w", path, err))
	}
	analyzers, err := registry.DefaultRegistry().InitializeLinters(cfg.Linters, cfg.LintersConfig)
	if err != nil {
		fail(fmt.Errorf("%s: %w", path, err))
	}
	analyzers, err = excluding(analyzers, cfg.Exclusions)
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

// fileConfig is the plugin's settings (linters, lintersConfig) and the exclusions.
type fileConfig struct {
	config.GolangCIConfig
	Exclusions []exclusion `json:"exclusions"`
}

// exclusion drops the findings of Linter in files matching Path (relative to the working
// directory) whose message matches Text.
type exclusion struct {
	Linter string `json:"linter"`
	Path   string `json:"path"`
	Text   string `json:"text"`
	Reason string `json:"reason"`

	path, text *regexp.Regexp
}

// excluding wraps each analyzer that has exclusions so that its pass drops the findings they
// match before multichecker sees them. Every field of an exclusion is required: one without a
// reason, or naming a linter that is not enabled, is an error rather than a silent no-op.
func excluding(analyzers []*analysis.Analyzer, exclusions []exclusion) ([]*analysis.Analyzer, error) {
	byLinter := map[string][]*exclusion{}
	for i := range exclusions {
		e := &exclusions[i]
		if e.Linter == "" || e.Path == "" || e.Text == "" || strings.TrimSpace(e.Reason) == "" {
			return nil, fmt.Errorf("exclusions[%d]: linter, path, text and reason are all required", i)
		}
		var err error
		if e.path, err = regexp.Compile(e.Path); err != nil {
			return nil, fmt.Errorf("exclusions[%d].path: %w", i, err)
		}
		if e.text, err = regexp.Compile(e.Text); err != nil {
			return nil, fmt.Errorf("exclusions[%d].text: %w", i, err)
		}
		byLinter[e.Linter] = append(byLinter[e.Linter], e)
	}
	out := make([]*analysis.Analyzer, len(analyzers))
	for i, a := range analyzers {
		out[i] = a
		if mine := byLinter[a.Name]; len(mine) > 0 {
			out[i] = filtered(a, mine)
			delete(byLinter, a.Name)
		}
	}
	var errs []error
	for name := range byLinter {
		errs = append(errs, fmt.Errorf("exclusions name linter %q, which is not enabled", name))
	}
	return out, errors.Join(errs...)
}

// filtered is a copy of a whose findings pass through the exclusions first.
func filtered(a *analysis.Analyzer, exclusions []*exclusion) *analysis.Analyzer {
	wd, _ := os.Getwd()
	f := *a
	f.Run = func(pass *analysis.Pass) (any, error) {
		report := pass.Report
		pass.Report = func(d analysis.Diagnostic) {
			file := pass.Fset.Position(d.Pos).Filename
			if rel, err := filepath.Rel(wd, file); err == nil {
				file = filepath.ToSlash(rel)
			}
			for _, e := range exclusions {
				if e.path.MatchString(file) && e.text.MatchString(d.Message) {
					return
				}
			}
			report(d)
		}
		return a.Run(pass)
	}
	return &f
}

// loadConfig reads the file. The plugin decodes its settings through encoding/json, and
// sigs.k8s.io/yaml does the same, so linters and lintersConfig mean here what they would
// under golangci-lint.
func loadConfig(path string) (fileConfig, error) {
	var cfg fileConfig
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
