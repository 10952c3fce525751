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
//
// for example ghcr.io/agentmem/memory-adapter:dev=./cmd/memory-adapter:/memory-adapter.
// LINKs are absolute paths written as symlinks to the entrypoint, for multi-call binaries:
// the local cluster's storage helper image is Debian's static busybox at /bin/busybox with
// every applet linked (/bin/sh, /bin/mkdir, ...), which is what gives that image a shell.
// An empty UID field keeps the default (65532).
package main
