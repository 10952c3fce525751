package conformance

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance/fake"
)

// govFake is the deterministic governed target of the profiles' accuracy table: the
// conformance fake for the matrix, and beside it governed scopes kept in memory that
// enforce the claim as an adapter server does (read-only tokens, sub-scopes, retention by
// store time, item, byte and rate quotas), each with a planted lie to switch on.
type govFake struct {
	*fake.Harness
	claim *memory.GovernanceV1
	lie   string

	mu     sync.Mutex
	start  time.Time
	tick   time.Duration
	scopes []*govScope
}

// clock is the fake's time: real time since it started (a 429's Retry-After really refills
// the bucket) plus a millisecond per store, so store times are strictly ordered. Callers
// hold mu.
func (g *govFake) clock() time.Time { return g.start.Add(time.Since(g.start) + g.tick) }

type govScope struct {
	items  map[uuid.UUID]memory.Item
	stored map[uuid.UUID]time.Time
	bytes  int64
	tokens float64
	refill time.Time
}

func newGovFake(claim *memory.GovernanceV1, lie string) *govFake {
	return &govFake{Harness: fake.New(fake.Config{}), claim: claim, lie: lie, start: time.Now()}
}

// burstOf is the bucket's size a quota claims: write_burst, or a second's worth of the rate.
func burstOf(q *memory.GovernanceQuota) int64 {
	if q.WriteBurst > 0 {
		return q.WriteBurst
	}
	return q.WritesPerSecond
}

func (g *govFake) manifest() memory.Manifest { return g.Manifest().WithGovernance(g.claim) }

// MakeStore serves the matrix from the fake, publishing the claim with its manifest.
func (g *govFake) MakeStore(ctx context.Context) (memory.ExternalStore, error) {
	s, err := g.Harness.MakeStore(ctx)
	if err != nil {
		return nil, err
	}
	return claimingStore{ExternalStore: s, m: g.manifest()}, nil
}

type claimingStore struct {
	memory.ExternalStore
	m memory.Manifest
}

func (c claimingStore) Manifest() memory.Manifest { return c.m }

func (g *govFake) newScope() *govScope {
	s := &govScope{items: map[uuid.UUID]memory.Item{}, stored: map[uuid.UUID]time.Time{}}
	if q := g.claim.Quota; q != nil {
		s.tokens = float64(burstOf(q))
	}
	s.refill = g.clock()
	g.scopes = append(g.scopes, s)
	return s
}

func (g *govFake) MakeGovernedStores(context.Context) (rw, ro, a, b memory.ExternalStore, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	sg, sa := g.newScope(), g.newScope()
	sb := sa
	if g.lie != "sub-scope-leak" {
		sb = g.newScope()
	}
	m := g.manifest()
	return &govStore{g: g, s: sg, m: m, name: "G"}, &govStore{g: g, s: sg, m: m, readOnly: true, name: "G"},
		&govStore{g: g, s: sa, m: m, name: "A"}, &govStore{g: g, s: sb, m: m, name: "B"}, nil
}

func (g *govFake) SweepRetentionAfter(_ context.Context, after time.Duration) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lie == "retention-ignored" {
		return nil
	}
	r := g.claim.Retention
	now := g.clock().Add(after)
	if g.lie == "retention-early" {
		now = now.Add(2 * time.Minute)
	}
	for _, s := range g.scopes {
		var order []uuid.UUID
		for id, at := range s.stored {
			if r.MaxAgeSeconds > 0 && !at.After(now.Add(-time.Duration(r.MaxAgeSeconds)*time.Second)) {
				s.remove(id)
				continue
			}
			order = append(order, id)
		}
		if r.MaxItems > 0 && int64(len(order)) > r.MaxItems {
			sort.Slice(order, func(i, j int) bool { return s.stored[order[i]].Before(s.stored[order[j]]) })
			for _, id := range order[:int64(len(order))-r.MaxItems] {
				s.remove(id)
			}
		}
	}
	return nil
}

func (s *govScope) remove(id uuid.UUID) {
	s.bytes -= memory.ItemSize(s.items[id])
	delete(s.items, id)
	delete(s.stored, id)
}

// govProblem is the typed refusal's cause, as a wire client chains it.
type govProblem struct {
	p  memory.Problem
	ra time.Duration
}

func (e *govProblem) Error() string                                  { return string(e.p.Type) }
func (e *govProblem) ServerProblem() (memory.Problem, time.Duration) { return e.p, e.ra }

