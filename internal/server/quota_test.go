package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/sqlite"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
	"github.com/agentmem/memory-adapter-operator/internal/server/openapitest"
)

// governedStore is countingStore with the reference store's retention and usage, which
// the governor needs (countingStore's embedding hides them).
type governedStore struct {
	*countingStore
	ref sweepCounter
}

// sweepCounter is a store's retention and usage.
type sweepCounter interface {
	memory.Sweeper
	memory.UsageReporter
}

func (g governedStore) Sweep(ctx context.Context, p memory.RetentionPolicy, now time.Time) (int64, error) {
	return g.ref.Sweep(ctx, p, now)
}

func (g governedStore) Usage(ctx context.Context) (memory.Usage, error) { return g.ref.Usage(ctx) }

// newGovernedFixture is a fixture whose server enforces policy and limits over the
// reference store, every clock (the server's and the store's) being clock.
func newGovernedFixture(t *testing.T, clock *storetest.Clock, policy memory.RetentionPolicy, limits server.QuotaLimits) *fixture {
	t.Helper()
	return newGovernedFixtureOver(t, inmemory.New(inmemory.Options{SupportedFilters: []string{"branch_id", "source"}, Now: clock.Now}), clock, policy, limits)
}

// newGovernedFixtureOver is newGovernedFixture over ref, whose clock must be clock.
func newGovernedFixtureOver(t *testing.T, ref interface {
	memory.ExternalStore
	sweepCounter
}, clock *storetest.Clock, policy memory.RetentionPolicy, limits server.QuotaLimits) *fixture {
	t.Helper()
	cs := &countingStore{ExternalStore: ref}
	s, err := server.New(server.Config{Store: governedStore{cs, ref}, AdapterVersion: "test-1", Now: clock.Now,
		Scope: "team-a", Retention: policy, Quota: limits})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	s.Refresh(context.Background(), true)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &fixture{t: t, srv: s, http: hs, client: openapitest.NewTransport(t, nil).Client(), store: cs}
}

func quotaItem(n int, content string) memory.Item {
	return memory.Item{ID: uuid.New(), CreatedAt: float64(n), Content: json.RawMessage(fmt.Sprintf(`{"text":%q}`, content)),
		Metadata: map[string]json.RawMessage{}, Tags: []string{}}
}

// store posts it and fails unless the answer has status want.
func (f *fixture) storeWant(it memory.Item, want int) response {
	f.t.Helper()
	r := f.do(http.MethodPost, "/v1/items", itemJSON(f.t, it), false, nil)
	if r.status != want {
		f.t.Fatalf("store %v: status %d (%s), want %d", it.ID, r.status, r.body, want)
	}
	return r
}

// retrievable fails unless each id reads back (want) or reads 404 (!want).
func (f *fixture) retrievable(want bool, ids ...uuid.UUID) {
	f.t.Helper()
	for _, id := range ids {
		r := f.do(http.MethodGet, "/v1/items/"+id.String(), "", false, nil)
		if got := r.status == http.StatusOK; got != want {
			f.t.Errorf("retrieve %v: status %d, want found=%v", id, r.status, want)
		}
	}
}

// gauge is the value of the first series of the gauge or counter name whose labels
// include labels (name=value pairs), failing the test when there is none.
func (f *fixture) gauge(name string, labels ...string) float64 {
	f.t.Helper()
	v, ok := metricValue(f.t, f.srv, name, labels...)
	if !ok {
		f.t.Fatalf("no series %s%v", name, labels)
	}
	return v
}

