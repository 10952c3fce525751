package redisdeploy

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// Name is the backend's --backend name.
const Name = "redis"

// The adapter's defaults that its documented lifecycle states: redis.DefaultDialTimeout,
// redis.DefaultRequestTimeout, redis.DefaultReadRetries and redis.DefaultReadRetry are these
// values, and their comments say why.
const (
	// DialTimeout bounds connection setup.
	DialTimeout = 2 * time.Second
	// RequestTimeout bounds one command's read and write.
	RequestTimeout = 2 * time.Second
	// ReadRetries is how many times retrieve and search are retried after a transport failure.
	ReadRetries = 2
)

// ReadRetry is the read calls' retry policy: three attempts, pausing 25 ms doubling up to
// 200 ms with equal jitter.
var ReadRetry = memory.RetryPolicy{MaxAttempts: ReadRetries + 1, Backoff: 25 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Jitter: memory.JitterEqual}

// FailoverLoss is what status.lifecycle.failover says of Redis (docs/adapters/redis.md,
// "Redis with Sentinel").
const FailoverLoss = "Redis replicates asynchronously: a store acknowledged before it reached the replica a Sentinel failover " +
	"promotes is lost, and so is one the demoted primary took before it learnt of the promotion. With min_replicas set to " +
	"every replica in a redis-sentinel:// connection, a store is acknowledged only once WAIT saw it on that many replicas."

// connectionArgs renders spec.backend.redis as the adapter's --redis-* flags.
func connectionArgs(spec *memoryv1alpha1.BackendSpec) []string {
	o := spec.Redis
	if o == nil {
		return nil
	}
	var args []string
	if o.Database != nil {
		args = append(args, fmt.Sprintf("--redis-db=%d", *o.Database))
	}
	if o.TLS != "" {
		args = append(args, "--redis-tls", strings.ToLower(string(o.TLS)))
	}
	if o.PoolSize != nil {
		args = append(args, fmt.Sprintf("--redis-pool-size=%d", *o.PoolSize))
	}
	return args
}

func init() {
	read := backend.RetryPolicyOf(ReadRetry)
	backend.Register(backend.Backend{
		Name: Name,
		Type: memoryv1alpha1.BackendRedis,
		// Reads retry twice after a transport error; a write is never retried inside the
		// adapter because a reply lost after EXEC leaves it applied.
		Lifecycle: backend.WithFailover(backend.Lifecycle(RequestTimeout, DialTimeout,
			&memoryv1alpha1.RetryPolicies{Store: backend.Once(), Retrieve: read, Search: read.DeepCopy()}), FailoverLoss),
		RepeatedCalls:  []string{backend.CallRetrieve, backend.CallSearch},
		DuplicateID:    conformance.DuplicateOverwrite,
		ConnectionArgs: connectionArgs,
		// A deleted adapter's scope stays on the shared server until a purge removes it.
		Purges: true,
	})
}
