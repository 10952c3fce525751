package khive

import (
	"context"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
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

// childArgs are the serve and conformance flags that start kkernel: `mcp`, then db (serve's
// persistent file; empty for conformance, whose harness adds a disposable one), then the
// user's extra arguments. The adapter appends --namespace <scope> itself.
func childArgs(k *memoryv1alpha1.KhiveOptions, db string) []string {
	cmd := k.Command
	if cmd == "" {
		cmd = DefaultCommand
	}
	out := []string{"--khive-command", cmd, "--khive-arg=mcp"}
	if db != "" {
		out = append(out, "--khive-arg="+db)
	}
	for _, a := range k.Args {
		// The = form keeps an argument that starts with "-" a value of --khive-arg.
		out = append(out, "--khive-arg="+a)
	}
	return out
}

func init() {
	backend.Register(backend.Backend{
		Name: "khive",
		Type: memoryv1alpha1.BackendKhive,
		// docs/adapters/khive.md: the kkernel child starts on the first call; a stored id with
		// other content is refused (khive's idempotency_key_conflict); no call retries.
		Lifecycle: memoryv1alpha1.LifecycleSpec{
			ConcurrencySafe:      ptr.To(true),
			DuplicateIDBehaviour: memoryv1alpha1.DuplicateIDReject,
			ConnectionCreation:   memoryv1alpha1.ConnectionAtFirstCall,
			RequestTimeout:       memoryv1alpha1.NewDuration(DefaultRequestTimeout),
			ConnectTimeout:       memoryv1alpha1.NewDuration(DefaultStartTimeout),
			Retry:                backend.NoRetries(),
		},
		ImageRequired: "the operator's adapter image has no kkernel, so name an image holding memory-adapter and kkernel",
		DataVolume: &backend.DataVolume{Storage: func(spec *memoryv1alpha1.BackendSpec) (string, *string, string) {
			if o := spec.Khive; o != nil {
				return o.StorageSize, o.StorageClassName, "spec.backend.khive.storageSize"
			}
			return "", nil, "spec.backend.khive.storageSize"
		}},
		Args: func(spec *memoryv1alpha1.BackendSpec, dataDir string) []string {
			if spec.Khive == nil {
				return nil
			}
			if dataDir == "" {
				// The harness gives every run its own database file under /tmp.
				return childArgs(spec.Khive, "")
			}
			return childArgs(spec.Khive, "--db="+dataDir+"/khive.db")
		},
		// kkernel's home (~/.khive: exports, daemon socket) is the writable /tmp, since the
		// root filesystem is read-only.
		Env: []corev1.EnvVar{{Name: "HOME", Value: "/tmp"}},
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
