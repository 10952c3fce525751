package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// The conformance profiles of the governance/v1 manifest extension (issue 46): each checks
// one claim, runs after the matrix, and is NotApplicable unless the manifest makes the
// claim. They share the matrix's CaseID type and result shape.
const (
	ProfileReadOnly  CaseID = "read-only"
	ProfileIsolation CaseID = "isolation"
	ProfileRetention CaseID = "retention"
	ProfileQuota     CaseID = "quota"
)

// The harness capabilities of the profiles.
const (
	// CapGovernanceTokens makes a governed scope's stores (GovernanceHarness).
	CapGovernanceTokens Capability = "governance_tokens"
	// CapRetentionSweep sweeps retention as if time had passed (RetentionSweeper).
	CapRetentionSweep Capability = "retention_sweep"
)

// GovernedStores are the stores of one governed disposable scope G and two sub-scopes A and
// B, under the manifest's claimed retention and quotas (each scope on its own).
type GovernedStores struct {
	// ReadWrite reads and writes G.
	ReadWrite memory.ExternalStore
	// ReadOnly reads G; its stores must be refused with 403 forbidden.
	ReadOnly memory.ExternalStore
	// SubScopeA reads and writes sub-scope A.
	SubScopeA memory.ExternalStore
	// SubScopeB reads and writes sub-scope B.
	SubScopeB memory.ExternalStore
}

// GovernanceHarness is the Harness capability of the governance profiles: fresh stores of a
// governed scope, holding nothing, whose tokens carry the rights a profile needs (the
// GovernedStores in order). Over the wire it is POST /harness/v1/governance-tokens. Its
// results are plain stores so that conformance/wire implements it without importing this
// package.
type GovernanceHarness interface {
	// MakeGovernedStores returns the stores of fresh, empty governed scopes.
	MakeGovernedStores(ctx context.Context) (readWrite, readOnly, subScopeA, subScopeB memory.ExternalStore, err error)
}

// RetentionSweeper is the Harness capability of the retention profile: the target's
// retention sweep of the governed scopes, run now as if after had passed. Over the wire it is
// POST /harness/v1/retention-sweep.
type RetentionSweeper interface {
	// SweepRetentionAfter sweeps as if after had passed since now, and returns once done.
	SweepRetentionAfter(ctx context.Context, after time.Duration) error
}

// profile is one governance profile: its id, texts, what it needs claimed and its checks.
type profile struct {
	Case
	// claimed reports whether the claim makes the profile apply, and if not why.
	claimed func(*memory.GovernanceV1) (bool, string)
	runP    func(*caseRun, GovernedStores, *memory.GovernanceV1)
}

// profiles are the governance profiles in report order.
var profiles = []profile{profileReadOnly, profileIsolation, profileRetention, profileQuota}

// Profiles returns the governance profiles' descriptions in report order.
func Profiles() []Case {
	out := make([]Case, len(profiles))
	for i, p := range profiles {
		out[i] = p.Case
	}
	return out
}

// ProfileIDs returns the governance profiles' ids in report order.
func ProfileIDs() []CaseID {
	out := make([]CaseID, len(profiles))
	for i, p := range profiles {
		out[i] = p.ID
	}
	return out
}

// profileTimeout bounds one profile: a small claimed write rate makes its stores wait.
func profileTimeout(opts Options) time.Duration { return 2*opts.CaseTimeout + rateRetryBudget }

// rateRetryBudget is how long a profile retries stores refused 429 rate_limited in all: a
// claimed write rate slows a profile, it never fails it.
const rateRetryBudget = 30 * time.Second