// metricValue is gauge's value, and false when srv has no such series.
func metricValue(t *testing.T, srv *server.Server, name string, labels ...string) (float64, bool) {
	t.Helper()
	mfs, err := srv.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// TestQuotaItemsAnswers507AndLosesNothing: a store beyond the items quota is 507
// quota_exceeded and stores nothing, every acknowledged item stays, an overwrite at the
// limit is admitted (it adds no item), and usage is in the metrics and the evidence; over
// the reference store and over a real SQLite file.
func TestQuotaItemsAnswers507AndLosesNothing(t *testing.T) {
	t.Run("inmemory", func(t *testing.T) {
		var clock storetest.Clock
		clock.Set(time.Unix(1_800_000_000, 0))
		quotaItems(t, &clock, newGovernedFixture(t, &clock, memory.RetentionPolicy{}, server.QuotaLimits{MaxItems: 2}))
	})
	t.Run("sqlite", func(t *testing.T) {
		var clock storetest.Clock
		clock.Set(time.Unix(1_800_000_000, 0))
		s, err := sqlite.Open(t.Context(), sqlite.Options{Path: filepath.Join(t.TempDir(), "quota.db"), Scope: "team-a", Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		quotaItems(t, &clock, newGovernedFixtureOver(t, s, &clock, memory.RetentionPolicy{}, server.QuotaLimits{MaxItems: 2}))
	})
}

func quotaItems(t *testing.T, clock *storetest.Clock, f *fixture) {
	a, b, c := quotaItem(1, "a"), quotaItem(2, "b"), quotaItem(3, "c")
	f.storeWant(a, http.StatusCreated)
	f.storeWant(b, http.StatusCreated)
	stores := f.store.stores.Load()
	r := f.storeWant(c, http.StatusInsufficientStorage)
	if r.problem.Type != memory.ProblemQuotaExceeded || r.problem.Status != 507 {
		t.Fatalf("problem %+v, want quota_exceeded 507", r.problem)
	}
	if got := f.store.stores.Load(); got != stores {
		t.Fatalf("the refused store reached the backend (%d stores, want %d)", got, stores)
	}
	f.retrievable(true, a.ID, b.ID)
	f.retrievable(false, c.ID)
	// Stored again at the limit: an overwrite, admitted.
	a.Content = json.RawMessage(`{"text":"a, rewritten"}`)
	f.storeWant(a, http.StatusCreated)
	if got := f.gauge("memory_adapter_quota_usage_items"); got > 3 {
		t.Fatalf("usage items %v after an overwrite at the limit", got)
	}
	// The next sweep a recount period later counts the overwrite once.
	clock.Set(clock.Now().Add(server.UsageRecountEvery))
	if _, err := f.srv.SweepNow(context.Background()); err != nil {
		t.Fatalf("SweepNow: %v", err)
	}
	if got := f.gauge("memory_adapter_quota_usage_items"); got != 2 {
		t.Fatalf("memory_adapter_quota_usage_items = %v after a recount, want 2", got)
	}
	if got, want := f.gauge("memory_adapter_quota_usage_bytes"), float64(memory.ItemSize(a)+memory.ItemSize(b)); got != want {
		t.Fatalf("memory_adapter_quota_usage_bytes = %v, want %v", got, want)
	}
	if got := f.gauge("memory_adapter_quota_limit_items"); got != 2 {
		t.Fatalf("memory_adapter_quota_limit_items = %v, want 2", got)
	}
	if got := f.gauge("memory_adapter_errors_total", "route", "storeItem", "type", string(memory.ProblemQuotaExceeded)); got != 1 {
		t.Fatalf("errors_total{storeItem, quota_exceeded} = %v, want 1", got)
	}
	ev := f.do(http.MethodGet, "/v1/evidence", "", false, nil)
	var report memory.EvidenceReport
	if err := json.Unmarshal(ev.body, &report); err != nil {
		t.Fatalf("evidence: %v", err)
	}
	if len(report.Usage) != 1 || report.Usage[0].Scope != "team-a" || report.Usage[0].Items != 2 || report.Usage[0].MaxItems != 2 || report.Usage[0].CountedAt == nil {
		t.Fatalf("evidence usage = %+v, want team-a's 2 of 2 items, counted", report.Usage)
	}
}

// TestQuotaBytesAnswers507: a store that would take the scope over its bytes is refused,
// and a smaller one that fits is then admitted.
func TestQuotaBytesAnswers507(t *testing.T) {
	var clock storetest.Clock
	a, big, small := quotaItem(1, "aaaa"), quotaItem(2, "bbbbbbbbbbbbbbbb"), quotaItem(3, "c")
	limit := memory.ItemSize(a) + memory.ItemSize(small)
	f := newGovernedFixture(t, &clock, memory.RetentionPolicy{}, server.QuotaLimits{MaxBytes: limit})
	f.storeWant(a, http.StatusCreated)
	if r := f.storeWant(big, http.StatusInsufficientStorage); r.problem.Type != memory.ProblemQuotaExceeded {
		t.Fatalf("problem %+v, want quota_exceeded", r.problem)
	}
	f.storeWant(small, http.StatusCreated)
	f.retrievable(true, a.ID, small.ID)
	f.retrievable(false, big.ID)
}

// TestQuotaConcurrentStoresNeverOvershoot: of many concurrent stores against an items
// quota, exactly the quota's worth are acknowledged, every one of them is retrievable, and
// the others are 507 with nothing stored.
func TestQuotaConcurrentStoresNeverOvershoot(t *testing.T) {
	var clock storetest.Clock
	const limit, writers = 10, 40
	f := newGovernedFixture(t, &clock, memory.RetentionPolicy{}, server.QuotaLimits{MaxItems: limit})
	items := make([]memory.Item, writers)
	status := make([]int, writers)
	var wg sync.WaitGroup
	for i := range items {
		items[i] = quotaItem(i, fmt.Sprint("item ", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			status[i] = f.do(http.MethodPost, "/v1/items", itemJSON(t, items[i]), false, nil).status
		}()
	}
	wg.Wait()
	created := 0
	for i, st := range status {
		switch st {
		case http.StatusCreated:
			created++
			f.retrievable(true, items[i].ID)
		case http.StatusInsufficientStorage:
			f.retrievable(false, items[i].ID)
		default:
			t.Fatalf("store %d: status %d", i, st)
		}
	}
	if created != limit {
		t.Fatalf("%d stores acknowledged, want exactly the quota's %d", created, limit)
	}
}

// TestRateLimitAnswers429WithRetryAfter: stores beyond the bucket are 429 rate_limited
// with an integer Retry-After and store nothing; once the clock has refilled a token a
// store is admitted again.
func TestRateLimitAnswers429WithRetryAfter(t *testing.T) {
	var clock storetest.Clock
	clock.Set(time.Unix(1_800_000_000, 0))
	f := newGovernedFixture(t, &clock, memory.RetentionPolicy{}, server.QuotaLimits{WriteRate: 0.5, WriteBurst: 2})
	a, b, c := quotaItem(1, "a"), quotaItem(2, "b"), quotaItem(3, "c")
	f.storeWant(a, http.StatusCreated)
	f.storeWant(b, http.StatusCreated)
	r := f.storeWant(c, http.StatusTooManyRequests)
	if r.problem.Type != memory.ProblemRateLimited || r.header.Get("Retry-After") != "2" {
		t.Fatalf("problem %+v Retry-After %q, want rate_limited and 2 (one token at 0.5/s)", r.problem, r.header.Get("Retry-After"))
	}
	f.retrievable(false, c.ID)
	clock.Set(clock.Now().Add(1500 * time.Millisecond))
	if r := f.storeWant(c, http.StatusTooManyRequests); r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q after 1.5 s, want 1", r.header.Get("Retry-After"))
	}
	clock.Set(clock.Now().Add(500 * time.Millisecond))
	f.storeWant(c, http.StatusCreated)
	f.retrievable(true, a.ID, b.ID, c.ID)
	// Reads are never limited.
	for range 5 {
		if r := f.do(http.MethodGet, "/v1/items/"+a.ID.String(), "", false, nil); r.status != http.StatusOK {
			t.Fatalf("retrieve under the rate limit: %d", r.status)
		}
	}
}

// TestRetentionSweepRemovesExpiredAndCounts: the server's sweep removes an item once its
// max age has passed since it was stored and not a moment before, counts the removal, and
// the quota's usage follows.
func TestRetentionSweepRemovesExpiredAndCounts(t *testing.T) {
	var clock storetest.Clock
	start := time.Unix(1_800_000_000, 0)
	clock.Set(start)
	f := newGovernedFixture(t, &clock, memory.RetentionPolicy{MaxAge: time.Hour}, server.QuotaLimits{})
	old := quotaItem(1, "old")
	f.storeWant(old, http.StatusCreated)
	clock.Set(start.Add(10 * time.Minute))
	fresh := quotaItem(2, "fresh")
	f.storeWant(fresh, http.StatusCreated)
	clock.Set(start.Add(time.Hour - time.Nanosecond))
	if n, err := f.srv.SweepNow(context.Background()); err != nil || n != 0 {
		t.Fatalf("sweep before the hour: %d, %v; want 0 removed", n, err)
	}
	clock.Set(start.Add(time.Hour))
	if n, err := f.srv.SweepNow(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep at the hour: %d, %v; want 1 removed", n, err)
	}
	f.retrievable(false, old.ID)
	f.retrievable(true, fresh.ID)
	if got := f.gauge("memory_adapter_retention_deleted_total"); got != 1 {
		t.Fatalf("memory_adapter_retention_deleted_total = %v, want 1", got)
	}
	if got := f.gauge("memory_adapter_quota_usage_items"); got != 1 {
		t.Fatalf("memory_adapter_quota_usage_items = %v, want 1", got)
	}
}

// TestGovernorNeedsCapableStore: retention or an items quota over a store that cannot
// sweep or count is refused at New, not ignored.
func TestGovernorNeedsCapableStore(t *testing.T) {
	plain := &countingStore{ExternalStore: inmemory.New(inmemory.Options{})}
	if _, err := server.New(server.Config{Store: plain, Retention: memory.RetentionPolicy{MaxAge: time.Hour}}); err == nil {
		t.Fatal("New accepted retention over a store that cannot sweep")
	}
	if _, err := server.New(server.Config{Store: plain, Quota: server.QuotaLimits{MaxItems: 1}}); err == nil {
		t.Fatal("New accepted an items quota over a store that cannot count")
	}
	if _, err := server.New(server.Config{Store: plain, Quota: server.QuotaLimits{WriteRate: 1}}); err != nil {
		t.Fatalf("New refused a write rate, which needs no count: %v", err)
	}
}

// TestServeSweepsEachPeriod: Serve runs the sweep every SweepPeriod. The item survives
// sweeps until its max age has passed by the store's clock, and is gone within one period
// after.
func TestServeSweepsEachPeriod(t *testing.T) {
	var clock storetest.Clock
	start := time.Unix(1_800_000_000, 0)
	clock.Set(start)
	ref := inmemory.New(inmemory.Options{Now: clock.Now})
	srv, err := server.New(server.Config{Store: ref, Now: clock.Now, Retention: memory.RetentionPolicy{MaxAge: time.Hour},
		SweepPeriod: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	it := quotaItem(1, "expires")
	if _, err := ref.Store(t.Context(), it); err != nil {
		t.Fatal(err)
	}
	serveInBackground(t, srv)
	f := &fixture{t: t, srv: srv}
	clock.Set(start.Add(time.Hour - time.Millisecond))
	before, _ := metricValue(t, srv, "memory_adapter_retention_sweeps_total", "result", "ok")
	waitFor(t, "three sweeps a millisecond before the hour", 5*time.Second, func() bool {
		n, _ := metricValue(t, srv, "memory_adapter_retention_sweeps_total", "result", "ok")
		return n >= before+3
	})
	if got, _ := ref.Retrieve(t.Context(), it.ID); got == nil {
		t.Fatal("a sweep removed the item before its max age")
	}
	clock.Set(start.Add(time.Hour))
	waitFor(t, "the item removed within a period of its max age", 5*time.Second, func() bool {
		got, _ := ref.Retrieve(t.Context(), it.ID)
		return got == nil
	})
	if got := f.gauge("memory_adapter_retention_deleted_total"); got != 1 {
		t.Fatalf("memory_adapter_retention_deleted_total = %v, want 1", got)
	}
}
