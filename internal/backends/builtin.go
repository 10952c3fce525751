package backends

// Each import registers its backend from the package's init function: the import is the
// registration (docs/development.md, "Adding a backend").
import (
	_ "github.com/agentmem/memory-adapter-operator/adapters/khive"           // registers khive
	_ "github.com/agentmem/memory-adapter-operator/adapters/postgres"        // registers postgres
	_ "github.com/agentmem/memory-adapter-operator/adapters/redis"           // registers redis
	_ "github.com/agentmem/memory-adapter-operator/adapters/sqlite"          // registers sqlite
	_ "github.com/agentmem/memory-adapter-operator/internal/backends/deploy" // the operator's side of each
)