// runProfile runs one profile against m's claim, like runCase runs a case.
func runProfile(parent context.Context, h Harness, p profile, m memory.Manifest, opts Options) CaseResult {
	start := time.Now()
	claim := m.Governance()
	if ok, why := p.claimed(claim); !ok {
		return CaseResult{ID: p.ID, Outcome: NotApplicable, Message: why}
	}
	ctx, cancel := context.WithTimeout(parent, profileTimeout(opts))
	defer cancel()
	ch := make(chan CaseResult, 1)
	go func() {
		cr := &caseRun{ctx: ctx, h: h, opts: opts, m: m, profile: true}
		var stores GovernedStores
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(abort); !ok {
					cr.problems = append(cr.problems, fmt.Sprintf("profile panicked: %v", r))
				}
			}
			for _, s := range []memory.ExternalStore{stores.ReadWrite, stores.ReadOnly, stores.SubScopeA, stores.SubScopeB} {
				if s != nil {
					closeStore(s)
				}
			}
			ch <- cr.result()
		}()
		cr.needCapability(CapGovernanceTokens, "the profiles need stores whose tokens carry rights and sub-scopes")
		if _, err := retryUnavailable(ctx, opts.setUpDelay, func() error { return h.Reset(ctx) }); err != nil {
			cr.harnessFailed("Reset", err)
		}
		var err error
		if _, err = retryUnavailable(ctx, opts.setUpDelay, func() (err error) {
			stores.ReadWrite, stores.ReadOnly, stores.SubScopeA, stores.SubScopeB, err = h.(GovernanceHarness).MakeGovernedStores(ctx)
			return err
		}); err != nil {
			cr.harnessFailed("MakeGovernedStores", err)
		}
		if stores.ReadWrite == nil || stores.ReadOnly == nil || stores.SubScopeA == nil || stores.SubScopeB == nil {
			cr.fatalf("harness MakeGovernedStores returned a nil store")
		}
		cr.store = stores.ReadWrite
		p.runP(cr, stores, claim)
		if cr.rateWaits > 0 {
			cr.notef("%d set-up store(s) refused 429 rate_limited under the claimed write rate were sent again after the wait", cr.rateWaits)
		}
	}()
	var res CaseResult
	select {
	case res = <-ch:
	case <-ctx.Done():
		res = CaseResult{Outcome: Failed, Message: fmt.Sprintf("profile timed out after %s", profileTimeout(opts))}
	}
	res.ID = p.ID
	res.Message = truncateString(res.Message, maxMessageBytes)
	if res.Outcome == Failed {
		res.Hint = p.Hint
	}
	res.DurationMillis = time.Since(start).Milliseconds()
	return res
}

// refusal is how the target refused a call: the server's problem type, the answer's status
// and its Retry-After, from the error's memory.ServerProblem or, for a raw wire store, its
// last answer.
func refusal(s memory.ExternalStore, err error) (memory.ProblemType, int, time.Duration) {
	if err == nil {
		return "", 0, 0
	}
	if p, ra, ok := memory.ProblemOf(err); ok {
		return p.Type, p.Status, ra
	}
	if obs, ok := s.(answerObserver); ok {
		status, typ := obs.LastAnswer()
		return typ, status, 0
	}
	return "", 0, 0
}

// governedStore stores through s, waiting out 429 rate_limited answers (up to
// rateRetryBudget in all, each wait one interval of the claimed rate, at most the
// Retry-After) so that a claimed write rate cannot fail a profile that is not about it;
// every other answer is returned as it is.
func (c *caseRun) governedStore(s memory.ExternalStore, it memory.Item) (uuid.UUID, error) {
	deadline := time.Now().Add(rateRetryBudget)
	for {
		id, err := s.Store(c.ctx, it)
		typ, _, ra := refusal(s, err)
		if typ != memory.ProblemRateLimited || time.Now().After(deadline) {
			return id, err
		}
		c.rateWaits++
		// The bucket has a token again after one interval of the claimed rate; waiting the
		// whole Retry-After (whole seconds) would make a profile crawl under a fast rate.
		wait := max(ra, time.Second)
		if g := c.m.Governance(); g != nil && g.Quota != nil && g.Quota.WritesPerSecond > 0 {
			wait = min(wait, max(time.Second/time.Duration(g.Quota.WritesPerSecond), 10*time.Millisecond))
		}
		select {
		case <-c.ctx.Done():
			return id, err
		case <-time.After(wait):
		}
	}
}

