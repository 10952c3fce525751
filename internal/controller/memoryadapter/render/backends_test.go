package render

// The tests render the built-in backends, which register themselves in the table render reads.
import _ "github.com/agentmem/memory-adapter-operator/internal/backends"
