package main

import (
	"context"

	"github.com/agentmem/memory-adapter-operator/adapters/khive"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

func init() {
	backends["khive"] = backend{
		open: func(_ context.Context, c *backendConfig) (memory.ExternalStore, error) {
			if c.filtersSet && len(c.SupportedFilters) > 0 {
				return nil, usageError("khive: --supported-filters: khive has no metadata filter, so the set is always empty")
			}
			scope := c.Scope
			if scope == "" {
				scope = "default"
			}
			// The khive namespace is the scope: one source of truth for where items live.
			return khive.New(khive.Options{Command: c.KhiveCommand, Args: c.KhiveArgs, Namespace: scope, AdapterID: c.AdapterID})
		},
		// The matrix runs against the same command with a disposable database file and a
		// fresh namespace per case; pointed at khivefake it also drives the fake's failure modes.
		harness: func(ctx context.Context, c *backendConfig) (conformance.Harness, error) {
			return khive.NewHarness(ctx, khive.HarnessOptions{Command: c.KhiveCommand, Args: c.KhiveArgs, AdapterID: c.AdapterID})
		},
	}
}
