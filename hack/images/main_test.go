package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestParseSpec(t *testing.T) {
	tests := map[string]struct {
		in        string
		wantRef   string
		wantPkg   string
		wantEntry string
		wantUID   int
		wantLinks []string
		wantTree  string
		wantErr   bool
	}{
		"defaults": {in: "ghcr.io/agentmem/memory-adapter:dev=./cmd/memory-adapter",
			wantRef: "ghcr.io/agentmem/memory-adapter:dev", wantPkg: "./cmd/memory-adapter", wantEntry: "/memory-adapter", wantUID: nonrootUID},
		"entrypoint": {in: "ghcr.io/agentmem/memory-adapter-operator:dev=./cmd:/manager",
			wantRef: "ghcr.io/agentmem/memory-adapter-operator:dev", wantPkg: "./cmd", wantEntry: "/manager", wantUID: nonrootUID},
		"uid": {in: "registry.k8s.io/pause:3.10=./hack/images/pause:/pause:65535",
			wantRef: "registry.k8s.io/pause:3.10", wantPkg: "./hack/images/pause", wantEntry: "/pause", wantUID: 65535},
		"no package":          {in: "example.com/x:dev", wantErr: true},
		"empty package":       {in: "example.com/x:dev=", wantErr: true},
		"absolute package":    {in: "example.com/x:dev=/etc", wantErr: true},
		"root uid":            {in: "example.com/x:dev=./cmd:/x:0", wantErr: true},
		"uid not a number":    {in: "example.com/x:dev=./cmd:/x:root", wantErr: true},
		"relative entrypoint": {in: "example.com/x:dev=./cmd:x", wantErr: true},
		"dotdot entrypoint":   {in: "example.com/x:dev=./cmd:/../x", wantErr: true},
		"bad reference":       {in: "Not A Ref=./cmd", wantErr: true},
		"too many parts":      {in: "example.com/x:dev=./cmd:/x:1:/a:/b", wantErr: true},
		"links": {in: "mao.local/busybox:1=@/cache/busybox:/bin/busybox::/bin/sh,/usr/bin/awk,/bin/busybox,",
			wantRef: "mao.local/busybox:1", wantEntry: "/bin/busybox", wantUID: nonrootUID, wantLinks: []string{"/bin/sh", "/usr/bin/awk"}},
		"relative link":  {in: "example.com/x:dev=./cmd:/x::bin/sh", wantErr: true},
		"unclean link":   {in: "example.com/x:dev=./cmd:/x::/bin/../sh", wantErr: true},
		"duplicate link": {in: "example.com/x:dev=./cmd:/x::/bin/sh,/bin/sh", wantErr: true},
		"reserved link":  {in: "example.com/x:dev=./cmd:/x::/etc/passwd", wantErr: true},
		"tree": {in: "ghcr.io/agentmem/python-agent:dev=%/var/tmp/rootfs:/usr/bin/python3",
			wantRef: "ghcr.io/agentmem/python-agent:dev", wantTree: "/var/tmp/rootfs", wantEntry: "/usr/bin/python3", wantUID: nonrootUID},
		"tree uid": {in: "example.com/x:dev=%/var/tmp/rootfs/:/usr/bin/python3:1000",
			wantRef: "example.com/x:dev", wantTree: "/var/tmp/rootfs", wantEntry: "/usr/bin/python3", wantUID: 1000},
		"tree without entrypoint":  {in: "example.com/x:dev=%/var/tmp/rootfs", wantErr: true},
		"tree empty entrypoint":    {in: "example.com/x:dev=%/var/tmp/rootfs::1000", wantErr: true},
		"tree with links":          {in: "example.com/x:dev=%/var/tmp/rootfs:/usr/bin/python3::/bin/sh", wantErr: true},
		"tree relative dir":        {in: "example.com/x:dev=%var/tmp/rootfs:/usr/bin/python3", wantErr: true},
		"tree dotdot dir":          {in: "example.com/x:dev=%/var/../etc:/usr/bin/python3", wantErr: true},
		"tree relative entrypoint": {in: "example.com/x:dev=%/var/tmp/rootfs:usr/bin/python3", wantErr: true},
		"tree root uid":            {in: "example.com/x:dev=%/var/tmp/rootfs:/usr/bin/python3:0", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseSpec(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if got.ref.String() != tc.wantRef || got.pkg != tc.wantPkg || got.entrypoint != tc.wantEntry || got.uid != tc.wantUID ||
				!slices.Equal(got.links, tc.wantLinks) || got.tree != tc.wantTree {
				t.Fatalf("got %s %s %s %d %q tree %q", got.ref, got.pkg, got.entrypoint, got.uid, got.links, got.tree)
			}
		})
	}
}

