package toybackend

import (
	"context"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/conformance/fake"
)

// Type is the toy's spec.backend.type.
const Type memoryv1alpha1.BackendType = "Toy"

// Greeting is the value the operator renders for --toy-greeting.
const Greeting = "hello"

// options is the toy's own flag, --toy-greeting.
type options struct{ greeting string }

// Validate refuses an empty greeting, so a test can see a backend's own refusal.
func (o *options) Validate() error {
	if o.greeting == "" {
		return backend.Usagef("--toy-greeting must not be empty")
	}
	return nil
}

// ApplyConnection keeps conn.
func (*options) ApplyConnection(conn string) (string, error) { return conn, nil }

func init() {
	backend.Register(backend.Backend{
		Name:          "toy",
		Type:          Type,
		Lifecycle:     backend.Lifecycle(7*time.Second, 11*time.Second, backend.NoRetries()),
		RepeatedCalls: nil,
		DuplicateID:   conformance.DuplicateOverwrite,
		Args: func(_ *memoryv1alpha1.BackendSpec, dataDir string) []string {
			if dataDir != "" {
				return []string{"--toy-greeting=" + Greeting}
			}
			return []string{"--toy-greeting=" + Greeting + "-run"}
		},
		Env: []corev1.EnvVar{{Name: "TOY_MODE", Value: "demo"}},
		// The binary's side, given here at once: the toy links no driver the manager would
		// rather not (the built-in backends register it from their own package through
		// backend.Provide, after a <name>deploy package registered the rest).
		Runtime: backend.Runtime{
			Flags: func(fs *pflag.FlagSet) backend.Options {
				o := &options{}
				fs.StringVar(&o.greeting, "toy-greeting", Greeting, "toy: what the toy says")
				return o
			},
			Open: func(_ context.Context, c backend.Config) (memory.ExternalStore, error) {
				return inmemory.New(inmemory.Options{SupportedFilters: c.Filters}), nil
			},
			Harness: func(context.Context, backend.Config) (conformance.Harness, error) {
				return fake.New(fake.Config{}), nil
			},
			// A shared server of its own would keep items past the adapter: the toy "purges" by
			// reporting nothing deleted, which is enough for the operator's finalizer path.
			Purge: func(context.Context, backend.Config) (backend.PurgeResult, error) {
				return backend.PurgeResult{}, nil
			},
		},
	})
}
