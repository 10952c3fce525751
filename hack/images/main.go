package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// nonrootUID is distroless's "nonroot" user; the Dockerfile's final stages use it too.
const nonrootUID = 65532

// imageSpec is one image to build: NAME=PACKAGE[:ENTRYPOINT[:UID[:LINK,...]]], where PACKAGE
// is a ./relative Go package of this module or @/absolute/path of a static binary built
// elsewhere (CoreDNS, built from the module proxy by hack/cluster-up.sh). Each LINK is an
// absolute path made a symlink to the entrypoint: a multi-call binary such as busybox picks
// its applet from the name it was started as, so /bin/sh -> /bin/busybox is a real shell.
//
// The third form, NAME=%/absolute/dir:ENTRYPOINT[:UID], packs a directory tree as the image's
// root (the Python agent image: Debian's interpreter, its libraries and the client package,
// assembled by hack/python-agent-rootfs.sh). Its ENTRYPOINT is required, names a file of the
// tree, and takes no LINKs: the tree carries its own symlinks.
type imageSpec struct {
	ref        name.Tag
	pkg        string
	prebuilt   string
	tree       string
	entrypoint string
	uid        int
	links      []string
}

// specGrammar is the usage line's and parseSpec's errors' statement of the spec forms.
const specGrammar = "NAME=PACKAGE[:ENTRYPOINT[:UID[:LINK,...]]] or NAME=%/DIR:ENTRYPOINT[:UID]"

func parseSpec(s string) (imageSpec, error) {
	ref, rest, ok := strings.Cut(s, "=")
	if !ok || rest == "" {
		return imageSpec{}, fmt.Errorf("image %q: want %s", s, specGrammar)
	}
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return imageSpec{}, fmt.Errorf("image %q: %w", s, err)
	}
	parts := strings.Split(rest, ":")
	prebuilt := strings.HasPrefix(parts[0], "@/") && !strings.Contains(parts[0], "..")
	tree := strings.HasPrefix(parts[0], "%/") && !strings.Contains(parts[0], "..")
	if len(parts) > 4 || (!strings.HasPrefix(parts[0], "./") && !prebuilt && !tree) {
		return imageSpec{}, fmt.Errorf("image %q: want a ./relative package, an @/absolute binary path or a %%/absolute directory", s)
	}
	if tree && (len(parts) < 2 || parts[1] == "" || len(parts) > 3) {
		return imageSpec{}, fmt.Errorf("image %q: a %%/directory image takes ENTRYPOINT[:UID] (an entrypoint, no links)", s)
	}
	spec := imageSpec{ref: tag, pkg: parts[0], entrypoint: "/" + filepath.Base(parts[0]), uid: nonrootUID}
	switch {
	case prebuilt:
		spec.pkg, spec.prebuilt = "", parts[0][1:]
	case tree:
		spec.pkg, spec.tree = "", filepath.Clean(parts[0][1:])
	}
	if len(parts) > 1 && parts[1] != "" {
		if !strings.HasPrefix(parts[1], "/") || strings.Contains(parts[1], "..") {
			return imageSpec{}, fmt.Errorf("image %q: entrypoint must be an absolute path", s)
		}
		spec.entrypoint = parts[1]
	}
	if len(parts) > 2 && parts[2] != "" {
		uid, err := strconv.Atoi(parts[2])
		if err != nil || uid <= 0 || uid > 65535 {
			return imageSpec{}, fmt.Errorf("image %q: uid must be 1..65535 (images never run as root)", s)
		}
		spec.uid = uid
	}
	if len(parts) > 3 {
		links, err := parseLinks(parts[3], spec.entrypoint)
		if err != nil {
			return imageSpec{}, fmt.Errorf("image %q: %w", s, err)
		}
		spec.links = links
	}
	return spec, nil
}

