package main

import (
	"fmt"
	"strings"
)

// violations returns one line per dependency of pkg that breaks a floor rule. mod is the
// module path; deps are pkg's transitive non-test dependencies, of any module (others are
// ignored).
func violations(mod, pkg string, deps []string) []string {
	rel, ok := within(mod, pkg)
	if !ok {
		return nil
	}
	var out []string
	for _, d := range deps {
		dep, ok := within(mod, d)
		if !ok {
			if why := foreign(rel, d); why != "" {
				out = append(out, fmt.Sprintf("%s imports %s: %s", rel, d, why))
			}
			continue
		}
		if why := forbidden(rel, dep); why != "" {
			out = append(out, fmt.Sprintf("%s imports %s: %s", rel, dep, why))
		}
	}
	return out
}

// forbidden explains why package pkg may not depend on dep (both relative to the module
// root), or returns "".
func forbidden(pkg, dep string) string {
	switch {
	case under(dep, "cmd"):
		return "nothing imports a command"
	case under(dep, "test") && !under(pkg, "test"):
		return "test suites are leaves"
	case under(dep, "hack") && !under(pkg, "hack"):
		return "hack tools are leaves"
	}
	switch {
	case under(pkg, "api"):
		if !under(dep, "api") {
			return "api imports nothing of the module outside api"
		}
	case under(pkg, "conformance"):
		if dep != "api/memory" && !under(dep, "conformance") {
			return "the suite and its fake stand on api/memory alone, never on a backend"
		}
	case under(pkg, "adapters/backend"):
		if !under(dep, "api") && !under(dep, "conformance") {
			return "the backend table stands on api and conformance alone: render reads it, and no backend"
		}
	case pkg == "cmd" || under(pkg, "internal/controller") || under(pkg, "internal/webhook"):
		if under(dep, "adapters") && !managerMayLink(dep) {
			return "the manager links a backend's operator side alone (adapters/<name>/<name>deploy), never the backend with its driver: the binary's pages count in the manager's memory"
		}
	case under(pkg, "adapters"):
		switch {
		case under(dep, "api"), under(dep, "adapters/internal"), under(dep, "adapters/backend"), under(dep, "conformance"):
			// The contract, the backends' shared helpers, the table each backend registers
			// itself in, and the suite their harnesses plug into (same floor; the suite itself
			// stands on api/memory alone).
		case under(dep, "adapters"):
			if backend(dep) != backend(pkg) {
				return "adapters never import each other"
			}
		default:
			return "adapters stand on api (and their shared helpers), never on internal/ server or controller code"
		}
	}
	if dep == "adapters/inmemory" || under(dep, "adapters/inmemory") {
		// hack/perf holds benchmark harnesses, which measure the wire over the reference store
		// so that no backend's cost hides it.
		if !under(pkg, "adapters/inmemory") && !under(pkg, "cmd") && !under(pkg, "test") && !under(pkg, "hack/perf") {
			return "the reference store is one backend among others: only commands, test and benchmark harnesses use it"
		}
	}
	return ""
}

// foreign explains why package pkg (relative to the module root) may not depend on the
// package dep of another module, or returns "". The contract and the requirements language are
// for adapter authors and agents in any setting, so they stay free of Kubernetes; the
// controller's render and cond rooms are pure, so they stay free of clients.
func foreign(pkg, dep string) string {
	if under(pkg, "internal/controller/memoryadapter/render") || under(pkg, "internal/controller/memoryadapter/cond") {
		// Exact packages, not prefixes: the API types bring controller-runtime's scheme and
		// the apply configurations bring client-go's rest types, which hold no connection.
		switch dep {
		case "sigs.k8s.io/controller-runtime/pkg/client", "k8s.io/client-go/kubernetes", "k8s.io/client-go/dynamic":
			return "the controller's pure rooms build values; they hold no client and talk to no API server"
		}
		return ""
	}
	if !under(pkg, "api/memory") && !under(pkg, "api/requirements") {
		return ""
	}
	if strings.HasPrefix(dep, "k8s.io/") || strings.HasPrefix(dep, "sigs.k8s.io/") {
		return "the contract and the requirements language import nothing from Kubernetes"
	}
	return ""
}

// within returns p relative to the module root, if p is in the module.
func within(mod, p string) (string, bool) {
	if p == mod {
		return ".", true
	}
	rel, ok := strings.CutPrefix(p, mod+"/")
	return rel, ok
}

// under reports whether p is dir or a package below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// managerMayLink reports whether the manager (cmd, internal/controller, internal/webhook) may
// link dep of adapters: the backend table, a backend's operator side (adapters/<name>/<name>deploy)
// and the wire client (adapters/remote, plain HTTP), none of which holds a driver.
func managerMayLink(dep string) bool {
	return dep == "adapters/backend" || under(dep, "adapters/remote") ||
		dep == "adapters/"+backend(dep)+"/"+backend(dep)+"deploy"
}

// backend names the adapters/<name> subtree p belongs to.
func backend(p string) string {
	parts := strings.SplitN(p, "/", 3)
	if len(parts) < 2 {
		return p
	}
	return parts[1]
}
