package sqlitedeploy

import (
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// Name is the backend's --backend name.
const Name = "sqlite"

// RequestTimeout is the adapter's default bound on one call, which the documented lifecycle
// states: sqlite.DefaultRequestTimeout is this value, and its comment says why.
const RequestTimeout = 5 * time.Second

func init() {
	backend.Register(backend.Backend{
		Name: Name,
		Type: memoryv1alpha1.BackendSQLite,
		// A local failure does not clear within a retry's pause: no call is repeated.
		Lifecycle:   backend.Lifecycle(RequestTimeout, 30*time.Second, backend.NoRetries()),
		DuplicateID: conformance.DuplicateOverwrite,
		DataVolume: &backend.DataVolume{Storage: func(spec *memoryv1alpha1.BackendSpec) (string, *string, string) {
			if o := spec.SQLite; o != nil {
				return o.StorageSize, o.StorageClassName, "spec.backend.sqlite.storageSize"
			}
			return "", nil, "spec.backend.sqlite.storageSize"
		}},
		// serve's file is in the data volume; a conformance Job's is a scratch file (the
		// harness itself makes a disposable one per run).
		Args: func(_ *memoryv1alpha1.BackendSpec, dataDir string) []string {
			if dataDir == "" {
				return []string{"--sqlite-path", "/tmp/conformance.db"}
			}
			return []string{"--sqlite-path", dataDir + "/memory.db"}
		},
	})
}
