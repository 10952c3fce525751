package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/google/uuid"
)

// QuotaLimits are one scope's quotas (issue 46, item 3); a zero field is no limit.
type QuotaLimits struct {
	// MaxItems bounds the scope's items.
	MaxItems int64
	// MaxBytes bounds the sum of the scope's memory.ItemSize.
	MaxBytes int64
	// WriteRate bounds stores per second, as a token bucket refilled at this rate.
	WriteRate float64
	// WriteBurst is the bucket's size: how many stores may come at once after a quiet
	// spell; zero means one second's worth of WriteRate (at least 1).
	WriteBurst int64
}

// UsageRecountEvery is how old the scope's count may get before a sweep recounts it from
// the backend, whatever the sweep period: a count reads the whole scope's index (about half
// a second of one core at a million SQLite items on a loaded machine), and a count that errs
// high only makes a refusal recount first.
const UsageRecountEvery = time.Minute

// recountEvery bounds how often a store refused for its items or bytes recounts the scope
// first: the count is exact after a recount, and a scope at its limit must not turn every
// refused write into a count of the scope.
const recountEvery = time.Second

// Governor enforces one scope's retention policy and quotas over one store: the sweep
// (Sweep) and the admission of each store (admit). A server has one per scope it serves;
// NewGovernor makes one for a store of another scope over the same metrics.
type Governor struct {
	scope   string
	store   memory.ExternalStore
	sweeper memory.Sweeper
	usage   memory.UsageReporter
	policy  memory.RetentionPolicy
	limits  QuotaLimits
	now     func() time.Time
	metrics *governorMetrics

	mu sync.Mutex
	// counted is the scope's usage: the backend's count at the last recount plus every
	// write acknowledged since (an overwrite counted as a new item until the next recount,
	// so the count errs high, never low); known is false before the first recount.
	counted    memory.Usage
	known      bool
	recountAt  time.Time
	countedAt  time.Time
	inFlight   memory.Usage
	tokens     float64
	tokensAt   time.Time
	recounting sync.Mutex
}

// NewGovernor returns the governor of scope over store, which must be a memory.Sweeper
// when policy is enabled and a memory.UsageReporter when limits bound items or bytes.
func (s *Server) NewGovernor(scope string, store memory.ExternalStore, policy memory.RetentionPolicy, limits QuotaLimits) (*Governor, error) {
	if err := storeError(store, policy, limits); err != nil {
		return nil, err
	}
	if policy.MaxAge < 0 || policy.MaxItems < 0 || limits.MaxItems < 0 || limits.MaxBytes < 0 ||
		limits.WriteRate < 0 || math.IsNaN(limits.WriteRate) || math.IsInf(limits.WriteRate, 0) || limits.WriteBurst < 0 {
		return nil, fmt.Errorf("server: retention and quota limits must not be negative: %+v %+v", policy, limits)
	}
	if limits.WriteRate > 0 && limits.WriteBurst == 0 {
		limits.WriteBurst = int64(max(1, math.Ceil(limits.WriteRate)))
	}
	g := &Governor{scope: scope, store: store, policy: policy, limits: limits, now: s.now, metrics: s.govMetrics,
		tokens: float64(limits.WriteBurst), tokensAt: s.now()}
	g.sweeper, _ = store.(memory.Sweeper)
	g.usage, _ = store.(memory.UsageReporter)
	if limits.MaxItems > 0 {
		g.metrics.limitItems.WithLabelValues(scope).Set(float64(limits.MaxItems))
	}
	if limits.MaxBytes > 0 {
		g.metrics.limitBytes.WithLabelValues(scope).Set(float64(limits.MaxBytes))
	}
	return g, nil
}

// active reports whether g has anything to sweep or count.
func (g *Governor) active() bool { return g.policy.Enabled() || g.usage != nil }

// bounded reports whether g limits items or bytes.
func (g *Governor) bounded() bool { return g.limits.MaxItems > 0 || g.limits.MaxBytes > 0 }

// recount reads the scope's usage from the backend and makes it the count.
func (g *Governor) recount(ctx context.Context) error {
	g.recounting.Lock()
	defer g.recounting.Unlock()
	u, err := g.usage.Usage(ctx)
	if err != nil {
		return fmt.Errorf("usage of scope %q: %w", g.scope, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.counted, g.known, g.countedAt = u, true, g.now()
	g.publish()
	return nil
}

// recountStale reports whether the count is missing or UsageRecountEvery old.
func (g *Governor) recountStale() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.known || g.now().Sub(g.countedAt) >= UsageRecountEvery
}

// forget takes u off the count (what a sweep removed), never below zero.
func (g *Governor) forget(u memory.Usage) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.counted.Items = max(0, g.counted.Items-u.Items)
	g.counted.Bytes = max(0, g.counted.Bytes-u.Bytes)
	g.publish()
}