// parseLinks checks a comma-separated list of absolute link paths: each must be clean (no
// "..", no trailing slash), must not be the entrypoint itself or one of the files every image
// carries, and may appear once. Empty items are skipped so a generated list may end in a comma.
func parseLinks(list, entrypoint string) ([]string, error) {
	seen := map[string]bool{entrypoint: true}
	reserved := map[string]bool{"/etc/passwd": true, "/etc/group": true, "/etc/ssl/certs/ca-certificates.crt": true}
	var out []string
	for _, l := range strings.Split(list, ",") {
		if l == "" {
			continue
		}
		if !strings.HasPrefix(l, "/") || filepath.Clean(l) != l || l == "/" {
			return nil, fmt.Errorf("link %q must be a clean absolute path", l)
		}
		if reserved[l] || seen[l] {
			if l == entrypoint {
				continue // busybox --list-full names busybox's own path too
			}
			return nil, fmt.Errorf("link %q is given twice or names a file the image already has", l)
		}
		seen[l] = true
		out = append(out, l)
	}
	return out, nil
}

func main() {
	out := flag.String("out", "", "directory for the image tarballs (required)")
	load := flag.String("load", "", "containerd sockets to import the images into (namespace k8s.io), comma-separated: one per node of the local cluster (hack/cluster sockets)")
	flag.StringVar(&buildVersion, "version", "", "set main.version in the binaries, as the Dockerfile's VERSION build argument does (empty: the binaries' own default)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: images -out DIR [-load SOCKET[,SOCKET...]] "+specGrammar+" ...")
		fmt.Fprintln(os.Stderr, "  PACKAGE: ./relative Go package, or @/absolute/static/binary; %/DIR: a directory tree packed as the image's root")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(context.Background(), *out, *load, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "[images] error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, outDir, socks string, args []string) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	for _, a := range args {
		spec, err := parseSpec(a)
		if err != nil {
			return err
		}
		path, err := build(ctx, spec, outDir)
		if err != nil {
			return err
		}
		// Every node has its own runtime and there is no registry to pull from: each
		// gets its own copy, or a pod scheduled there could never start.
		for _, sock := range strings.Split(socks, ",") {
			if sock == "" {
				continue
			}
			cmd := exec.CommandContext(ctx, "ctr", "-a", sock, "-n", "k8s.io", "images", "import", path)
			if o, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("importing %s into %s: %w: %s", path, sock, err, o)
			}
			fmt.Fprintf(os.Stderr, "[images] loaded %s into containerd %s\n", spec.ref, sock)
		}
	}
	return nil
}

// buildVersion is the -version flag.
var buildVersion string

// ldflags are the Dockerfile's linker flags: stripped, and main.version when a version is
// given (a main package without that variable is unaffected: the linker ignores -X for
// symbols that do not exist).
func ldflags(version string) string {
	if version == "" {
		return "-s -w"
	}
	return "-s -w -X main.version=" + version
}

// goBuild returns the arguments of `go` and the extra environment that build pkg into out:
// the Dockerfile's builder stage runs the same command (flags, CGO off, GOOS and GOARCH set),
// and dockerfile_test.go holds the two to that. GOARCH is the host's, since the images are
// for the local cluster on this machine.
func goBuild(version, out, pkg string) (args, env []string) {
	args = []string{"build", "-trimpath", "-ldflags=" + ldflags(version), "-o", out, pkg}
	env = []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + runtime.GOARCH}
	return args, env
}

// build compiles the package as a static binary and writes the image tarball; it returns
// the tarball path.
func build(ctx context.Context, spec imageSpec, outDir string) (string, error) {
	var (
		layerTar []byte
		err      error
	)
	if spec.tree != "" {
		fmt.Fprintf(os.Stderr, "[images] packing %s\n", spec.tree)
		layerTar, err = treeRootfs(spec)
	} else {
		layerTar, err = binaryRootfs(ctx, spec, outDir)
	}
	if err != nil {
		return "", err
	}
	return writeImage(spec, outDir, layerTar)
}

