// Package apitest holds the envtest suite of the MemoryAdapter API: it installs the generated
// CRD into a real kube-apiserver and checks admission (the seed's coherence rules, immutability,
// hostile input), the samples, the installer `make build-installer` renders (every object
// through a server-side dry-run apply), and the kubectl experience (explain and printer
// columns) with a kubectl built from the Go module proxy by hack/k8s-binaries.sh.
package apitest
