module example.com/memory-adapter-author

go 1.26.0

require github.com/agentmem/memory-adapter-operator/conformance v0.1.0

require (
	github.com/agentmem/memory-adapter-operator/api/memory v0.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
)

// An author outside this repository has neither line below: `go get
// github.com/agentmem/memory-adapter-operator/conformance@<release>` fetches both modules.
// Here the example builds against the checkout it sits in, so a change to the suite is
// tested by the example in the same commit.
replace (
	github.com/agentmem/memory-adapter-operator/api/memory => ../../api/memory
	github.com/agentmem/memory-adapter-operator/conformance => ../../conformance
)
