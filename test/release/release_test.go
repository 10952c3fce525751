package release

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the module root, two levels above this package.
var repoRoot = filepath.Join("..", "..")

// result is one run of a script.
type result struct {
	stdout, stderr string
	code           int
}

// run runs a script with bash in dir with env added to a minimal environment, so that a
// VERSION, IMG or RELEASE_ALLOW_DIRTY in the caller's shell cannot change what is tested.
func run(t *testing.T, dir string, env []string, script string, args ...string) result {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("bash %s: %v", script, err)
	}
	return result{stdout.String(), stderr.String(), code}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

const changelog = `# Changelog

## [Unreleased]

- Something not released yet.

## [v1.2.0] - 2026-01-02

### Added

- The second thing.

## v1.1.0

- The first thing.

## [v1.0.0] - 2025-12-01

[Unreleased]: https://example.com/compare/v1.2.0...HEAD
[v1.2.0]: https://example.com/releases/tag/v1.2.0
`

// sandbox is a git checkout holding hack/release.sh, a CHANGELOG.md and, when chart is true,
// a chart directory, all committed; dist/ holds a file a refused release must leave alone.
func sandbox(t *testing.T, chart bool) string {
	t.Helper()
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(repoRoot, "hack", "release.sh"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "hack", "release.sh"), string(script))
	write(t, filepath.Join(dir, "CHANGELOG.md"), changelog)
	if chart {
		write(t, filepath.Join(dir, "charts", "memory-adapter-operator", "Chart.yaml"), "apiVersion: v2\nname: memory-adapter-operator\nversion: 0.0.0\n")
	}
	git(t, dir, "init", "-q")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "sandbox")
	write(t, filepath.Join(dir, "dist", "previous-release"), "kept")
	return dir
}

// TestReleaseRefusals runs hack/release.sh with each thing that must stop a release, and
// checks that it says which and why, and stops before touching dist/.
func TestReleaseRefusals(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	tests := []struct {
		name  string
		chart bool
		dirty bool
		env   []string
		want  string // in stderr
	}{
		{name: "no version", want: "VERSION is not set"},
		{name: "the development version", env: []string{"VERSION=dev"}, want: "VERSION=dev is not vMAJOR.MINOR.PATCH"},
		{name: "no v", env: []string{"VERSION=1.2.0"}, want: "is not vMAJOR.MINOR.PATCH"},
		{name: "two parts", env: []string{"VERSION=v1.2"}, want: "is not vMAJOR.MINOR.PATCH"},
		{name: "a leading zero", env: []string{"VERSION=v1.02.0"}, want: "is not vMAJOR.MINOR.PATCH"},
		{name: "build metadata", env: []string{"VERSION=v1.2.0+abc"}, want: "no build metadata"},
		{name: "an empty pre-release", env: []string{"VERSION=v1.2.0-"}, want: "is not vMAJOR.MINOR.PATCH"},
		{name: "no CHANGELOG section", env: []string{"VERSION=v1.3.0"}, want: `CHANGELOG.md has no "## v1.3.0"`},
		{name: "a pre-release without a section", env: []string{"VERSION=v1.2.0-rc.1"}, want: `no "## v1.2.0-rc.1"`},
		{name: "an empty CHANGELOG section", env: []string{"VERSION=v1.0.0"}, want: "v1.0.0 section is empty"},
		{name: "the manager image tagged otherwise", env: []string{"VERSION=v1.2.0", "IMG=ghcr.io/x/op:v1.1.0"},
			want: "image ghcr.io/x/op:v1.1.0: its tag must be the release version (v1.2.0)"},
		{name: "the adapter image untagged", env: []string{"VERSION=v1.2.0", "ADAPTER_IMG=ghcr.io/x/adapter"},
			want: "image ghcr.io/x/adapter: its tag must be"},
		{name: "a short digest", env: []string{"VERSION=v1.2.0", "IMG=ghcr.io/x/op@sha256:abc"}, want: "64 lower-case hex digits"},
		{name: "a tag and a digest", env: []string{"VERSION=v1.2.0", "IMG=ghcr.io/x/op:v1.2.0@sha256:" + digest}, want: "not both a tag and a digest"},
		{name: "no chart", env: []string{"VERSION=v1.2.0"}, want: "charts/memory-adapter-operator/Chart.yaml does not exist"},
		{name: "no chart, images pinned by digest", env: []string{"VERSION=v1.2.0", "IMG=ghcr.io/x/op@sha256:" + digest,
			"ADAPTER_IMG=ghcr.io/x/adapter@sha256:" + digest}, want: "Chart.yaml does not exist"},
		{name: "uncommitted changes", chart: true, dirty: true, env: []string{"VERSION=v1.1.0"}, want: "tracked files have uncommitted changes"},
		// Past every check of the sources; the SBOM tool is the first thing the Makefile
		// provides, and its absence must stop the release before dist/ is emptied.
		{name: "no SBOM tool", chart: true, env: []string{"VERSION=v1.2.0"}, want: "CYCLONEDX_GOMOD=(unset) is not an executable"},
		{name: "uncommitted changes allowed, no SBOM tool", chart: true, dirty: true,
			env: []string{"VERSION=v1.2.0", "RELEASE_ALLOW_DIRTY=1"}, want: "CYCLONEDX_GOMOD=(unset)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := sandbox(t, tt.chart)
			if tt.dirty {
				write(t, filepath.Join(dir, "CHANGELOG.md"), changelog+"\nedited\n")
			}
			r := run(t, dir, tt.env, "hack/release.sh")
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", r.code, r.stderr, tt.want)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "dist", "previous-release")); err != nil || string(b) != "kept" {
				t.Errorf("a refused release changed dist/: %v", err)
			}
		})
	}
}

