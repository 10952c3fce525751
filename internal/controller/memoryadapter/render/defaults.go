package render

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// Defaults of the spec's optional fields that do not depend on the backend. The CRD
// documents the same values.
const (
	defaultConformanceInterval = 24 * time.Hour
	defaultConformanceTimeout  = 10 * time.Minute
	defaultHealthPeriod        = 30 * time.Second
	defaultFailureThreshold    = 3
	// defaultStorageSize is a data volume's size when the backend's options leave it out.
	defaultStorageSize = "1Gi"
)

// Settings are the effective values of a MemoryAdapter's optional spec fields.
type Settings struct {
	Replicas int32
	Image    string
	// OperatorImage is the manager's --adapter-image: the conformance container of an
	// External adapter's run, whose spec.image is the user's server.
	OperatorImage       string
	ConformanceInterval time.Duration
	ConformanceTimeout  time.Duration
	HealthPeriod        time.Duration
	FailureThreshold    int
	StalenessGrace      time.Duration
	Lifecycle           memoryv1alpha1.LifecycleSpec
	// DoorbellURL is the operator's doorbell endpoint; the adapter rings it under its
	// namespace and name (EnvDoorbellURL) when its evidence changes. Empty: no doorbell.
	DoorbellURL string
}

// EffectiveSettings fills every omitted field; defaultImage is the manager's --adapter-image.
func EffectiveSettings(ma *memoryv1alpha1.MemoryAdapter, defaultImage string) Settings {
	s := Settings{
		Replicas:            ptr.Deref(ma.Spec.Replicas, 1),
		Image:               ptr.Deref(ma.Spec.Image, defaultImage),
		OperatorImage:       defaultImage,
		ConformanceInterval: defaultConformanceInterval,
		ConformanceTimeout:  defaultConformanceTimeout,
		HealthPeriod:        defaultHealthPeriod,
		FailureThreshold:    defaultFailureThreshold,
		Lifecycle:           effectiveLifecycle(ma.Spec.Backend.Type, ma.Spec.Lifecycle),
	}
	if c := ma.Spec.Conformance; c != nil {
		s.ConformanceInterval = c.Interval.Or(s.ConformanceInterval)
		s.ConformanceTimeout = c.Timeout.Or(s.ConformanceTimeout)
	}
	if h := ma.Spec.Health; h != nil {
		s.HealthPeriod = h.Period.Or(s.HealthPeriod)
		if h.FailureThreshold != nil {
			s.FailureThreshold = int(*h.FailureThreshold)
		}
	}
	s.StalenessGrace = 3 * s.HealthPeriod
	if h := ma.Spec.Health; h != nil {
		s.StalenessGrace = h.StalenessGrace.Or(s.StalenessGrace)
	}
	return s
}

// effectiveLifecycle overlays the user's fields on the backend's documented lifecycle, so
// status shows every value the adapter runs with.
func effectiveLifecycle(t memoryv1alpha1.BackendType, user *memoryv1alpha1.LifecycleSpec) memoryv1alpha1.LifecycleSpec {
	l := entry(t).DocumentedLifecycle()
	if user == nil {
		return l
	}
	if l.Retry == nil {
		l.Retry = &memoryv1alpha1.RetryPolicies{}
	}
	if user.RequestTimeout != nil {
		l.RequestTimeout = user.RequestTimeout
	}
	if user.ConnectTimeout != nil {
		l.ConnectTimeout = user.ConnectTimeout
	}
	if user.ConnectionCreation != "" {
		l.ConnectionCreation = user.ConnectionCreation
	}
	if user.ConcurrencySafe != nil {
		l.ConcurrencySafe = user.ConcurrencySafe
	}
	if user.DuplicateIDBehaviour != "" {
		l.DuplicateIDBehaviour = user.DuplicateIDBehaviour
	}
	if user.Failover != "" {
		l.Failover = user.Failover
	}
	if r := user.Retry; r != nil {
		if r.Store != nil {
			l.Retry.Store = r.Store
		}
		if r.Retrieve != nil {
			l.Retry.Retrieve = r.Retrieve
		}
		if r.Search != nil {
			l.Retry.Search = r.Search
		}
	}
	return *l.DeepCopy()
}

