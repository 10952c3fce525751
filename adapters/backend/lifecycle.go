package backend

import (
	"time"

	"k8s.io/utils/ptr"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// Once is a retry policy of one attempt: the call is never repeated.
func Once() *memoryv1alpha1.RetryPolicy {
	return &memoryv1alpha1.RetryPolicy{MaxAttempts: ptr.To[int32](1)}
}

// NoRetries are the policies of an adapter that repeats no call.
func NoRetries() *memoryv1alpha1.RetryPolicies {
	return &memoryv1alpha1.RetryPolicies{Store: Once(), Retrieve: Once(), Search: Once()}
}

// RetryPolicyOf is an adapter's own retry policy as the API states it, so that a backend's
// documented lifecycle is derived from the constants its code runs with.
func RetryPolicyOf(p memory.RetryPolicy) *memoryv1alpha1.RetryPolicy {
	out := &memoryv1alpha1.RetryPolicy{MaxAttempts: ptr.To(int32(p.MaxAttempts))}
	if p.Backoff > 0 {
		out.Backoff = memoryv1alpha1.NewDuration(p.Backoff)
	}
	if p.MaxBackoff > 0 {
		out.MaxBackoff = memoryv1alpha1.NewDuration(p.MaxBackoff)
	}
	switch p.Jitter {
	case memory.JitterFull:
		out.Jitter = memoryv1alpha1.JitterFull
	case memory.JitterEqual:
		out.Jitter = memoryv1alpha1.JitterEqual
	case memory.JitterNone:
		out.Jitter = memoryv1alpha1.JitterNone
	}
	return out
}

// Lifecycle is the documented lifecycle most adapters share: concurrency-safe, an existing
// id overwritten, the connection made by the constructor, with the given timeouts and
// policies.
func Lifecycle(request, connect time.Duration, retry *memoryv1alpha1.RetryPolicies) memoryv1alpha1.LifecycleSpec {
	return memoryv1alpha1.LifecycleSpec{
		ConcurrencySafe:      ptr.To(true),
		DuplicateIDBehaviour: memoryv1alpha1.DuplicateIDOverwrite,
		ConnectionCreation:   memoryv1alpha1.ConnectionAtConstructor,
		RequestTimeout:       memoryv1alpha1.NewDuration(request),
		ConnectTimeout:       memoryv1alpha1.NewDuration(connect),
		Retry:                retry,
	}
}

// WithFailover is l stating what a failover of the backend's servers can lose.
func WithFailover(l memoryv1alpha1.LifecycleSpec, loss string) memoryv1alpha1.LifecycleSpec {
	l.Failover = loss
	return l
}