func refused(status int, typ memory.ProblemType, ra time.Duration) error {
	return memory.NewAdapterError("refused", &govProblem{p: memory.Problem{Type: typ, Status: status}, ra: ra})
}

type govStore struct {
	g        *govFake
	s        *govScope
	name     string
	m        memory.Manifest
	readOnly bool
}

func (st *govStore) Manifest() memory.Manifest { return st.m }

func (st *govStore) Store(_ context.Context, it memory.Item) (uuid.UUID, error) {
	g := st.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tick += time.Millisecond
	now := g.clock()
	switch {
	case st.readOnly && g.lie == "read-only-stores-and-refuses":
		st.s.items[it.ID], st.s.stored[it.ID] = it, now
		return uuid.Nil, refused(http.StatusForbidden, memory.ProblemForbidden, 0)
	case st.readOnly && g.lie == "read-only-wrong-status":
		return uuid.Nil, refused(http.StatusBadRequest, memory.ProblemInvalidRequest, 0)
	case st.readOnly && g.lie != "read-only-writes":
		return uuid.Nil, refused(http.StatusForbidden, memory.ProblemForbidden, 0)
	}
	if q := g.claim.Quota; q != nil && g.lie != "quota-ignored" {
		_, replaces := st.s.items[it.ID]
		if q.MaxItems > 0 && !replaces && int64(len(st.s.items)) >= q.MaxItems ||
			q.MaxBytes > 0 && st.s.bytes+memory.ItemSize(it) > q.MaxBytes {
			if g.lie == "quota-drops" {
				for id := range st.s.items {
					st.s.remove(id)
					break
				}
			}
			return uuid.Nil, refused(http.StatusInsufficientStorage, memory.ProblemQuotaExceeded, 0)
		}
		if q.WritesPerSecond > 0 {
			burst := float64(burstOf(q))
			st.s.tokens = min(burst, st.s.tokens+now.Sub(st.s.refill).Seconds()*float64(q.WritesPerSecond))
			st.s.refill = now
			if st.s.tokens < 1 {
				return uuid.Nil, refused(http.StatusTooManyRequests, memory.ProblemRateLimited, time.Second)
			}
			st.s.tokens--
		}
	}
	if old, ok := st.s.items[it.ID]; ok {
		st.s.bytes -= memory.ItemSize(old)
	}
	st.s.items[it.ID] = it
	st.s.stored[it.ID] = now
	st.s.bytes += memory.ItemSize(it)
	return it.ID, nil
}

func (st *govStore) Retrieve(_ context.Context, id uuid.UUID) (*memory.Item, error) {
	st.g.mu.Lock()
	defer st.g.mu.Unlock()
	it, ok := st.s.items[id]
	if !ok || st.blind() {
		return nil, nil
	}
	return &it, nil
}

// blind is the guard lies' store that cannot read what it may: a read-only token, or sub-scope
// A's own items.
func (st *govStore) blind() bool {
	return st.readOnly && st.g.lie == "read-only-blind" || st.name == "A" && st.g.lie == "sub-scope-blind"
}