// mustGovernedStore stores it through s and ends the profile unless the store is
// acknowledged with its id.
func (c *caseRun) mustGovernedStore(s memory.ExternalStore, which string, it memory.Item) {
	id, err := c.governedStore(s, it)
	if err != nil {
		c.fatalf("setup: %s store failed: %v", which, err)
	}
	if id != it.ID {
		c.fatalf("setup: %s store acknowledged id %s, not the item's %s", which, id, it.ID)
	}
}

// governedItem is a small item of a profile; its text names the profile and n, and the id.
func governedItem(profile string, n int) memory.Item {
	id := uuid.New()
	return memory.Item{
		ID:        id,
		CreatedAt: float64(time.Now().UnixMicro()) / 1e6,
		Content:   json.RawMessage(fmt.Sprintf(`{"profile":%q,"n":%d,"text":"governance %s %d %s"}`, profile, n, profile, n, id)),
		Tags:      []string{"governance", profile},
		Metadata:  map[string]json.RawMessage{},
	}
}

// describe names what a retrieve answered, for a message.
func describe(it *memory.Item) string {
	if it == nil {
		return "nothing"
	}
	return fmt.Sprintf("item %s with content %s", it.ID, short(it.Content))
}

// sameItem reports whether got holds want's id and content (the fields every manifest keeps
// native: the contract requires id and content native).
func sameItem(got *memory.Item, want memory.Item) bool {
	return got != nil && got.ID == want.ID && memory.JSONEqual(got.Content, want.Content)
}

// retrieveIn retrieves id through s, ending the profile on an error.
func (c *caseRun) retrieveIn(s memory.ExternalStore, which string, id uuid.UUID) *memory.Item {
	it, err := s.Retrieve(c.ctx, id)
	if err != nil {
		c.fatalf("%s retrieve of %s failed: %v", which, id, err)
	}
	return it
}

// searchIn returns s's first page of q once it holds every wanted id, polling for an
// eventual index (want empty: one search after the index is made visible).
func (c *caseRun) searchIn(s memory.ExternalStore, which string, q memory.Query, want ...uuid.UUID) []memory.Item {
	if err := c.h.MakeSearchIndexVisible(c.ctx); err != nil {
		c.harnessFailed("MakeSearchIndexVisible", err)
	}
	saved := c.store
	c.store = s
	hits, _, err := c.pollSearch(q, func(h []memory.Item) bool { return containsAll(h, want) })
	c.store = saved
	if err != nil {
		c.fatalf("%s search failed: %v", which, err)
	}
	return hits
}

func hasHit(hits []memory.Item, id uuid.UUID) bool {
	_, ok := findHit(hits, id)
	return ok
}

var profileReadOnly = profile{
	Case: Case{
		ID:          ProfileReadOnly,
		Title:       "Read-only bindings",
		Description: "a read-only token reads the scope's items, and its store is refused with 403 forbidden and stores nothing",
		Hint:        "the token's rights are not checked before the write, or a refused write is stored anyway",
	},
	claimed: func(g *memory.GovernanceV1) (bool, string) {
		return g != nil && g.ReadOnly, "the manifest does not claim governance/v1 read_only"
	},
	runP: func(c *caseRun, s GovernedStores, _ *memory.GovernanceV1) {
		x := governedItem("read-only", 1)
		c.mustGovernedStore(s.ReadWrite, "read-write", x)
		if c.check("read-only/reads") {
			if got := c.retrieveIn(s.ReadOnly, "read-only", x.ID); !sameItem(got, x) {
				c.failf("the read-only token's retrieve of %s answered %s, not the stored item", x.ID, describe(got))
			}
			if hits := c.searchIn(s.ReadOnly, "read-only", memory.Query{Limit: 50}, x.ID); !hasHit(hits, x.ID) {
				c.failf("the read-only token's search does not find %s: %s", x.ID, hitIDs(hits))
			}
		}
		y := governedItem("read-only", 2)
		id, err := s.ReadOnly.Store(c.ctx, y)
		if c.check("read-only/store-refused") {
			typ, status, _ := refusal(s.ReadOnly, err)
			switch {
			case err == nil:
				c.failf("the read-only token's store was acknowledged (id %s)", id)
			case !isAdapterError(err) || typ != memory.ProblemForbidden || status != http.StatusForbidden:
				c.failf("the read-only token's store failed with %v (HTTP %d %q), not MemoryAdapterError from 403 forbidden", err, status, typ)
			}
		}
		if c.check("read-only/nothing-stored") {
			if got := c.retrieveIn(s.ReadWrite, "read-write", y.ID); got != nil {
				c.failf("the item the read-only token tried to store is there: %s", y.ID)
			}
			hits := c.searchIn(s.ReadWrite, "read-write", memory.Query{Limit: 50}, x.ID)
			if hasHit(hits, y.ID) {
				c.failf("the item the read-only token tried to store is found by search: %s", y.ID)
			}
		}
		c.notef("a read-only token retrieved and found the scope's item; its store was refused 403 forbidden and stored nothing")
	},
}