func TestRootfsLayout(t *testing.T) {
	spec, err := parseSpec("example.com/x:dev=./cmd:/usr/bin/x")
	if err != nil {
		t.Fatal(err)
	}
	layer, err := rootfs(spec, []byte("binary"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := rootfs(spec, []byte("binary"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(layer, again) {
		t.Fatal("rootfs is not deterministic: the same binary must give the same layer digest")
	}
	entries := map[string]*tar.Header{}
	var names []string
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = h
		names = append(names, h.Name)
	}
	for _, want := range []string{"etc/passwd", "etc/group", "tmp/", "home/nonroot/", "usr/", "usr/bin/", "usr/bin/x"} {
		if entries[want] == nil {
			t.Errorf("layer lacks %s (has %q)", want, names)
		}
	}
	if slices.ContainsFunc(names, func(n string) bool { return n == "bin/sh" || n == "bin/" }) {
		t.Error("the image must not contain a shell")
	}
	if h := entries["usr/bin/x"]; h != nil && h.Mode&0o111 == 0 {
		t.Errorf("entrypoint mode %o is not executable", h.Mode)
	}
	if h := entries["tmp/"]; h != nil && h.Mode != 0o1777 {
		t.Errorf("tmp mode %o, want 1777", h.Mode)
	}
	if h := entries["home/nonroot/"]; h != nil && h.Uid != nonrootUID {
		t.Errorf("home/nonroot owned by %d, want %d", h.Uid, nonrootUID)
	}
}

// TestRootfsLinks checks the multi-call layout the local-path helper image needs: the binary
// once, each applet name a symlink to it, every parent directory written before its entries
// and exactly once.
func TestRootfsLinks(t *testing.T) {
	spec, err := parseSpec("mao.local/busybox:1=@/cache/busybox:/bin/busybox::/bin/sh,/bin/mkdir,/usr/sbin/chroot,/sbin/ip")
	if err != nil {
		t.Fatal(err)
	}
	layer, err := rootfs(spec, []byte("multi-call"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name]++
		if d := filepath.Dir(strings.TrimSuffix(h.Name, "/")); d != "." && seen[d+"/"] == 0 {
			t.Errorf("%s comes before its directory %s/", h.Name, d)
		}
		switch h.Name {
		case "bin/sh", "bin/mkdir", "usr/sbin/chroot", "sbin/ip":
			if h.Typeflag != tar.TypeSymlink || h.Linkname != "/bin/busybox" {
				t.Errorf("%s: type %c -> %q, want a symlink to /bin/busybox", h.Name, h.Typeflag, h.Linkname)
			}
		case "bin/busybox":
			if h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
				t.Errorf("bin/busybox: type %c mode %o, want an executable file", h.Typeflag, h.Mode)
			}
		}
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s written %d times", name, n)
		}
	}
	for _, want := range []string{"bin/", "usr/", "usr/sbin/", "sbin/", "bin/busybox", "bin/sh", "sbin/ip"} {
		if seen[want] == 0 {
			t.Errorf("layer lacks %s", want)
		}
	}

	// A link may not stand where a directory of the image is, nor above another entry.
	for _, bad := range []string{"/bin", "/tmp"} {
		spec, err := parseSpec("mao.local/busybox:1=@/cache/busybox:/bin/busybox::" + bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rootfs(spec, []byte("x")); err == nil {
			t.Errorf("link %s over a directory was accepted", bad)
		}
	}
	spec, err = parseSpec("mao.local/busybox:1=@/cache/busybox:/bin/busybox::/usr,/usr/bin/env")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rootfs(spec, []byte("x")); err == nil {
		t.Error("an entry below a link was accepted")
	}
}

// readLayer returns a layer's entries by name, and the names in the order written.
func readLayer(t *testing.T, layer []byte) (map[string]*tar.Header, map[string]string, []string) {
	t.Helper()
	entries, data := map[string]*tar.Header{}, map[string]string{}
	var names []string
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, data, names
		}
		if err != nil {
			t.Fatal(err)
		}
		if entries[h.Name] != nil {
			t.Errorf("%s written twice", h.Name)
		}
		if d := filepath.Dir(strings.TrimSuffix(h.Name, "/")); d != "." && entries[d+"/"] == nil {
			t.Errorf("%s comes before its directory %s/", h.Name, d)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name], data[h.Name] = h, string(b)
		names = append(names, h.Name)
	}
}