// describedField is a spec.lifecycle field that states what the adapter does rather than
// setting it, so a built-in backend's value may only be repeated. value is "" when the field
// is not stated, which no stated value prints as.
type describedField struct {
	name  string
	value func(*memoryv1alpha1.LifecycleSpec) string
}

// describedFields are checked in this order, so a spec with several false descriptions is
// always refused for the same one.
var describedFields = []describedField{
	{"connectionCreation", func(l *memoryv1alpha1.LifecycleSpec) string { return string(l.ConnectionCreation) }},
	{"concurrencySafe", func(l *memoryv1alpha1.LifecycleSpec) string {
		if l.ConcurrencySafe == nil {
			return ""
		}
		return fmt.Sprint(*l.ConcurrencySafe)
	}},
	{"duplicateIdBehaviour", func(l *memoryv1alpha1.LifecycleSpec) string { return string(l.DuplicateIDBehaviour) }},
	{"failover", func(l *memoryv1alpha1.LifecycleSpec) string { return l.Failover }},
}

// namedRetryPolicy is one call's retry policy with the name its flag and its field use.
type namedRetryPolicy struct {
	name string
	p    *memoryv1alpha1.RetryPolicy
}

// attempts is the policy's maxAttempts, 0 when not stated: an unstated count leaves the
// adapter's own, so only a stated one can ask for a repeat.
func (op namedRetryPolicy) attempts() int32 {
	if op.p == nil || op.p.MaxAttempts == nil {
		return 0
	}
	return *op.p.MaxAttempts
}

// retryPolicies lists the calls' policies in the order serve's flags and the errors name them.
func retryPolicies(r *memoryv1alpha1.RetryPolicies) []namedRetryPolicy {
	if r == nil {
		return nil
	}
	return []namedRetryPolicy{{"store", r.Store}, {"retrieve", r.Retrieve}, {"search", r.Search}}
}

// LifecycleErr refuses a spec.lifecycle that a built-in backend's adapter would not run as
// stated, so status.lifecycle never reports a behaviour the adapter does not have. The
// timeouts and, where the adapter retries at all, the retry policies configure it (they reach
// `serve`); connectionCreation, concurrencySafe and duplicateIdBehaviour describe it, so they
// may only repeat what it does. A server the user brings is the user's to describe.
func LifecycleErr(t memoryv1alpha1.BackendType, user *memoryv1alpha1.LifecycleSpec) error {
	b := entry(t)
	if user == nil || b.UserDescribed {
		return nil
	}
	doc := b.DocumentedLifecycle()
	name := b.Name
	for _, f := range describedFields {
		got, want := f.value(user), f.value(&doc)
		if got != "" && want == "" {
			return fmt.Errorf("spec.lifecycle.%s is %s, but the %s adapter states none: the field describes the adapter and cannot change it (docs/adapters/%s.md); remove it",
				f.name, got, name, name)
		}
		if got != "" && got != want {
			return fmt.Errorf("spec.lifecycle.%s is %s, but the %s adapter's is %s: the field describes the adapter and cannot change it (docs/adapters/%s.md); remove it or state %s",
				f.name, got, name, want, name, want)
		}
	}
	for _, op := range retryPolicies(user.Retry) {
		if n := op.attempts(); n > 1 && !b.Repeats(op.name) {
			return fmt.Errorf("spec.lifecycle.retry.%s.maxAttempts is %d, but the %s adapter never repeats a %s call (docs/adapters/%s.md); remove it or set 1",
				op.name, n, name, op.name, name)
		}
	}
	return nil
}

// retryArgs passes the effective retry policies to `serve` for the backends that retry, so
// that what status.lifecycle reports is what the adapter runs.
func retryArgs(t memoryv1alpha1.BackendType, l memoryv1alpha1.LifecycleSpec) []string {
	if len(entry(t).RepeatedCalls) == 0 {
		return nil
	}
	var args []string
	for _, op := range retryPolicies(l.Retry) {
		if op.p == nil || op.p.MaxAttempts == nil {
			continue
		}
		jitter := strings.ToLower(string(op.p.Jitter))
		if jitter == "" {
			jitter = "none"
		}
		args = append(args, fmt.Sprintf("--retry-%s=attempts=%d,backoff=%s,max-backoff=%s,jitter=%s",
			op.name, *op.p.MaxAttempts, op.p.Backoff.Or(0), op.p.MaxBackoff.Or(0), jitter))
	}
	return args
}
