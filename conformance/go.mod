module github.com/agentmem/memory-adapter-operator/conformance

go 1.26.0

require (
	github.com/agentmem/memory-adapter-operator/api/memory v0.1.0
	github.com/google/uuid v1.6.0
)

// In this repository the suite is built against the contract beside it; an author outside
// it gets both modules at one tagged release (see README.md, "Adding the suite").
replace github.com/agentmem/memory-adapter-operator/api/memory => ../api/memory
