package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// DefaultSweepPeriod is how often the retention sweep runs when Config.SweepPeriod is zero.
// An item expired by MaxAge is removed within MaxAge plus one period of its store time (the
// stated window, docs/server.md), plus the sweep's own duration.
const DefaultSweepPeriod = time.Minute

// DefaultScope labels the metrics of a server whose Config.Scope is empty, as the backends
// name the scope they default to.
const DefaultScope = "default"

// governorMetrics are the retention and quota series, one label set per scope.
type governorMetrics struct {
	deleted    *prometheus.CounterVec
	sweeps     *prometheus.CounterVec
	lastSweep  *prometheus.GaugeVec
	usageItems *prometheus.GaugeVec
	usageBytes *prometheus.GaugeVec
	limitItems *prometheus.GaugeVec
	limitBytes *prometheus.GaugeVec
}

func newGovernorMetrics(reg prometheus.Registerer) *governorMetrics {
	m := &governorMetrics{
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memory_adapter_retention_deleted_total",
			Help: "Items the retention sweep removed (expired by max age or beyond max items), by scope.",
		}, []string{"scope"}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memory_adapter_retention_sweeps_total",
			Help: "Retention sweeps by scope and result (ok, error); an error leaves the expired items to the next sweep.",
		}, []string{"scope", "result"}),
		lastSweep: scopeGauge("memory_adapter_retention_last_sweep_timestamp_seconds",
			"Unix time of the scope's last successful retention sweep; 0 before the first."),
		usageItems: scopeGauge("memory_adapter_quota_usage_items",
			"Items the scope holds, as the quota counts them (the backend's count at the last sweep plus the writes admitted since)."),
		usageBytes: scopeGauge("memory_adapter_quota_usage_bytes", "Bytes (memory.ItemSize) the scope holds, as the quota counts them."),
		limitItems: scopeGauge("memory_adapter_quota_limit_items", "The scope's items quota; absent when it has none."),
		limitBytes: scopeGauge("memory_adapter_quota_limit_bytes", "The scope's bytes quota; absent when it has none."),
	}
	reg.MustRegister(m.deleted, m.sweeps, m.lastSweep, m.usageItems, m.usageBytes, m.limitItems, m.limitBytes)
	return m
}

// scopeGauge is a gauge with one series per scope.
func scopeGauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"scope"})
}

// Sweep runs g's retention policy once (when it has one) and recounts the scope's usage
// (when the store reports it) if the last count is UsageRecountEvery old, so that the
// quota's counts, which err high between counts, meet the backend's again; a sweep between
// recounts takes the items it removed off the count (their bytes stay counted until the
// next recount). MaxAge goes first; MaxItems only when the count is over it. It returns
// how many items it removed.
func (g *Governor) Sweep(ctx context.Context) (int64, error) { return g.sweepAt(ctx, g.now()) }

// sweepAt is Sweep with the retention clock at now.
func (g *Governor) sweepAt(ctx context.Context, now time.Time) (int64, error) {
	var deleted int64
	var errs []error
	sweep := func(p memory.RetentionPolicy) {
		n, err := g.sweeper.Sweep(ctx, p, now)
		deleted += n
		g.metrics.deleted.WithLabelValues(g.scope).Add(float64(n))
		if err != nil {
			errs = append(errs, fmt.Errorf("retention sweep of scope %q: %w", g.scope, err))
		}
	}
	if g.policy.MaxAge > 0 {
		sweep(memory.RetentionPolicy{MaxAge: g.policy.MaxAge})
	}
	if g.usage != nil {
		if g.recountStale() {
			if err := g.recount(ctx); err != nil {
				errs = append(errs, err)
			}
		} else {
			g.forget(memory.Usage{Items: deleted})
		}
	}
	if g.policy.MaxItems > 0 && (g.usage == nil || g.Usage().Items > g.policy.MaxItems) {
		before := deleted
		sweep(memory.RetentionPolicy{MaxItems: g.policy.MaxItems})
		if g.usage != nil && deleted > before {
			if err := g.recount(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if g.policy.Enabled() {
		result := "ok"
		if len(errs) > 0 {
			result = "error"
		} else {
			g.metrics.lastSweep.WithLabelValues(g.scope).Set(float64(g.now().UnixNano()) / 1e9)
		}
		g.metrics.sweeps.WithLabelValues(g.scope, result).Inc()
	}
	return deleted, errors.Join(errs...)
}

// runGovernors sweeps every governor now and then every period until ctx ends, logging
// failures: a failed sweep leaves its items to the next one and never stops the server.
func (s *Server) runGovernors(ctx context.Context, period time.Duration) {
	if len(s.governorList()) == 0 {
		return
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if _, err := s.SweepNow(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("Retention sweep or usage recount failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// storeError is why a governor cannot enforce policy over store, or nil.
func storeError(store memory.ExternalStore, policy memory.RetentionPolicy, limits QuotaLimits) error {
	if _, ok := store.(memory.Sweeper); policy.Enabled() && !ok {
		return fmt.Errorf("server: retention needs a store that sweeps (memory.Sweeper); %T does not", store)
	}
	if _, ok := store.(memory.UsageReporter); (limits.MaxItems > 0 || limits.MaxBytes > 0) && !ok {
		return fmt.Errorf("server: an items or bytes quota needs a store that counts its usage (memory.UsageReporter); %T does not", store)
	}
	return nil
}

// SweepNow runs every governor's sweep and usage recount once, as Serve does each sweep
// period, and returns the items removed and the failures joined.
func (s *Server) SweepNow(ctx context.Context) (int64, error) {
	var deleted int64
	var errs []error
	for _, g := range s.governorList() {
		n, err := g.Sweep(ctx)
		deleted += n
		errs = append(errs, err)
	}
	return deleted, errors.Join(errs...)
}