// TestTreeRootfs packs a small tree the way the Python agent image's is packed: files with
// their modes, directories, relative and absolute symlinks, a directory the standard files
// also have (etc), all owned by root and dated epoch(), plus the standard files, and the
// same tree twice gives the same bytes whatever the files' own owners and times.
func TestTreeRootfs(t *testing.T) {
	dir := t.TempDir()
	write := func(p string, mode os.FileMode, data string) {
		t.Helper()
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("usr/bin/python3.11", 0o755, "interpreter")
	write("usr/lib/python3.11/os.py", 0o644, "# os")
	write("usr/lib/python3/dist-packages/pkg/__init__.py", 0o600, "")
	write("etc/ssl/openssl.cnf", 0o644, "# cnf")
	if err := os.Mkdir(filepath.Join(dir, "var"), 0o750); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"usr/bin/python3": "python3.11", "lib": "usr/lib", "lib64/ld.so": "/lib/x86_64-linux-gnu/ld.so"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := parseSpec("example.com/py:dev=%" + dir + ":/usr/bin/python3")
	if err != nil {
		t.Fatal(err)
	}
	layer, err := treeRootfs(spec)
	if err != nil {
		t.Fatal(err)
	}
	entries, data, names := readLayer(t, layer)
	want := map[string]struct {
		typ    byte
		mode   int64
		target string
	}{
		"etc/passwd":               {tar.TypeReg, 0o644, ""},
		"etc/group":                {tar.TypeReg, 0o644, ""},
		"home/nonroot/":            {tar.TypeDir, 0o700, ""},
		"tmp/":                     {tar.TypeDir, 0o1777, ""},
		"etc/":                     {tar.TypeDir, 0o755, ""},
		"etc/ssl/":                 {tar.TypeDir, 0o755, ""},
		"etc/ssl/openssl.cnf":      {tar.TypeReg, 0o644, ""},
		"usr/":                     {tar.TypeDir, 0o755, ""},
		"usr/bin/python3.11":       {tar.TypeReg, 0o755, ""},
		"usr/bin/python3":          {tar.TypeSymlink, 0o777, "python3.11"},
		"usr/lib/python3.11/os.py": {tar.TypeReg, 0o644, ""},
		"usr/lib/python3/dist-packages/pkg/__init__.py": {tar.TypeReg, 0o600, ""},
		"var/":        {tar.TypeDir, 0o750, ""},
		"lib":         {tar.TypeSymlink, 0o777, "usr/lib"},
		"lib64/":      {tar.TypeDir, 0o755, ""},
		"lib64/ld.so": {tar.TypeSymlink, 0o777, "/lib/x86_64-linux-gnu/ld.so"},
	}
	for name, w := range want {
		h := entries[name]
		if h == nil {
			t.Errorf("layer lacks %s (has %q)", name, names)
			continue
		}
		if h.Typeflag != w.typ || h.Mode != w.mode || h.Linkname != w.target {
			t.Errorf("%s: type %c mode %o -> %q, want %c %o -> %q", name, h.Typeflag, h.Mode, h.Linkname, w.typ, w.mode, w.target)
		}
	}
	for name, h := range entries {
		if name != "home/nonroot/" && (h.Uid != 0 || h.Gid != 0) {
			t.Errorf("%s owned by %d:%d, want root", name, h.Uid, h.Gid)
		}
		if !h.ModTime.Equal(epoch()) {
			t.Errorf("%s dated %s, want %s", name, h.ModTime, epoch())
		}
	}
	if data["usr/bin/python3.11"] != "interpreter" || data["etc/ssl/openssl.cnf"] != "# cnf" {
		t.Errorf("file contents not kept: %q", data)
	}
	if !strings.HasPrefix(data["etc/passwd"], "root:x:0:0:") {
		t.Errorf("etc/passwd is not the standard one: %q", data["etc/passwd"])
	}
	// Sorted: the tree's entries come in lexical order after the standard ones.
	if i, j := slices.Index(names, "lib"), slices.Index(names, "usr/"); i < 0 || j < 0 || i > j {
		t.Errorf("tree entries not in lexical order: %q", names)
	}

	// Deterministic: again, and after the files' times change, the same bytes.
	for _, p := range []string{"usr/bin/python3.11", "usr/lib/python3.11/os.py", "var"} {
		if err := os.Chtimes(filepath.Join(dir, p), epoch().AddDate(3, 0, 0), epoch().AddDate(5, 0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	again, err := treeRootfs(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(layer, again) {
		t.Fatal("treeRootfs is not deterministic: the same tree must give the same layer digest")
	}
}

// TestTreeRootfsRefuses checks what a tree may not do: replace a file every image carries,
// lack its entrypoint, or hold a FIFO.
func TestTreeRootfsRefuses(t *testing.T) {
	mk := func(t *testing.T, files ...string) imageSpec {
		t.Helper()
		dir := t.TempDir()
		for _, f := range append(files, "bin/x") {
			full := filepath.Join(dir, f)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte("x"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		spec, err := parseSpec("example.com/x:dev=%" + dir + ":/bin/x")
		if err != nil {
			t.Fatal(err)
		}
		return spec
	}
	if _, err := treeRootfs(mk(t, "etc/passwd")); err == nil {
		t.Error("a tree's etc/passwd replaced the image's")
	}
	if _, err := treeRootfs(mk(t, "tmp")); err == nil {
		t.Error("a tree's file replaced the image's /tmp directory")
	}
	spec := mk(t)
	spec.entrypoint = "/bin/missing"
	if _, err := treeRootfs(spec); err == nil {
		t.Error("a tree without its entrypoint was accepted")
	}
	spec = mk(t)
	if err := syscall.Mkfifo(filepath.Join(spec.tree, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := treeRootfs(spec); err == nil {
		t.Error("a FIFO was packed")
	}
}
