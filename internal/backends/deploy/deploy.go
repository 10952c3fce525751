package deploy

import (
	_ "github.com/agentmem/memory-adapter-operator/adapters/khive/khivedeploy"       // registers khive's operator side
	_ "github.com/agentmem/memory-adapter-operator/adapters/postgres/postgresdeploy" // registers postgres's operator side
	_ "github.com/agentmem/memory-adapter-operator/adapters/redis/redisdeploy"       // registers redis's operator side
	_ "github.com/agentmem/memory-adapter-operator/adapters/sqlite/sqlitedeploy"     // registers sqlite's operator side
)
