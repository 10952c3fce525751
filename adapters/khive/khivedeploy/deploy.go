package khivedeploy

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// Name is the backend's --backend name.
const Name = "khive"

// The adapter's defaults that its documented lifecycle and rendered flags state:
// khive.DefaultCommand, khive.DefaultStartTimeout and khive.DefaultRequestTimeout are these
// values, and their comments say why.
const (
	// Command is the MCP server binary the adapter starts as its child.
	Command = "kkernel"
	// StartTimeout bounds starting the child and the MCP handshake.
	StartTimeout = 20 * time.Second
	// RequestTimeout bounds one tools/call.
	RequestTimeout = 35 * time.Second
)

// childArgs are the serve and conformance flags that start kkernel: `mcp`, then db (serve's
// persistent file; empty for conformance, whose harness adds a disposable one), then the
// user's extra arguments. The adapter appends --namespace <scope> itself.
func childArgs(k *memoryv1alpha1.KhiveOptions, db string) []string {
	cmd := k.Command
	if cmd == "" {
		cmd = Command
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
		Name: Name,
		Type: memoryv1alpha1.BackendKhive,
		// docs/adapters/khive.md: the kkernel child starts on the first call; a stored id with
		// other content is refused (khive's idempotency_key_conflict); no call retries.
		Lifecycle: memoryv1alpha1.LifecycleSpec{
			ConcurrencySafe:      ptr.To(true),
			DuplicateIDBehaviour: memoryv1alpha1.DuplicateIDReject,
			ConnectionCreation:   memoryv1alpha1.ConnectionAtFirstCall,
			RequestTimeout:       memoryv1alpha1.NewDuration(RequestTimeout),
			ConnectTimeout:       memoryv1alpha1.NewDuration(StartTimeout),
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
	})
}