// binaryRootfs builds the static binary of a PACKAGE spec (or reads the @/prebuilt one) and
// returns its layer.
func binaryRootfs(ctx context.Context, spec imageSpec, outDir string) ([]byte, error) {
	binPath := spec.prebuilt
	if binPath == "" {
		binPath = filepath.Join(outDir, "bin", strings.TrimPrefix(spec.entrypoint, "/"))
		args, env := goBuild(buildVersion, binPath, spec.pkg)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		fmt.Fprintf(os.Stderr, "[images] building %s (CGO_ENABLED=0)\n", spec.pkg)
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("building %s: %w", spec.pkg, err)
		}
	}
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, err
	}
	return rootfs(spec, bin)
}

// writeImage writes the one-layer image of layerTar with the spec's user and entrypoint as a
// docker-archive tarball in outDir and returns its path.
func writeImage(spec imageSpec, outDir string, layerTar []byte) (string, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return "", err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Created = v1.Time{Time: epoch()}
	cfg.Config.User = fmt.Sprintf("%d:%d", spec.uid, spec.uid)
	cfg.Config.Entrypoint = []string{spec.entrypoint}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.source": "https://github.com/agentmem/memory-adapter-operator"}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return "", err
	}
	file := filepath.Join(outDir, strings.NewReplacer("/", "_", ":", "_").Replace(spec.ref.String())+".tar")
	tmp := file + ".tmp"
	if err := tarball.WriteToFile(tmp, spec.ref, img); err != nil {
		return "", fmt.Errorf("writing %s: %w", file, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return "", err
	}
	digest, _ := img.Digest()
	fmt.Fprintf(os.Stderr, "[images] wrote %s (%s) -> %s\n", spec.ref, digest, file)
	return file, nil
}

// epoch is the fixed timestamp for image metadata and files, so identical binaries give
// identical image digests (SOURCE_DATE_EPOCH overrides it, as reproducible builds expect).
func epoch() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}

// layerWriter writes one layer's tar entries, all with the epoch() mtime, and remembers the
// directories and links it wrote so that no entry is written twice or below a symlink.
type layerWriter struct {
	tw     *tar.Writer
	mt     time.Time
	made   map[string]bool
	linked map[string]bool
	files  map[string]bool
}

func newLayerWriter(w io.Writer) *layerWriter {
	return &layerWriter{tw: tar.NewWriter(w), mt: epoch(), made: map[string]bool{}, linked: map[string]bool{}, files: map[string]bool{}}
}

func (l *layerWriter) dir(p string, mode int64, uid int) error {
	l.made[p] = true
	return l.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: l.mt, Format: tar.FormatPAX})
}

// parentsOf writes every missing directory above p, outermost first, as tar readers
// (containerd's unpacker among them) expect a directory before its entries.
func (l *layerWriter) parentsOf(p string) error {
	d := filepath.Dir(p)
	if d == "." {
		return nil
	}
	for _, q := range parents(d) {
		if l.linked[q] {
			return fmt.Errorf("%s is a symlink in this image, so it cannot hold /%s", q, p)
		}
		if !l.made[q] {
			if err := l.dir(q, 0o755, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *layerWriter) file(p string, mode int64, data []byte) error {
	l.files[p] = true
	if err := l.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data)), ModTime: l.mt, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := l.tw.Write(data)
	return err
}

func (l *layerWriter) link(p, target string) error {
	if l.made[p] || l.linked[p] || l.files[p] {
		return fmt.Errorf("link /%s would replace a file, directory or link of the image", p)
	}
	l.linked[p] = true
	return l.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: target, Mode: 0o777, ModTime: l.mt, Format: tar.FormatPAX})
}

// standard writes what every image carries: the users and groups distroless's static
// nonroot image has, its home, a sticky /tmp, and the host's CA bundle for TLS to backends.
func (l *layerWriter) standard() error {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonrootUID, nonrootUID)
	group := fmt.Sprintf("root:x:0:\nnobody:x:65534:\nnonroot:x:%d:\n", nonrootUID)
	steps := []func() error{
		func() error { return l.dir("etc", 0o755, 0) },
		func() error { return l.file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return l.file("etc/group", 0o644, []byte(group)) },
		func() error { return l.dir("home", 0o755, 0) },
		func() error { return l.dir("home/nonroot", 0o700, nonrootUID) },
		func() error { return l.dir("tmp", 0o1777, 0) },
	}
	if ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		steps = append(steps,
			func() error { return l.dir("etc/ssl", 0o755, 0) },
			func() error { return l.dir("etc/ssl/certs", 0o755, 0) },
			func() error { return l.file("etc/ssl/certs/ca-certificates.crt", 0o644, ca) })
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// close ends the tar stream and returns the layer.
func (l *layerWriter) close(buf *bytes.Buffer) ([]byte, error) {
	if err := l.tw.Close(); err != nil {
		return nil, err
	}
	if buf.Len() == 0 {
		return nil, errors.New("empty layer")
	}
	return buf.Bytes(), nil
}