func (st *govStore) Search(_ context.Context, q memory.Query) ([]memory.Item, error) {
	st.g.mu.Lock()
	defer st.g.mu.Unlock()
	var out []memory.Item
	if st.blind() {
		return []memory.Item{}, nil
	}
	for _, it := range st.s.items {
		if q.Text != nil && !strings.Contains(string(it.Content), *q.Text) {
			continue
		}
		out = append(out, it)
	}
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// fullClaim claims every profile with limits each profile exercises.
var fullClaim = &memory.GovernanceV1{
	ReadOnly: true, Isolation: true,
	Retention: &memory.GovernanceRetention{MaxAgeSeconds: 3600, MaxItems: 5, SweepPeriodSeconds: 60},
	Quota:     &memory.GovernanceQuota{MaxItems: 60, MaxBytes: 64 << 10, WritesPerSecond: 50, WriteBurst: 20},
}

// profileLies are the profiles' accuracy table: each planted lie and the profile that must
// catch it.
var profileLies = []struct {
	lie   string
	meant CaseID
}{
	{"read-only-writes", ProfileReadOnly},
	{"sub-scope-leak", ProfileIsolation},
	{"retention-early", ProfileRetention},
	{"retention-ignored", ProfileRetention},
	{"quota-ignored", ProfileQuota},
}

func runGov(t *testing.T, claim *memory.GovernanceV1, lie, disabled string) *Report {
	t.Helper()
	return Execute(t.Context(), newGovFake(claim, lie), nestedOptions(disabled))
}

// TestProfilesAccuracyTable: the truthful governed fake passes every profile, a fake
// claiming nothing has every profile NotApplicable, and each planted lie fails its profile.
func TestProfilesAccuracyTable(t *testing.T) {
	truthful := runGov(t, fullClaim, "", "")
	if truthful.Result != Passed || truthful.Claim != ClaimFull {
		t.Fatalf("the truthful governed fake: %s\n%s", truthful.Summary(), truthful.Table())
	}
	for _, id := range ProfileIDs() {
		if p, _ := truthful.Profile(id); p.Outcome != Passed {
			t.Errorf("profile %s of the truthful fake is %s: %s", id, p.Outcome, p.Message)
		} else if !strings.Contains(p.Message, profileProof[id]) {
			// A passed profile says what it proved, as the matrix's cases do.
			t.Errorf("profile %s passed saying %q, which does not say %q", id, p.Message, profileProof[id])
		}
	}
	none := runGov(t, nil, "", "")
	for _, id := range ProfileIDs() {
		if p, _ := none.Profile(id); p.Outcome != NotApplicable || p.Message == "" {
			t.Errorf("profile %s without a claim is %s (%q), want NotApplicable with a reason", id, p.Outcome, p.Message)
		}
	}
	if none.Result != Passed || none.Claim != ClaimFull {
		t.Errorf("a fake claiming no governance: %s", none.Summary())
	}
	for _, l := range profileLies {
		r := runGov(t, fullClaim, l.lie, "")
		p, _ := r.Profile(l.meant)
		if p.Outcome != Failed || r.Result != Failed {
			t.Errorf("lie %s: profile %s is %s and the run %s, want both Failed\n%s", l.lie, l.meant, p.Outcome, r.Result, r.Table())
			continue
		}
		t.Logf("lie %-18s caught by %s: %s", l.lie, l.meant, p.Message)
	}
}

// profileProof is a phrase of what each passed profile's message says it proved.
var profileProof = map[CaseID]string{
	ProfileReadOnly:  "refused 403 forbidden and stored nothing",
	ProfileIsolation: "invisible to sub-scope B",
	ProfileRetention: "was gone after one",
	ProfileQuota:     "refused 507 quota_exceeded",
}

// profileGuardLies break what a truthful target must keep doing (a read-only token reads, a
// sub-scope reads its own items, a refusal keeps what was acknowledged), each for the profile
// whose guard checks catch it, and the lies that only one check of a profile catches.
var profileGuardLies = []struct {
	lie   string
	meant CaseID
}{
	{"read-only-blind", ProfileReadOnly},
	{"read-only-stores-and-refuses", ProfileReadOnly},
	{"read-only-wrong-status", ProfileReadOnly},
	{"sub-scope-blind", ProfileIsolation},
	{"quota-drops", ProfileQuota},
}

// TestEveryProfileCheckIsNeeded: every profile check catches some lie of the table (no check
// is dead weight), and with a profile's checks removed every lie meant for it passes (the
// profile's verdict comes from its checks, not from set-up failing).
func TestEveryProfileCheckIsNeeded(t *testing.T) {
	caught := map[string]bool{}
	for _, l := range append(slices.Clone(profileLies), profileGuardLies...) {
		r := runGov(t, fullClaim, l.lie, "")
		p, _ := r.Profile(l.meant)
		if p.Outcome != Failed {
			t.Errorf("lie %s: profile %s is %s, want Failed\n%s", l.lie, l.meant, p.Outcome, r.Table())
			continue
		}
		for _, name := range p.failedChecks {
			caught[name] = true
		}
		off := runGov(t, fullClaim, l.lie, string(l.meant)+"/")
		if p, _ := off.Profile(l.meant); p.Outcome != Passed {
			t.Errorf("lie %s with profile %s's checks removed: %s (%s), want Passed", l.lie, l.meant, p.Outcome, p.Message)
		}
	}
	profileCheckRegistry.Lock()
	var names []string
	for n := range profileCheckRegistry.names {
		names = append(names, n)
	}
	profileCheckRegistry.Unlock()
	slices.Sort(names)
	if len(names) < 12 {
		t.Fatalf("only %d profile checks registered: %v", len(names), names)
	}
	for _, name := range names {
		if !caught[name] {
			t.Errorf("profile check %q catches no lie of the table", name)
		}
	}
}