var profileIsolation = profile{
	Case: Case{
		ID:          ProfileIsolation,
		Title:       "Isolated sub-scopes",
		Description: "a sub-scope's items are invisible to another sub-scope's and the scope's retrieve and search, and the same id elsewhere never touches them",
		Hint:        "the sub-scope is a label on queries rather than a scope of its own, or ids are global",
	},
	claimed: func(g *memory.GovernanceV1) (bool, string) {
		return g != nil && g.Isolation, "the manifest does not claim governance/v1 isolation"
	},
	runP: func(c *caseRun, s GovernedStores, _ *memory.GovernanceV1) {
		x := governedItem("isolation", 1)
		c.mustGovernedStore(s.SubScopeA, "sub-scope A", x)
		if c.check("isolation/own-items") {
			if got := c.retrieveIn(s.SubScopeA, "sub-scope A", x.ID); !sameItem(got, x) {
				c.failf("sub-scope A's retrieve of its own %s answered %s", x.ID, describe(got))
			}
		}
		if c.check("isolation/retrieve-hidden") {
			if got := c.retrieveIn(s.SubScopeB, "sub-scope B", x.ID); got != nil {
				c.failf("sub-scope B retrieves sub-scope A's item %s", x.ID)
			}
			if got := c.retrieveIn(s.ReadWrite, "the governed scope", x.ID); got != nil {
				c.failf("the governed scope retrieves sub-scope A's item %s", x.ID)
			}
		}
		if c.check("isolation/search-hidden") {
			c.searchIn(s.SubScopeA, "sub-scope A", memory.Query{Limit: 50}, x.ID)
			text := fmt.Sprintf("governance isolation 1 %s", x.ID)
			for _, q := range []memory.Query{{Limit: 50}, {Text: &text, Limit: 50}} {
				if hits := c.searchIn(s.SubScopeB, "sub-scope B", q); hasHit(hits, x.ID) {
					c.failf("sub-scope B's search finds sub-scope A's item %s", x.ID)
				}
			}
		}
		if c.check("isolation/same-id") {
			other := governedItem("isolation", 2)
			other.ID = x.ID
			if _, err := c.governedStore(s.SubScopeB, other); err != nil {
				c.failf("sub-scope B's store of an id sub-scope A holds failed: %v", err)
			}
			if got := c.retrieveIn(s.SubScopeA, "sub-scope A", x.ID); !sameItem(got, x) {
				c.failf("after sub-scope B stored under the same id, sub-scope A's %s is %s, not its own item", x.ID, describe(got))
			}
		}
		c.notef("sub-scope A's item was invisible to sub-scope B and to the scope (retrieve, search, text search); B's store under the same id left it unchanged")
	},
}

// retentionItemsBound is the largest max_items the retention profile fills a scope past.
const retentionItemsBound = 200

