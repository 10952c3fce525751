package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
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
				!slices.Equal(got.links, tc.wantLinks) {
				t.Fatalf("got %s %s %s %d %q", got.ref, got.pkg, got.entrypoint, got.uid, got.links)
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
