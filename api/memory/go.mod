module github.com/agentmem/memory-adapter-operator/api/memory

go 1.26.0

require (
	github.com/google/uuid v1.6.0
	github.com/onsi/gomega v1.44.0
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/text v0.38.0 // indirect
)