var profileRetention = profile{
	Case: Case{
		ID:          ProfileRetention,
		Title:       "Retention",
		Description: "an item is kept until its max age and removed by the sweep after it; a scope keeps its max_items newest items",
		Hint:        "the age counts from created_at or the sweep's cutoff is off, or the sweep removes nothing",
	},
	claimed: func(g *memory.GovernanceV1) (bool, string) {
		return g != nil && g.Retention != nil, "the manifest does not claim governance/v1 retention"
	},
	runP: func(c *caseRun, s GovernedStores, g *memory.GovernanceV1) {
		r := g.Retention
		exercised := false
		if !c.has(CapRetentionSweep) {
			c.lack(CapRetentionSweep)
			c.notApplicable("missing harness capability " + string(CapRetentionSweep) + ": the profile needs the target's sweep as if time had passed")
		}
		sweep := func(after time.Duration) {
			if err := c.h.(RetentionSweeper).SweepRetentionAfter(c.ctx, after); err != nil {
				c.harnessFailed("SweepRetentionAfter", err)
			}
		}
		if r.MaxAgeSeconds > 0 {
			exercised = true
			x := governedItem("retention", 1)
			c.mustGovernedStore(s.ReadWrite, "read-write", x)
			if c.check("retention/not-early") {
				early := max(r.MaxAgeSeconds-60, 0)
				sweep(time.Duration(early) * time.Second)
				if got := c.retrieveIn(s.ReadWrite, "read-write", x.ID); !sameItem(got, x) {
					c.failf("a sweep %d s after the store (max age %d s) removed or changed %s", early, r.MaxAgeSeconds, x.ID)
				}
			}
			if c.check("retention/expired-removed") {
				sweep(time.Duration(r.MaxAgeSeconds+r.SweepPeriodSeconds+1) * time.Second)
				if got := c.retrieveIn(s.ReadWrite, "read-write", x.ID); got != nil {
					c.failf("%s is still retrievable after a sweep %d s past its store (max age %d s)", x.ID, r.MaxAgeSeconds+r.SweepPeriodSeconds+1, r.MaxAgeSeconds)
				}
				if hits := c.searchIn(s.ReadWrite, "read-write", memory.Query{Limit: 50}); hasHit(hits, x.ID) {
					c.failf("%s is still found by search after its retention sweep", x.ID)
				}
			}
			c.notef("an item outlived a sweep %d s after its store and was gone after one %d s after it (max age %d s)",
				max(r.MaxAgeSeconds-60, 0), r.MaxAgeSeconds+r.SweepPeriodSeconds+1, r.MaxAgeSeconds)
		}
		m := r.MaxItems
		masked := g.Quota != nil && g.Quota.MaxItems > 0 && g.Quota.MaxItems <= m
		switch {
		case m == 0:
		case m > retentionItemsBound || masked:
			c.notef("max_items %d not exercised (over %d, or the quota's max_items refuses first)", m, retentionItemsBound)
		default:
			exercised = true
			items := make([]memory.Item, m+1)
			for i := range items {
				items[i] = governedItem("retention", 10+i)
				c.mustGovernedStore(s.SubScopeA, "sub-scope A", items[i])
			}
			if c.check("retention/max-items") {
				sweep(0)
				if got := c.retrieveIn(s.SubScopeA, "sub-scope A", items[0].ID); got != nil {
					c.failf("the oldest of %d items is still retrievable after a sweep under max_items %d", m+1, m)
				}
				for _, it := range items[1:] {
					if got := c.retrieveIn(s.SubScopeA, "sub-scope A", it.ID); !sameItem(got, it) {
						c.failf("one of the %d newest items (%s) is gone after a sweep under max_items %d", m, it.ID, m)
						break
					}
				}
			}
			c.notef("a sweep under max_items %d removed the oldest of %d items and kept the others", m, m+1)
		}
		if !exercised {
			c.notApplicable(fmt.Sprintf("the claimed retention (max_items %d) cannot be exercised in one run", m))
		}
	},
}

