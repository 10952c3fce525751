package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
)

func TestParseSpec(t *testing.T) {
	tests := map[string]struct {
		in        string
		wantRef   string
		wantPkg   string
		wantEntry string
		wantUID   int
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
		"too many parts":      {in: "example.com/x:dev=./cmd:/x:1:2", wantErr: true},
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
			if got.ref.String() != tc.wantRef || got.pkg != tc.wantPkg || got.entrypoint != tc.wantEntry || got.uid != tc.wantUID {
				t.Fatalf("got %s %s %s %d", got.ref, got.pkg, got.entrypoint, got.uid)
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
