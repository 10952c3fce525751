// Command images packages static binaries as OCI images without a Docker engine: one layer
// holding the binary, a distroless-style /etc/passwd with the nonroot user 65532, /tmp and
// the host's CA bundle, run as that user. The project's own images have no shell. It writes
// docker-archive tarballs and, with -load, imports them into the local cluster's containerd
// (the k8s.io namespace the kubelet uses), so pods use them with imagePullPolicy
// IfNotPresent under the same names the Dockerfile produces.
//
// Usage (PACKAGE may also be @/absolute/path/to/a/static/binary):
//
//	go run ./hack/images -out DIR [-load SOCKET[,SOCKET...]] NAME=PACKAGE[:ENTRYPOINT[:UID[:LINK,...]]] ...
//	go run ./hack/images -out DIR [-load SOCKET[,SOCKET...]] NAME=%/absolute/dir:ENTRYPOINT[:UID] ...
//
// for example ghcr.io/agentmem/memory-adapter:dev=./cmd/memory-adapter:/memory-adapter.
// LINKs are absolute paths written as symlinks to the entrypoint, for multi-call binaries:
// the local cluster's storage helper image is Debian's static busybox at /bin/busybox with
// every applet linked (/bin/sh, /bin/mkdir, ...), which is what gives that image a shell.
// An empty UID field keeps the default (65532).
//
// The %/absolute/dir form packs a directory tree as the image's root instead of one binary:
// its files, directories and symlinks in lexical order, modes kept, owned by root and dated
// like everything else (epoch, SOURCE_DATE_EPOCH), so the same tree gives the same digest;
// the standard files above are added, and a tree file that would replace one of them is an
// error. ENTRYPOINT is required and must be in the tree. The Python agent image is made so
// from the tree hack/python-agent-rootfs.sh assembles (Debian's python3, the libraries it
// loads, and clients/python's package): make images builds it as PY_AGENT_IMG.
package main