// rootfs builds the single layer of a binary image: the standard files, the binary, and the
// spec's symlinks to the binary (none for the project's own images, which have no shell).
func rootfs(spec imageSpec, bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	l := newLayerWriter(&buf)
	if err := l.standard(); err != nil {
		return nil, err
	}
	entry := strings.TrimPrefix(spec.entrypoint, "/")
	steps := []func() error{
		func() error { return l.parentsOf(entry) },
		func() error { return l.file(entry, 0o755, bin) },
	}
	for _, lk := range spec.links {
		p := strings.TrimPrefix(lk, "/")
		steps = append(steps,
			func() error { return l.parentsOf(p) },
			// Absolute targets resolve inside the container's root, wherever the link is.
			func() error { return l.link(p, spec.entrypoint) })
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	return l.close(&buf)
}

// treeRootfs builds the single layer of a %/DIR image: the standard files, then the tree in
// lexical order (filepath.WalkDir's, so the same tree always gives the same digest) with
// its files, directories and symlinks as they are (permission, setuid/setgid and sticky bits
// kept) but owned by root and dated epoch(). A directory the standard files already made
// (etc, tmp, ...) keeps the standard entry; a tree file where a standard file is (etc/passwd,
// the CA bundle) is an error rather than a silent replacement, and so is anything but a
// file, directory or symlink (a device, a socket, a FIFO). Hard links are packed as copies.
func treeRootfs(spec imageSpec) ([]byte, error) {
	root := spec.tree
	if st, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.ref, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("image %s: %s is not a directory", spec.ref, root)
	}
	if _, err := os.Lstat(filepath.Join(root, spec.entrypoint)); err != nil {
		return nil, fmt.Errorf("image %s: the entrypoint %s is not in %s", spec.ref, spec.entrypoint, root)
	}
	var buf bytes.Buffer
	l := newLayerWriter(&buf)
	if err := l.standard(); err != nil {
		return nil, err
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		p := filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := int64(info.Mode().Perm())
		for _, b := range []struct {
			fm os.FileMode
			tm int64
		}{{os.ModeSetuid, 0o4000}, {os.ModeSetgid, 0o2000}, {os.ModeSticky, 0o1000}} {
			if info.Mode()&b.fm != 0 {
				mode |= b.tm
			}
		}
		if err := l.parentsOf(p); err != nil {
			return err
		}
		switch t := info.Mode().Type(); {
		case t == os.ModeDir:
			if l.made[p] {
				return nil // one of the standard directories: its entry stands
			}
			if l.files[p] || l.linked[p] {
				return fmt.Errorf("%s: a directory where the image has a file", path)
			}
			return l.dir(p, mode, 0)
		case t == os.ModeSymlink:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := l.link(p, target); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			return nil
		case t.IsRegular():
			if l.made[p] || l.files[p] || l.linked[p] {
				return fmt.Errorf("%s would replace /%s, which every image carries", path, p)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return l.file(p, mode, data)
		default:
			return fmt.Errorf("%s: %s is neither a file, a directory nor a symlink", path, info.Mode().Type())
		}
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.ref, err)
	}
	return l.close(&buf)
}

// parents returns a/b/c as [a a/b a/b/c].
func parents(d string) []string {
	var out []string
	cur := ""
	for _, p := range strings.Split(d, "/") {
		cur = filepath.Join(cur, p)
		out = append(out, cur)
	}
	return out
}
