package khive

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	"github.com/agentmem/memory-adapter-operator/adapters/khive/khivedeploy"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// childOptions are the --khive-command and --khive-arg flags: the MCP child the adapter
// starts.
type childOptions struct {
	command string
	args    []string
}

// Validate accepts any command: starting it says what is wrong.
func (*childOptions) Validate() error { return nil }

// ApplyConnection keeps conn: khive is a child process, not a server with an address.
func (*childOptions) ApplyConnection(conn string) (string, error) { return conn, nil }

func child(c backend.Config) (string, []string) {
	if o, ok := c.Options.(*childOptions); ok {
		return o.command, o.args
	}
	return "", nil
}

func init() {
	backend.Provide(khivedeploy.Name, backend.Runtime{
		Flags: func(fs *pflag.FlagSet) backend.Options {
			o := &childOptions{}
			fs.StringVar(&o.command, "khive-command", DefaultCommand, "khive: the MCP server binary the adapter starts as its child (not in the operator's image: supply an image with kkernel)")
			fs.StringArrayVar(&o.args, "khive-arg", DefaultArgs(), "khive: one argument of the child, repeatable (the adapter appends --namespace <scope>)")
			return o
		},
		Open: func(_ context.Context, c backend.Config) (memory.ExternalStore, error) {
			if len(c.Filters) > 0 {
				return nil, backend.Usagef("khive: --supported-filters: khive has no metadata filter, so the set is always empty")
			}
			cmd, args := child(c)
			// The khive namespace is the scope: one source of truth for where items live.
			return New(Options{Command: cmd, Args: args, Namespace: c.ScopeOrDefault(), AdapterID: c.AdapterID})
		},
		// The matrix runs against the same command with a disposable database file and a
		// fresh namespace per case; pointed at khivefake it also drives the fake's failure modes.
		Harness: func(ctx context.Context, c backend.Config) (conformance.Harness, error) {
			cmd, args := child(c)
			return NewHarness(ctx, HarnessOptions{Command: cmd, Args: args, AdapterID: c.AdapterID})
		},
	})
}
