// kal, the driver of kube-api-linter, which golangci-lint can only load as a module plugin
// (built by `golangci-lint custom`, which clones golangci-lint from GitHub). It is a module of
// its own so that kube-api-linter's dependencies stay out of the operator's go.mod; `make
// kube-api-linter` builds it from the Go module proxy into ./bin.
module github.com/agentmem/memory-adapter-operator/hack/tools

go 1.26.0

require (
	golang.org/x/tools v0.37.0
	k8s.io/apimachinery v0.32.3
	sigs.k8s.io/kube-api-linter v0.0.0-20260716143926-092fe0c72997
	sigs.k8s.io/yaml v1.4.0
)

require (
	golang.org/x/mod v0.28.0 // indirect
	golang.org/x/sync v0.17.0 // indirect
	k8s.io/gengo/v2 v2.0.0-20250922181213-ec3ebc5fd46b // indirect
	k8s.io/utils v0.0.0-20241104100929-3ea5e8cea738 // indirect
)
