// Command images packages the project's static Go binaries as OCI images without a Docker
// engine: one layer holding the binary, a distroless-style /etc/passwd with the nonroot
// user 65532, /tmp and the host's CA bundle, run as that user with no shell. It writes
// docker-archive tarballs and, with -load, imports them into the local cluster's containerd
// (the k8s.io namespace the kubelet uses), so pods use them with imagePullPolicy
// IfNotPresent under the same names the Dockerfile produces.
//
// Usage (PACKAGE may also be @/absolute/path/to/a/static/binary):
//
//	go run ./hack/images -out DIR [-load SOCKET] NAME=PACKAGE[:ENTRYPOINT[:UID]] ...
//
// for example ghcr.io/agentmem/memory-adapter:dev=./cmd/memory-adapter:/memory-adapter.
package main
