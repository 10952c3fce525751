package postgresdeploy

import (
	"fmt"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// Name is the backend's --backend name.
const Name = "postgres"

// The adapter's defaults that its documented lifecycle states: postgres.DefaultRequestTimeout,
// postgres.DefaultConnectTimeout and postgres.DefaultRetry are these values, and their
// comments say why.
const (
	// RequestTimeout bounds one call.
	RequestTimeout = 5 * time.Second
	// ConnectTimeout bounds connecting.
	ConnectTimeout = 5 * time.Second
)

// Retry is each call's default retry policy: one retry after a pause of 50 to 100 ms.
var Retry = memory.RetryPolicy{MaxAttempts: 2, Backoff: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Jitter: memory.JitterEqual}

// FailoverLoss is what status.lifecycle.failover says of PostgreSQL (docs/adapters/postgres.md).
const FailoverLoss = "A store is acknowledged when the server commits it, so what a failover loses is the server's " +
	"replication setting: with asynchronous replication (the default of streaming replication) a commit acknowledged " +
	"before it reached the standby that is promoted is lost; with synchronous replication (Patroni's synchronous_mode, " +
	"CloudNativePG's minSyncReplicas, synchronous_commit on or remote_apply) it is not."

// connectionArgs renders spec.backend.postgres as the adapter's --postgres-* flags.
func connectionArgs(spec *memoryv1alpha1.BackendSpec) []string {
	o := spec.Postgres
	if o == nil {
		return nil
	}
	var args []string
	if o.SSLMode != "" {
		args = append(args, "--postgres-sslmode", string(o.SSLMode))
	}
	if o.MaxConnections != nil {
		args = append(args, fmt.Sprintf("--postgres-max-conns=%d", *o.MaxConnections))
	}
	return args
}

func init() {
	retry := backend.RetryPolicyOf(Retry)
	backend.Register(backend.Backend{
		Name: Name,
		Type: memoryv1alpha1.BackendPostgres,
		// One retry, after 50-100 ms, when pgx reports the failure happened before the
		// statement was sent (postgres.DefaultRetry).
		Lifecycle: backend.WithFailover(backend.Lifecycle(RequestTimeout, ConnectTimeout,
			&memoryv1alpha1.RetryPolicies{Store: retry, Retrieve: retry.DeepCopy(), Search: retry.DeepCopy()}), FailoverLoss),
		RepeatedCalls:  backend.Calls[:],
		DuplicateID:    conformance.DuplicateOverwrite,
		ConnectionArgs: connectionArgs,
		// A deleted adapter's scope stays on the shared server until a purge removes it.
		Purges: true,
	})
}