// TestReleaseNotes checks what --notes takes from a CHANGELOG.md: the version's section,
// bracketed or not, dated or not, without the next section or the link definitions.
func TestReleaseNotes(t *testing.T) {
	dir := sandbox(t, false)
	for version, want := range map[string]string{
		"v1.2.0": "### Added\n\n- The second thing.\n",
		"v1.1.0": "- The first thing.\n",
	} {
		r := run(t, dir, nil, "hack/release.sh", "--notes", version)
		if r.code != 0 || r.stdout != want {
			t.Errorf("--notes %s: exit %d, stdout %q, stderr %s; want %q", version, r.code, r.stdout, r.stderr, want)
		}
	}
	if r := run(t, dir, nil, "hack/release.sh", "--notes", "Unreleased"); r.code != 2 {
		t.Errorf("--notes Unreleased: exit %d; the Unreleased section is not a version", r.code)
	}
}

// TestChangelog checks the real CHANGELOG.md: every section is Unreleased or a version
// make release accepts, with a date, and has notes.
func TestChangelog(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	headers := regexp.MustCompile(`(?m)^## (.*)$`).FindAllStringSubmatch(string(b), -1)
	released := regexp.MustCompile(`^\[(v\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\] - \d{4}-\d{2}-\d{2}$`)
	versions := 0
	for _, h := range headers {
		if h[1] == "[Unreleased]" {
			continue
		}
		m := released.FindStringSubmatch(h[1])
		if m == nil {
			t.Errorf("CHANGELOG.md section %q: want [Unreleased] or [vX.Y.Z] - YYYY-MM-DD", h[1])
			continue
		}
		versions++
		if r := run(t, repoRoot, nil, "hack/release.sh", "--notes", m[1]); r.code != 0 || strings.TrimSpace(r.stdout) == "" {
			t.Errorf("hack/release.sh --notes %s: exit %d, %s", m[1], r.code, r.stderr)
		}
	}
	if versions == 0 {
		t.Error("CHANGELOG.md has no released version")
	}
}

// TestLargeFiles runs hack/check-large-files.sh against a throwaway repository: a tracked file
// over 1 MiB fails it by name until the allow-list names it; one at the limit, or untracked,
// passes.
func TestLargeFiles(t *testing.T) {
	script, err := filepath.Abs(filepath.Join(repoRoot, "hack", "check-large-files.sh"))
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1 << 20
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	write(t, filepath.Join(dir, "README"), "small\n")
	write(t, filepath.Join(dir, "at-limit.bin"), strings.Repeat("x", limit))
	write(t, filepath.Join(dir, "build", "big binary"), strings.Repeat("x", limit+1))
	git(t, dir, "add", "README", "at-limit.bin")
	check := func(wantCode int, wantErr string) {
		t.Helper()
		r := run(t, dir, nil, script, dir)
		if r.code != wantCode || !strings.Contains(r.stderr, wantErr) {
			t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", r.code, r.stderr, wantCode, wantErr)
		}
	}
	check(0, "") // the big file is not tracked
	git(t, dir, "add", "build/big binary")
	check(1, "build/big binary is 1048577 bytes, over the 1048576-byte limit")
	write(t, filepath.Join(dir, "hack", "large-files.allow"), "# why: a test fixture\n  build/big binary  # kept on purpose\n")
	check(0, "")
	write(t, filepath.Join(dir, "hack", "large-files.allow"), "build/big\n")
	check(1, "build/big binary is")

	// The checkout itself, as make verify checks it.
	if r := run(t, repoRoot, nil, script); r.code != 0 {
		t.Errorf("hack/check-large-files.sh on this checkout: exit %d\n%s", r.code, r.stderr)
	}
}
