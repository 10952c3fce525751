package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// No Docker engine runs on the project's machines, so the Dockerfile is never built there;
// these tests hold it to hack/images, which is built and run (make images, the e2e suite):
// the same go build, the same packages and entrypoints, the same non-root user, and stages
// and sources that exist.

// repoRoot is the module root, two levels above this package.
const repoRoot = "../.."

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	line int    // where it starts, for messages
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// stage is one FROM and the instructions under it.
type stage struct {
	name, base string
	platform   string // FROM --platform=..., as written
	body       []instruction
}

// parseDockerfile splits a Dockerfile into stages. It knows what this project's Dockerfile
// uses (comments, backslash continuations, FROM [--platform=P] ... AS name) and no more; anything else in
// front of the first FROM but ARG fails, so a construct it does not understand is not
// silently read wrong.
func parseDockerfile(text string) ([]stage, error) {
	var (
		stages []stage
		cur    *instruction
		insts  []instruction
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if cur == nil && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if cur != nil && strings.HasPrefix(l, "#") {
			continue // Docker drops comment lines inside a continued instruction too
		}
		more := strings.HasSuffix(l, `\`)
		l = strings.TrimSpace(strings.TrimSuffix(l, `\`))
		if cur == nil {
			cmd, args, _ := strings.Cut(l, " ")
			cur = &instruction{line: n, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		} else {
			cur.args += " " + l
		}
		if !more {
			insts = append(insts, *cur)
			cur = nil
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: the last instruction ends in a continuation", cur.line)
	}
	for _, in := range insts {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			var s stage
			if p, ok := strings.CutPrefix(f[0], "--platform="); ok {
				s.platform, f = p, f[1:]
			}
			if len(f) == 0 {
				return nil, fmt.Errorf("line %d: FROM %s: no image", in.line, in.args)
			}
			s.base = f[0]
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			} else if len(f) != 1 {
				return nil, fmt.Errorf("line %d: FROM %s: want IMAGE [AS NAME]", in.line, in.args)
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				return nil, fmt.Errorf("line %d: %s before the first FROM", in.line, in.cmd)
			}
			continue
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	return stages, nil
}

// shellWords splits a command line the way sh does for the plain words, single and double
// quotes this Dockerfile uses; variables are left as written (${VERSION}). && separates
// commands and is returned as its own word.
func shellWords(s string) ([]string, error) {
	var (
		words []string
		w     strings.Builder
		in    bool // inside a word
		quote rune
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// goBuildStep is one `go build` of the builder stage: its environment assignments and the
// arguments after `go`.
type goBuildStep struct {
	env  map[string]string
	args []string
}

// envAssignment is a NAME=value word in front of a command.
var envAssignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// goBuilds returns every `go build` in a stage's RUN instructions.
func goBuilds(s stage) ([]goBuildStep, error) {
	var out []goBuildStep
	for _, in := range s.body {
		if in.cmd != "RUN" {
			continue
		}
		words, err := shellWords(in.args)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", in.line, err)
		}
		for _, cmd := range splitAnd(words) {
			env := map[string]string{}
			i := 0
			for ; i < len(cmd) && envAssignment.MatchString(cmd[i]); i++ {
				k, v, _ := strings.Cut(cmd[i], "=")
				env[k] = v
			}
			if len(cmd)-i >= 2 && cmd[i] == "go" && cmd[i+1] == "build" {
				out = append(out, goBuildStep{env: env, args: cmd[i+1:]})
			}
		}
	}
	return out, nil
}

// splitAnd splits words at each && into separate commands.
func splitAnd(words []string) [][]string {
	var cmds [][]string
	start := 0
	for i, w := range words {
		if w == "&&" {
			cmds = append(cmds, words[start:i])
			start = i + 1
		}
	}
	return append(cmds, words[start:])
}

// outputAndPackage takes -o OUT and the package (the last argument) out of go build's
// arguments and returns the flags that are left.
func outputAndPackage(args []string) (flags []string, out, pkg string) {
	if len(args) == 0 {
		return nil, "", ""
	}
	pkg = args[len(args)-1]
	for i := 0; i < len(args)-1; i++ {
		if args[i] == "-o" && i+1 < len(args)-1 {
			out = args[i+1]
			i++
			continue
		}
		flags = append(flags, args[i])
	}
	return flags, out, pkg
}

func readDockerfile(t *testing.T) []stage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages, err := parseDockerfile(string(b))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	return stages
}

// argDefault returns the default of ARG name in a stage, or "" and false.
func argDefault(s stage, name string) (string, bool) {
	for _, in := range s.body {
		if in.cmd == "ARG" {
			if k, v, ok := strings.Cut(in.args, "="); ok && k == name {
				return v, true
			}
		}
	}
	return "", false
}

// makeImageSpecs returns the PACKAGE:ENTRYPOINT pairs that the Makefile's images target gives
// hack/images for the project's own images, so the Dockerfile can be held to the same ones.
func makeImageSpecs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]string{}
	for _, m := range regexp.MustCompile(`"\$\([A-Z_]*IMG\)=(\./[^":]+):(/[^":]+)"`).FindAllSubmatch(b, -1) {
		specs[string(m[2])] = string(m[1])
	}
	if len(specs) == 0 {
		t.Fatal(`the Makefile's images target passes no "$(…IMG)=./PACKAGE:/ENTRYPOINT" to hack/images`)
	}
	return specs
}

// TestDockerfileBuildMatchesImages holds each go build of the Dockerfile's builder stage to the
// command hack/images runs: the same flags (ldflags with the version substituted), CGO off,
// GOOS and GOARCH set, and the same packages behind the same entrypoints.
func TestDockerfileBuildMatchesImages(t *testing.T) {
	stages := readDockerfile(t)
	byName := map[string]stage{}
	for _, s := range stages {
		byName[s.name] = s
	}
	builder, ok := byName["builder"]
	if !ok {
		t.Fatal("the Dockerfile has no builder stage")
	}
	steps, err := goBuilds(builder)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 {
		t.Fatal("the builder stage runs no go build")
	}
	dockerVersion, ok := argDefault(builder, "VERSION")
	if !ok {
		t.Fatal("the builder stage has no ARG VERSION=default; hack/images's -version has no counterpart")
	}

	ignored := dockerignore(t)
	builtTo := map[string]string{} // /out/... -> package
	for _, step := range steps {
		flags, out, pkg := outputAndPackage(step.args)
		// The same check for the Dockerfile's default version and a release version, so
		// that ${VERSION} is really what reaches main.version.
		for _, v := range []string{dockerVersion, "v1.2.3-release"} {
			got := make([]string, len(flags))
			for i, f := range flags {
				got[i] = strings.ReplaceAll(f, "${VERSION}", v)
			}
			wantArgs, _ := goBuild(v, out, pkg)
			wantFlags, _, _ := outputAndPackage(wantArgs)
			if !slices.Equal(got, wantFlags) {
				t.Errorf("Dockerfile go build of %s with VERSION=%s: flags %q, hack/images uses %q", pkg, v, got, wantFlags)
			}
		}
		_, wantEnv := goBuild(dockerVersion, out, pkg)
		for _, kv := range wantEnv {
			k, want, _ := strings.Cut(kv, "=")
			have, ok := step.env[k]
			switch {
			case !ok:
				t.Errorf("Dockerfile go build of %s does not set %s; hack/images sets %s", pkg, k, kv)
			case k == "CGO_ENABLED" && have != want:
				// GOOS and GOARCH come from the build's target platform there and from
				// the host here; CGO must be off in both, or the binary is not static.
				t.Errorf("Dockerfile go build of %s sets CGO_ENABLED=%s; hack/images sets %s", pkg, have, want)
			}
		}
		if out == "" || !strings.HasPrefix(pkg, "./") {
			t.Errorf("Dockerfile go build %q: want -o OUT and a ./package last", step.args)
			continue
		}
		if gofiles, _ := filepath.Glob(filepath.Join(repoRoot, pkg, "*.go")); len(gofiles) == 0 {
			t.Errorf("Dockerfile builds %s, which holds no Go files", pkg)
		}
		if pat := excludedBy(ignored, pkg); pat != "" {
			t.Errorf("Dockerfile builds %s, which .dockerignore (%s) keeps out of the build context", pkg, pat)
		}
		builtTo[out] = pkg
	}

	// Each final stage copies one built binary and runs it; the package behind its
	// entrypoint is the one the Makefile gives hack/images for that entrypoint.
	specs := makeImageSpecs(t)
	for entry, pkg := range specs {
		found := false
		for _, s := range stages {
			for _, in := range s.body {
				if in.cmd != "COPY" || !strings.HasPrefix(in.args, "--from=builder ") {
					continue
				}
				f := strings.Fields(strings.TrimPrefix(in.args, "--from=builder "))
				if len(f) == 2 && f[1] == entry {
					found = true
					if builtTo[f[0]] != pkg {
						t.Errorf("stage %s copies %s (built from %q) to %s; hack/images builds %s there", s.name, f[0], builtTo[f[0]], entry, pkg)
					}
					if ep := entrypoint(s); ep != entry {
						t.Errorf("stage %s runs %q; hack/images's image runs %s", s.name, ep, entry)
					}
				}
			}
		}
		if !found {
			t.Errorf("no Dockerfile stage copies a binary to %s, which hack/images builds from %s", entry, pkg)
		}
	}
	// And the other way: every image stage is one that make images also builds.
	for _, s := range stages {
		if ep := entrypoint(s); s.name != "builder" && specs[ep] == "" {
			t.Errorf("stage %s runs %q, which the Makefile's images target does not build", s.name, ep)
		}
	}
}

// entrypoint returns the exec-form ENTRYPOINT's first element, or "" when there is none.
func entrypoint(s stage) string {
	for _, in := range s.body {
		if in.cmd == "ENTRYPOINT" {
			if m := regexp.MustCompile(`^\[\s*"([^"]+)"`).FindStringSubmatch(in.args); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// dockerignore returns the .dockerignore patterns, relative to the context root and without a
// trailing slash. This file uses plain names and globs only; no ! exceptions and no **, which
// filepath.Match would not read the way Docker does, so they fail the test rather than pass.
func dockerignore(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") || strings.Contains(l, "**") {
			t.Fatalf(".dockerignore pattern %q: teach this test Docker's exception and ** rules first", l)
		}
		pats = append(pats, strings.TrimSuffix(strings.TrimPrefix(l, "/"), "/"))
	}
	return pats
}

// excludedBy returns the pattern that excludes path or one of its parent directories from the
// build context, or "".
func excludedBy(pats []string, path string) string {
	for p := filepath.Clean(path); p != "." && p != "/"; p = filepath.Dir(p) {
		for _, pat := range pats {
			if ok, _ := filepath.Match(pat, p); ok {
				return pat
			}
		}
	}
	return ""
}

// TestDockerfileStages checks what a docker build would refuse or get wrong and this machine
// can see without one: every COPY --from names an earlier stage, every context source exists
// and is not excluded by .dockerignore, every stage that is an image runs as the numeric
// non-root user hack/images uses, and the manager is the default (last) target.
func TestDockerfileStages(t *testing.T) {
	stages := readDockerfile(t)
	ignored := dockerignore(t)

	seen := map[string]bool{}
	for i, s := range stages {
		if s.name == "" {
			t.Errorf("stage %d (FROM %s) has no name; every stage is a target or copied from", i, s.base)
		}
		for _, in := range s.body {
			if in.cmd != "COPY" {
				continue
			}
			f := strings.Fields(in.args)
			if len(f) < 2 {
				t.Errorf("line %d: COPY %s: want SOURCE... DEST", in.line, in.args)
				continue
			}
			if from, ok := strings.CutPrefix(f[0], "--from="); ok {
				if !seen[from] {
					t.Errorf("line %d: COPY --from=%s names no earlier stage", in.line, from)
				}
				continue
			}
			for _, src := range f[:len(f)-1] {
				if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
					t.Errorf("line %d: COPY source %s: %v", in.line, src, err)
				}
				if pat := excludedBy(ignored, src); pat != "" {
					t.Errorf("line %d: COPY source %s is excluded by .dockerignore (%s)", in.line, src, pat)
				}
			}
		}
		seen[s.name] = true

		if s.name == "builder" {
			continue
		}
		user := ""
		for _, in := range s.body {
			if in.cmd == "USER" {
				user = in.args
			}
		}
		uid, gid, _ := strings.Cut(user, ":")
		for _, id := range []string{uid, gid} {
			// Numeric, so that the kubelet can check runAsNonRoot without reading the
			// image's /etc/passwd; non-zero, since the images never run as root.
			if n, err := strconv.Atoi(id); err != nil || n != nonrootUID {
				t.Errorf("stage %s runs as USER %q; want %d:%d, the numeric non-root user hack/images uses", s.name, user, nonrootUID, nonrootUID)
				break
			}
		}
		if entrypoint(s) == "" {
			t.Errorf("stage %s has no exec-form ENTRYPOINT", s.name)
		}
	}
	if len(stages) == 0 || stages[len(stages)-1].name != "manager" {
		t.Error("the last stage, docker build's default target, must be manager (the kubebuilder layout)")
	}
}

// TestDockerfileParsers keeps the small parsers above honest on what they must get right.
func TestDockerfileParsers(t *testing.T) {
	words, err := shellWords(`A=1 go build -ldflags="-s -w -X main.version=${VERSION}" -o '/out/x y' ./cmd && true`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A=1", "go", "build", "-ldflags=-s -w -X main.version=${VERSION}", "-o", "/out/x y", "./cmd", "&&", "true"}
	if !slices.Equal(words, want) {
		t.Fatalf("shellWords = %q, want %q", words, want)
	}
	if _, err := shellWords(`go build "-ldflags=-s`); err == nil {
		t.Fatal("shellWords accepted an unterminated quote")
	}

	stages, err := parseDockerfile("ARG X=1\nFROM a AS b\n# c\nRUN A=1 go build \\\n  # inside\n  -o /o ./p\nFROM d AS e\nUSER 1:1\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 || stages[0].name != "b" || stages[1].base != "d" || len(stages[1].body) != 1 {
		t.Fatalf("parseDockerfile = %+v", stages)
	}
	steps, err := goBuilds(stages[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].env["A"] != "1" || !slices.Equal(steps[0].args, []string{"build", "-o", "/o", "./p"}) {
		t.Fatalf("goBuilds = %+v", steps)
	}
	for _, bad := range []string{"RUN x\nFROM a", "FROM a AS\n", "FROM a\nRUN x \\\n"} {
		if _, err := parseDockerfile(bad); err == nil {
			t.Errorf("parseDockerfile accepted %q", bad)
		}
	}
}