// Bounds on what the quota profile fills a scope to.
const (
	quotaItemsBound = 200
	quotaBytesBound = 1 << 20
	quotaBurstBound = 200
)

var profileQuota = profile{
	Case: Case{
		ID:          ProfileQuota,
		Title:       "Quotas",
		Description: "a store over the item or byte quota is refused with 507 quota_exceeded, over the write rate with 429 rate_limited and Retry-After; nothing acknowledged is lost",
		Hint:        "the quota is counted after the write, or a refused write is dropped silently rather than answered",
	},
	claimed: func(g *memory.GovernanceV1) (bool, string) {
		return g != nil && g.Quota != nil, "the manifest does not claim governance/v1 quota"
	},
	runP: func(c *caseRun, s GovernedStores, g *memory.GovernanceV1) {
		q := g.Quota
		exercised := false
		expectRefused := func(st memory.ExternalStore, err error, what string, status int, typ memory.ProblemType) {
			gotTyp, gotStatus, ra := refusal(st, err)
			switch {
			case err == nil:
				c.failf("%s was acknowledged", what)
			case !isAdapterError(err) || gotTyp != typ || gotStatus != status:
				c.failf("%s failed with %v (HTTP %d %q), not MemoryAdapterError from %d %s", what, err, gotStatus, gotTyp, status, typ)
			case typ == memory.ProblemRateLimited && ra < time.Second:
				c.failf("%s was answered 429 without a Retry-After of at least 1 s", what)
			}
		}
		kept := func(st memory.ExternalStore, which string, items []memory.Item) {
			for _, it := range items {
				if got := c.retrieveIn(st, which, it.ID); !sameItem(got, it) {
					c.failf("the acknowledged item %s is not retrievable after the refusal", it.ID)
					return
				}
			}
		}
		// A profile item's size, with room for the larger numbers of later items.
		itemBytes := memory.ItemSize(governedItem("quota", 1000)) + 8
		switch {
		case q.MaxItems == 0:
		case q.MaxItems > quotaItemsBound:
			c.notef("max_items %d not exercised (over %d)", q.MaxItems, quotaItemsBound)
		case q.MaxBytes > 0 && (q.MaxItems+1)*itemBytes > q.MaxBytes:
			c.notef("max_items %d not exercised: the byte quota (%d) refuses first", q.MaxItems, q.MaxBytes)
		default:
			exercised = true
			items := make([]memory.Item, q.MaxItems)
			for i := range items {
				items[i] = governedItem("quota", i)
				c.mustGovernedStore(s.SubScopeA, "sub-scope A", items[i])
			}
			over := governedItem("quota", int(q.MaxItems))
			_, err := c.governedStore(s.SubScopeA, over)
			if c.check("quota/items-refused") {
				expectRefused(s.SubScopeA, err, fmt.Sprintf("store %d into a scope whose quota is %d items", q.MaxItems+1, q.MaxItems), http.StatusInsufficientStorage, memory.ProblemQuotaExceeded)
			}
			if c.check("quota/acknowledged-kept") {
				kept(s.SubScopeA, "sub-scope A", items)
				if got := c.retrieveIn(s.SubScopeA, "sub-scope A", over.ID); got != nil && err != nil {
					c.failf("the refused item %s was stored", over.ID)
				}
			}
			c.notef("store %d under a %d-item quota was refused 507 quota_exceeded, the %d before it kept", q.MaxItems+1, q.MaxItems, q.MaxItems)
		}
		switch {
		case q.MaxBytes == 0:
		case q.MaxBytes > quotaBytesBound:
			c.notef("max_bytes %d not exercised (over %d)", q.MaxBytes, quotaBytesBound)
		default:
			exercised = true
			var acked []memory.Item
			var err error
			for i := 0; i < 16 && err == nil; i++ {
				it := governedItem("quota-bytes", i)
				it.Content = json.RawMessage(`"` + strings.Repeat("q", int(max(q.MaxBytes/8, 1))) + `"`)
				if _, err = c.governedStore(s.SubScopeB, it); err == nil {
					acked = append(acked, it)
				}
			}
			if c.check("quota/bytes-refused") {
				expectRefused(s.SubScopeB, err, fmt.Sprintf("a store taking the scope over its quota of %d bytes", q.MaxBytes), http.StatusInsufficientStorage, memory.ProblemQuotaExceeded)
			}
			if c.check("quota/acknowledged-kept") {
				kept(s.SubScopeB, "sub-scope B", acked)
			}
			c.notef("a store past %d bytes was refused 507 quota_exceeded, the %d before it kept", q.MaxBytes, len(acked))
		}
		burst := q.WriteBurst
		if burst == 0 {
			burst = q.WritesPerSecond
		}
		switch {
		case q.WritesPerSecond == 0:
		case burst > quotaBurstBound:
			c.notef("the write rate (burst %d) not exercised (over %d)", burst, quotaBurstBound)
		case q.MaxItems > 0 && 2*burst+2 > q.MaxItems ||
			q.MaxBytes > 0 && (2*burst+2)*itemBytes > q.MaxBytes:
			c.notef("the write rate not exercised: the item or byte quota refuses a burst first")
		default:
			// Up to twice the burst, as fast as one client can, until the first refusal. A
			// truthful bucket admits at most burst + rate x elapsed of them (and one for the
			// clock's grain); a refusal must be the typed 429. A run whose stores came slower
			// than the bucket refills proves nothing either way, and says so.
			var acked []memory.Item
			var refused []uuid.UUID
			var limited error
			start := time.Now()
			for i := int64(0); i < 2*burst+2 && limited == nil; i++ {
				it := governedItem("quota-rate", int(i))
				if _, err := s.ReadWrite.Store(c.ctx, it); err != nil {
					refused = append(refused, it.ID)
					limited = err
					continue
				}
				acked = append(acked, it)
			}
			elapsed := time.Since(start)
			admissible := float64(burst) + float64(q.WritesPerSecond)*elapsed.Seconds() + 1
			if c.check("quota/rate-limited") {
				switch {
				case limited != nil:
					exercised = true
					expectRefused(s.ReadWrite, limited, fmt.Sprintf("a store over a write burst of %d", burst), http.StatusTooManyRequests, memory.ProblemRateLimited)
					c.notef("store %d in %s under a burst of %d at %d per second was refused 429 rate_limited with Retry-After, the %d before it kept",
						len(acked)+1, elapsed.Round(time.Millisecond), burst, q.WritesPerSecond, len(acked))
				case float64(len(acked)) > admissible:
					exercised = true
					c.failf("%d stores in %s were all acknowledged; a burst of %d at %d per second admits at most %.0f", len(acked), elapsed.Round(time.Millisecond), burst, q.WritesPerSecond, admissible)
				default:
					c.notef("the write rate not exercised: %d stores took %s, as slow as the bucket refills", len(acked), elapsed.Round(time.Millisecond))
				}
			}
			if c.check("quota/acknowledged-kept") {
				kept(s.ReadWrite, "read-write", acked)
				for _, id := range refused {
					if got := c.retrieveIn(s.ReadWrite, "read-write", id); got != nil {
						c.failf("the refused store of %s was stored", id)
					}
				}
			}
		}
		if !exercised {
			c.notApplicable("the claimed quota's limits are all over what one run exercises")
		}
	},
}

// runProfiles runs every profile after the matrix.
func runProfiles(ctx context.Context, h Harness, m memory.Manifest, opts Options) []CaseResult {
	out := make([]CaseResult, 0, len(profiles))
	for _, p := range profiles {
		var res CaseResult
		if ctx.Err() != nil {
			res = CaseResult{ID: p.ID, Outcome: Failed, Message: "not run: the run's context ended: " + ctx.Err().Error()}
		} else {
			res = runProfile(ctx, h, p, m, opts)
		}
		out = append(out, res)
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "%-20s %-13s %s\n", "profile "+string(res.ID), res.Outcome, truncateString(oneLine(res.Message), 160))
		}
	}
	return out
}
