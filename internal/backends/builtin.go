package backends

// Each import registers its backend from the package's init function.
import (
	_ "github.com/agentmem/memory-adapter-operator/adapters/khive"
	_ "github.com/agentmem/memory-adapter-operator/adapters/postgres"
	_ "github.com/agentmem/memory-adapter-operator/adapters/redis"
	_ "github.com/agentmem/memory-adapter-operator/adapters/sqlite"
)
