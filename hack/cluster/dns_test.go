package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// corefileDirectives returns the plugin names at the top level of each server block.
func corefileDirectives(corefile string) []string {
	var out []string
	depth := 0
	for _, line := range strings.Split(corefile, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if depth == 1 && fields[0] != "}" {
			out = append(out, fields[0])
		}
		depth += strings.Count(line, "{") - strings.Count(line, "}")
	}
	return out
}

// TestCorednsBuildHasTheCorefilesPlugins keeps hack/cluster-up.sh's CoreDNS build, which
// compiles only COREDNS_PLUGINS, in step with the Corefile: a directive the build lacks would
// stop CoreDNS at start ("unknown directive"), and a plugin the Corefile does not use is build
// time for nothing.
func TestCorednsBuildHasTheCorefilesPlugins(t *testing.T) {
	script, err := os.ReadFile("../cluster-up.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^COREDNS_PLUGINS="([^"]*)"$`).FindSubmatch(script)
	if m == nil {
		t.Fatal(`hack/cluster-up.sh has no COREDNS_PLUGINS="..." line`)
	}
	built := strings.Fields(string(m[1]))
	used := corefileDirectives(corefile)
	if len(used) == 0 {
		t.Fatal("no directives found in the Corefile")
	}
	for _, d := range used {
		if !slices.Contains(built, d) {
			t.Errorf("the Corefile uses %q, which the CoreDNS build (COREDNS_PLUGINS) does not compile", d)
		}
	}
	for _, p := range built {
		if !slices.Contains(used, p) {
			t.Errorf("COREDNS_PLUGINS compiles %q, which the Corefile does not use", p)
		}
	}
}

func TestCorefileDirectives(t *testing.T) {
	got := corefileDirectives(".:53 {\n  errors\n  kubernetes a {\n    pods insecure\n  }\n  forward . x\n}\n")
	if want := []string{"errors", "kubernetes", "forward"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
