package main

import (
	"context"

	"github.com/agentmem/memory-adapter-operator/adapters/postgres"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

func init() {
	backends["postgres"] = backend{
		open: func(ctx context.Context, c *backendConfig) (memory.ExternalStore, error) {
			if c.connection == "" {
				return nil, usageError("postgres: no connection (--connection-file or $%s: a postgres:// URL)", connectionEnv)
			}
			scope := c.Scope
			if scope == "" {
				scope = "default"
			}
			return postgres.Open(ctx, postgres.Options{URL: c.connection, Scope: scope, SupportedFilters: c.filters(), AdapterID: c.AdapterID, RequestTimeout: c.RequestTimeout,
				StoreRetry: c.Retry[0], RetrieveRetry: c.Retry[1], SearchRetry: c.Retry[2]})
		},
		// The matrix runs in a disposable schema on the same server, dropped at the end.
		harness: func(ctx context.Context, c *backendConfig) (conformance.Harness, error) {
			if c.connection == "" {
				return nil, usageError("postgres: no connection (--connection-file or $%s: a postgres:// URL)", connectionEnv)
			}
			return postgres.NewHarness(ctx, postgres.HarnessOptions{URL: c.connection, SupportedFilters: c.filters(), AdapterID: c.AdapterID})
		},
	}
}