// publish sets the usage gauges from the count; g.mu is held.
func (g *Governor) publish() {
	g.metrics.usageItems.WithLabelValues(g.scope).Set(float64(g.counted.Items))
	g.metrics.usageBytes.WithLabelValues(g.scope).Set(float64(g.counted.Bytes))
}

// QuotaError is why a governor did not admit a store: the problem type and status the
// server answers, and for a rate the whole seconds after which a retry may succeed.
type QuotaError struct {
	// Type is memory.ProblemRateLimited, memory.ProblemQuotaExceeded, or
	// memory.ProblemUnavailable when the scope's usage could not be counted.
	Type memory.ProblemType
	// Status is the HTTP status: 429, 507 or 503.
	Status int
	// Detail says which limit, for people.
	Detail string
	// RetryAfter is the Retry-After seconds of a rate refusal; zero otherwise.
	RetryAfter int64
}

// Error returns the detail.
func (e *QuotaError) Error() string { return e.Detail }

// admission is a store admitted by a governor; done must be called once with whether the
// backend acknowledged it.
type admission struct {
	g    *Governor
	cost memory.Usage
}

func (a admission) done(stored bool) {
	if a.g == nil {
		return
	}
	a.g.mu.Lock()
	defer a.g.mu.Unlock()
	a.g.inFlight.Items -= a.cost.Items
	a.g.inFlight.Bytes -= a.cost.Bytes
	if stored {
		a.g.counted.Items += a.cost.Items
		a.g.counted.Bytes += a.cost.Bytes
		a.g.publish()
	}
}

// admit decides whether item may be stored now: within the write rate (else 429
// rate_limited with the seconds until a token is due) and within the items and bytes
// quotas counting the stores in flight (else 507 quota_exceeded). A store over a quota by
// the count first recounts the scope (at most once per recountEvery: within it, the last
// recount stands), and one at the items limit is admitted when it overwrites an existing id
// (found by a Retrieve: that path runs only at the limit), which adds no item. A refused store takes no token and stores
// nothing; nothing already stored is ever removed to make room.
func (g *Governor) admit(ctx context.Context, item memory.Item) (admission, *QuotaError) {
	cost := memory.Usage{Items: 1, Bytes: memory.ItemSize(item)}
	if g.bounded() {
		if err := g.ensureCount(ctx); err != nil {
			return admission{}, &QuotaError{Type: memory.ProblemUnavailable, Status: 503, Detail: err.Error()}
		}
	}
	if r := g.reserve(cost); r == nil {
		return admission{g: g, cost: cost}, nil
	} else if r.Type == memory.ProblemRateLimited {
		return admission{}, r
	}
	// Over a quota by the count: recount if the count may be stale, and learn whether the
	// store overwrites an item, which the scope already holds.
	if g.recountDue() {
		if err := g.recount(ctx); err != nil {
			return admission{}, &QuotaError{Type: memory.ProblemUnavailable, Status: 503, Detail: err.Error()}
		}
	}
	if old, err := g.store.Retrieve(ctx, item.ID); err == nil && old != nil {
		cost = memory.Usage{Bytes: max(0, cost.Bytes-memory.ItemSize(*old))}
	}
	r := g.reserve(cost)
	if r != nil {
		return admission{}, r
	}
	return admission{g: g, cost: cost}, nil
}

// ensureCount recounts the scope when it has never been counted (the first sweep has not
// run yet).
func (g *Governor) ensureCount(ctx context.Context) error {
	g.mu.Lock()
	known := g.known
	g.mu.Unlock()
	if known {
		return nil
	}
	return g.recount(ctx)
}

// recountDue reports whether a refusal may recount now, and if so marks it done.
func (g *Governor) recountDue() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if now.Sub(g.recountAt) < recountEvery {
		return false
	}
	g.recountAt = now
	return true
}

