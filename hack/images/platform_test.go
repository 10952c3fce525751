package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The other two builds of the project's binaries: the Dockerfile for each platform of a
// multi-platform image (make docker-buildx), and hack/release.sh for the release's binaries.
// Neither can run here in full (no Docker engine; a release takes minutes), so both are held
// to hack/images's goBuild, which make images and the end-to-end suite do run.

// TestDockerfileTargetPlatform checks that the builder stage cross-compiles for the platform
// BuildKit is building: it runs on the build machine ($BUILDPLATFORM) and sets GOOS and GOARCH
// from TARGETOS and TARGETARCH, which must be declared without a default, since a default
// overrides BuildKit's value (docker/buildx#510) and every image would get one architecture.
func TestDockerfileTargetPlatform(t *testing.T) {
	stages := readDockerfile(t)
	var builder *stage
	for i := range stages {
		s := &stages[i]
		if s.name == "builder" {
			builder = s
			continue
		}
		if s.platform != "" {
			// The final stages must take the target's platform, or each image would be
			// the build machine's base with another architecture's binary in it.
			t.Errorf("stage %s is FROM --platform=%s; an image stage takes the target platform", s.name, s.platform)
		}
	}
	if builder == nil {
		t.Fatal("the Dockerfile has no builder stage")
	}
	if p := builder.platform; p != "$BUILDPLATFORM" && p != "${BUILDPLATFORM}" {
		t.Errorf("the builder stage is FROM --platform=%q; want $BUILDPLATFORM, so it runs natively and cross-compiles", p)
	}
	for _, name := range []string{"TARGETOS", "TARGETARCH"} {
		declared := false
		for _, in := range builder.body {
			if in.cmd != "ARG" {
				continue
			}
			switch {
			case in.args == name:
				declared = true
			case strings.HasPrefix(in.args, name+"="):
				t.Errorf("line %d: ARG %s has a default, which overrides the value BuildKit sets for the target platform", in.line, in.args)
			}
		}
		if !declared {
			t.Errorf("the builder stage does not declare ARG %s, so BuildKit's value never reaches its RUN", name)
		}
	}
	steps, err := goBuilds(*builder)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 {
		t.Fatal("the builder stage runs no go build")
	}
	for _, step := range steps {
		for k, want := range map[string]string{"GOOS": "${TARGETOS}", "GOARCH": "${TARGETARCH}"} {
			if got := step.env[k]; got != want {
				t.Errorf("Dockerfile go build %q sets %s=%q; want %s from the target platform", step.args, k, got, want)
			}
		}
	}
}

// TestReleaseBuildMatchesImages checks that hack/release.sh builds each binary for each
// release architecture with hack/images's command: the same flags with the version stamped,
// CGO off, linux, and the architecture asked for. What it prints is what it runs (its build
// step executes the same function's output).
func TestReleaseBuildMatchesImages(t *testing.T) {
	script := filepath.Join(repoRoot, "hack", "release.sh")
	for _, arch := range []string{"amd64", "arm64"} {
		for _, pkg := range []string{"./cmd", "./cmd/memory-adapter"} {
			const version, out = "v1.2.3-rc.1", "dist/bin"
			b, err := exec.Command("bash", script, "--go-build", version, arch, out, pkg).Output()
			if err != nil {
				t.Fatalf("%s --go-build: %v", script, err)
			}
			words := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			env := map[string]string{}
			i := 0
			for ; i < len(words) && envAssignment.MatchString(words[i]); i++ {
				k, v, _ := strings.Cut(words[i], "=")
				env[k] = v
			}
			if i >= len(words) || words[i] != "go" {
				t.Fatalf("release build %q: want NAME=value words, then go", words)
			}
			gotArgs := words[i+1:]
			wantArgs, wantEnv := goBuild(version, out, pkg)
			if !slices.Equal(gotArgs, wantArgs) {
				t.Errorf("release build of %s for %s: go %q; hack/images runs go %q", pkg, arch, gotArgs, wantArgs)
			}
			for _, kv := range wantEnv {
				k, want, _ := strings.Cut(kv, "=")
				if k == "GOARCH" {
					want = arch // hack/images builds for this machine; a release for each
				}
				if env[k] != want {
					t.Errorf("release build of %s for %s sets %s=%q; want %q", pkg, arch, k, env[k], want)
				}
			}
			if len(env) != len(wantEnv) {
				t.Errorf("release build of %s sets %v; hack/images sets exactly %q", pkg, env, wantEnv)
			}
		}
	}
}

// TestDockerfileParsePlatform keeps FROM --platform's parsing honest.
func TestDockerfileParsePlatform(t *testing.T) {
	stages, err := parseDockerfile("FROM --platform=$BUILDPLATFORM golang:1 AS builder\nFROM base AS final\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 || stages[0].platform != "$BUILDPLATFORM" || stages[0].base != "golang:1" ||
		stages[0].name != "builder" || stages[1].platform != "" {
		t.Fatalf("parseDockerfile = %+v", stages)
	}
	if _, err := parseDockerfile("FROM --platform=x\n"); err == nil {
		t.Error("parseDockerfile accepted FROM with a platform and no image")
	}
}
