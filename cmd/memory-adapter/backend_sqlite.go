package main

import (
	"context"

	"github.com/agentmem/memory-adapter-operator/adapters/sqlite"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

func init() {
	backends["sqlite"] = backend{
		open: func(ctx context.Context, c *backendConfig) (memory.ExternalStore, error) {
			scope := c.Scope
			if scope == "" {
				scope = "default"
			}
			return sqlite.Open(ctx, sqlite.Options{Path: c.SQLitePath, Scope: scope, SupportedFilters: c.filters(), AdapterID: c.AdapterID, RequestTimeout: c.RequestTimeout})
		},
		// The conformance Job runs the matrix on its own disposable database file with the
		// same build (the product's rule for embedded backends); --sqlite-path is not used.
		harness: func(ctx context.Context, c *backendConfig) (conformance.Harness, error) {
			return sqlite.NewHarness(ctx, sqlite.HarnessOptions{SupportedFilters: c.filters(), AdapterID: c.AdapterID})
		},
	}
}