// reserve takes a rate token and counts cost in flight, or returns the refusal: the rate
// first, then the quotas.
func (g *Governor) reserve(cost memory.Usage) *QuotaError {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if g.limits.WriteRate > 0 {
		g.tokens = min(float64(g.limits.WriteBurst), g.tokens+now.Sub(g.tokensAt).Seconds()*g.limits.WriteRate)
		g.tokensAt = now
		if g.tokens < 1 {
			wait := int64(math.Ceil((1 - g.tokens) / g.limits.WriteRate))
			return &QuotaError{Type: memory.ProblemRateLimited, Status: 429, RetryAfter: max(1, wait),
				Detail: fmt.Sprintf("scope %q is over its write rate of %g stores per second (burst %d)", g.scope, g.limits.WriteRate, g.limits.WriteBurst)}
		}
	}
	used := memory.Usage{Items: g.counted.Items + g.inFlight.Items + cost.Items, Bytes: g.counted.Bytes + g.inFlight.Bytes + cost.Bytes}
	switch {
	case g.limits.MaxItems > 0 && cost.Items > 0 && used.Items > g.limits.MaxItems:
		return &QuotaError{Type: memory.ProblemQuotaExceeded, Status: 507,
			Detail: fmt.Sprintf("scope %q holds its quota of %d items; nothing was stored", g.scope, g.limits.MaxItems)}
	case g.limits.MaxBytes > 0 && cost.Bytes > 0 && used.Bytes > g.limits.MaxBytes:
		return &QuotaError{Type: memory.ProblemQuotaExceeded, Status: 507,
			Detail: fmt.Sprintf("the item's %d bytes would take scope %q over its quota of %d bytes; nothing was stored", cost.Bytes, g.scope, g.limits.MaxBytes)}
	}
	if g.limits.WriteRate > 0 {
		g.tokens--
	}
	g.inFlight.Items += cost.Items
	g.inFlight.Bytes += cost.Bytes
	return nil
}

// Store stores item in g's store when g admits it, as the server's store route does; a
// refusal is a *QuotaError and reaches no backend.
func (g *Governor) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	adm, r := g.admit(ctx, item)
	if r != nil {
		return uuid.Nil, r
	}
	id, err := g.store.Store(ctx, item)
	adm.done(err == nil)
	return id, err
}

// Usage returns the scope's usage as the quota counts it, its limits and when the backend
// last counted it, for the evidence.
func (g *Governor) Usage() memory.ScopeUsage {
	g.mu.Lock()
	defer g.mu.Unlock()
	u := memory.ScopeUsage{Scope: g.scope, Items: g.counted.Items, Bytes: g.counted.Bytes,
		MaxItems: g.limits.MaxItems, MaxBytes: g.limits.MaxBytes}
	if g.known {
		t := g.countedAt.UTC()
		u.CountedAt = &t
	}
	return u
}

// governStore makes Store's governor from the Config, when it has a policy, a quota or a
// store that counts its usage.
func (s *Server) governStore() error {
	s.govMetrics = newGovernorMetrics(s.registry)
	if s.cfg.SweepPeriod <= 0 {
		s.cfg.SweepPeriod = DefaultSweepPeriod
	}
	if s.cfg.Scope == "" {
		s.cfg.Scope = DefaultScope
	}
	policy, limits := s.cfg.Retention, s.cfg.Quota
	if s.cfg.GovernSubScopesOnly {
		policy, limits = memory.RetentionPolicy{}, QuotaLimits{}
	}
	g, err := s.NewGovernor(s.cfg.Scope, s.cfg.Store, policy, limits)
	if err != nil {
		return err
	}
	if g.active() || g.limits != (QuotaLimits{}) {
		s.governor = g
		s.governors = append(s.governors, g)
	}
	return nil
}

// admit asks g (nil: no governor) to admit item and answers the refusal: 429 with
// Retry-After, 507, or 503 when the usage could not be counted.
func (s *Server) admit(ctx context.Context, w http.ResponseWriter, g *Governor, item memory.Item) (admission, bool) {
	if g == nil {
		return admission{}, true
	}
	adm, r := g.admit(ctx, item)
	if r == nil {
		return adm, true
	}
	if r.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(r.RetryAfter, 10))
	}
	if r.Type == memory.ProblemUnavailable {
		s.kickRefresh()
	}
	s.problem(w, r.Status, r.Type, r.Detail, nil)
	return admission{}, false
}

// usage lists every governed scope's usage for the evidence; nil when none is counted.
func (s *Server) usage() []memory.ScopeUsage {
	var out []memory.ScopeUsage
	for _, g := range s.governorList() {
		if g.usage != nil {
			out = append(out, g.Usage())
		}
	}
	return out
}
