package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// caseRun is the state of one executing case. Checks record problems; fatalf ends the case.
type caseRun struct {
	ctx   context.Context
	h     Harness
	store memory.ExternalStore
	m     memory.Manifest
	opts  Options

	problems []string
	notes    []string
	na       string
	// current is the check being evaluated; failedChecks collects the checks that found
	// problems, so the mutation test can try the most likely rows first.
	current      string
	failedChecks []string
	// missing names the capabilities the case lacked (NotApplicable or a weaker check).
	missing []string
	// wire marks a wire-rule case, whose checks are registered apart (wireCheckRegistry).
	wire bool
	// profile marks a governance profile, whose checks are registered apart
	// (profileCheckRegistry) and proven by the profiles' own table.
	profile bool
	// rateWaits counts the stores a profile sent again after a 429 rate_limited
	// (governedStore), said once in its message rather than once per store.
	rateWaits int
}

// checkRegistry records every named check that ran, so that the mutation test can disable
// each one in turn and prove that some accuracy-table row depends on it.
var checkRegistry = struct {
	sync.Mutex
	names map[string]bool
}{names: map[string]bool{}}

// wireCheckRegistry records the checks of the wire-rule cases, which only runs over the
// wire reach; the over-the-wire accuracy table proves each of them is needed.
var wireCheckRegistry = struct {
	sync.Mutex
	names map[string]bool
}{names: map[string]bool{}}

// profileCheckRegistry records the checks of the governance profiles.
var profileCheckRegistry = struct {
	sync.Mutex
	names map[string]bool
}{names: map[string]bool{}}

// check reports whether the named check should run. Every observation a case makes is
// guarded by one named check; only the mutation test disables any.
func (c *caseRun) check(name string) bool {
	if c.profile {
		profileCheckRegistry.Lock()
		profileCheckRegistry.names[name] = true
		profileCheckRegistry.Unlock()
	} else if c.wire {
		wireCheckRegistry.Lock()
		wireCheckRegistry.names[name] = true
		wireCheckRegistry.Unlock()
	} else {
		checkRegistry.Lock()
		checkRegistry.names[name] = true
		checkRegistry.Unlock()
	}
	if c.opts.disabledCheck == name || c.profile && strings.HasSuffix(c.opts.disabledCheck, "/") && strings.HasPrefix(name, c.opts.disabledCheck) {
		return false
	}
	c.current = name
	return true
}

// checkAnswer guards an observation of the server's raw answer, which only a run over the
// wire can make: it reports whether the store records answers (a wire run) and the named
// check should run. Such checks belong to the over-the-wire table, whose mutation test
// proves each is needed, so they register there whatever case runs them.
func (c *caseRun) checkAnswer(name string) (answerObserver, bool) {
	obs, ok := c.store.(answerObserver)
	if !ok {
		return nil, false
	}
	wireCheckRegistry.Lock()
	wireCheckRegistry.names[name] = true
	wireCheckRegistry.Unlock()
	if c.opts.disabledCheck == name {
		return nil, false
	}
	c.current = name
	return obs, true
}

// answerObserver is a store that reports the status and problem type of the server's last
// answer (the raw wire client does), so cases can hold a server to the statuses the OpenAPI
// document fixes rather than to the errors a client derives from them.
type answerObserver interface {
	LastAnswer() (status int, problem memory.ProblemType)
}

// expectAnswer fails unless the last answer was status with problem type want.
func (c *caseRun) expectAnswer(obs answerObserver, what string, status int, want memory.ProblemType) {
	got, typ := obs.LastAnswer()
	if got != status || typ != want {
		c.failf("%s was answered HTTP %d %q; the OpenAPI document fixes %d %s", what, got, typ, status, want)
	}
}

func (c *caseRun) failf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
	if c.current != "" && !slices.Contains(c.failedChecks, c.current) {
		c.failedChecks = append(c.failedChecks, c.current)
	}
}

// fatalf records a problem and ends the case.
func (c *caseRun) fatalf(format string, args ...any) {
	c.failf(format, args...)
	panic(abort{})
}

func (c *caseRun) notef(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// noteSetUpRetries records, in a passed case's message, that its set-up call succeeded only
// after the service answered MemoryAdapterUnavailable: the report shows the blip instead of
// hiding it.
func (c *caseRun) noteSetUpRetries(call string, retries int) {
	if retries > 0 {
		c.notef("harness %s answered MemoryAdapterUnavailable %d time(s) before it succeeded", call, retries)
	}
}

// notApplicable ends the case as NotApplicable with the reason.
func (c *caseRun) notApplicable(reason string) {
	c.na = reason
	panic(abort{})
}

func (c *caseRun) result() CaseResult {
	switch {
	case len(c.problems) > 0:
		msg := c.problems
		extra := ""
		if len(msg) > 6 {
			extra = fmt.Sprintf("; and %d more", len(msg)-6)
			msg = msg[:6]
		}
		return CaseResult{Outcome: Failed, Message: strings.Join(msg, "; ") + extra, failedChecks: c.failedChecks, MissingCapabilities: c.missing}
	case c.na != "":
		return CaseResult{Outcome: NotApplicable, Message: c.na, MissingCapabilities: c.missing}
	default:
		return CaseResult{Outcome: Passed, Message: strings.Join(c.notes, "; "), MissingCapabilities: c.missing}
	}
}

// ---- fixtures ----

// bigInt is 2^53 + 1: a float64 cannot hold it, so any float round trip changes it.
const bigInt = "9007199254740993"

// fixtureTime is what Python's time.time() gives (2025-12-05T23:00:00.5738423Z): a double
// with sub-microsecond bits, which the contract says round-trip bit-exactly where created_at
// is claimed (contract.md §3). A store that keeps microseconds, or a timestamptz, returns
// 1764975600.573842 and fails.
const fixtureTime = 1764975600.5738423

// fixture returns a demanding item: an integer above 2^53, nested objects, unicode outside
// the BMP, a microsecond timestamp and tags with duplicates in a significant order. Metadata
// is left empty when the manifest drops it, so that cases other than dropped-write-field do
// not depend on how the adapter handles a dropped field.
func (c *caseRun) fixture(n int) memory.Item {
	id := uuid.New()
	content := fmt.Sprintf(`{"n":%d,"big":%s,"text":"conformance ünïcødé ✓ 𝄞 %s","nested":{"list":[1,"two",{"three":3.25}],"empty":{},"null":null},"micro":0.000001}`, n, bigInt, id)
	it := memory.Item{
		ID:        id,
		CreatedAt: fixtureTime + float64(n),
		Metadata:  map[string]json.RawMessage{},
		Content:   json.RawMessage(content),
		Tags:      []string{"conformance", fmt.Sprintf("n-%d", n), "conformance", "ünï ✓"},
	}
	if !c.m.Dropped(memory.FieldMetadata) {
		it.Metadata = fixtureMetadata(n)
	}
	return it
}

func fixtureMetadata(n int) map[string]json.RawMessage {
	return map[string]json.RawMessage{
		"big":    json.RawMessage(bigInt),
		"nested": json.RawMessage(`{"list":[1,"two",{"three":3.25}],"empty":{}}`),
		"uni":    json.RawMessage(`"ünïcødé ✓ 𝄞"`),
		"null":   json.RawMessage(`null`),
		"bool":   json.RawMessage(`true`),
		"seq":    json.RawMessage(fmt.Sprint(n)),
	}
}

// ---- helpers ----

// mustStore stores items and ends the case if any store fails: the case cannot observe what
// it is about without them. The returned id is store-identifier's business.
func (c *caseRun) mustStore(items ...memory.Item) {
	for _, it := range items {
		if _, err := c.store.Store(c.ctx, it); err != nil {
			c.fatalf("setup: store of item %s failed: %v", it.ID, err)
		}
	}
}

func ids(items []memory.Item) []uuid.UUID {
	out := make([]uuid.UUID, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func hitIDs(hits []memory.Item) string {
	var b strings.Builder
	for i, h := range hits {
		if i > 0 {
			b.WriteString(",")
		}
		if i == 5 {
			fmt.Fprintf(&b, "…(%d)", len(hits))
			break
		}
		b.WriteString(h.ID.String()[:8])
	}
	return "[" + b.String() + "]"
}

func containsAll(hits []memory.Item, want []uuid.UUID) bool {
	for _, id := range want {
		if !slices.ContainsFunc(hits, func(h memory.Item) bool { return h.ID == id }) {
			return false
		}
	}
	return true
}

func findHit(hits []memory.Item, id uuid.UUID) (memory.Item, bool) {
	for _, h := range hits {
		if h.ID == id {
			return h, true
		}
	}
	return memory.Item{}, false
}

// pollSearch calls Search(q) until done(hits) holds, the visibility timeout passes or the
// case context ends. A search error ends polling at once: an error is not "not yet
// visible". It reports whether done held, with the last hits and error.
func (c *caseRun) pollSearch(q memory.Query, done func([]memory.Item) bool) ([]memory.Item, bool, error) {
	deadline := time.NewTimer(c.opts.VisibilityTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(c.opts.PollInterval)
	defer tick.Stop()
	for {
		hits, err := c.store.Search(c.ctx, q)
		if err != nil {
			return hits, false, err
		}
		if done(hits) {
			return hits, true, nil
		}
		select {
		case <-c.ctx.Done():
			return hits, false, c.ctx.Err()
		case <-deadline.C:
			return hits, false, nil
		case <-tick.C:
		}
	}
}

// visible makes the index visible and returns the first page of an empty query once it
// holds every wanted id. It is a precondition of the search cases, not a check.
func (c *caseRun) visible(want []uuid.UUID) []memory.Item {
	if err := c.h.MakeSearchIndexVisible(c.ctx); err != nil {
		c.harnessFailed("MakeSearchIndexVisible", err)
	}
	hits, ok, err := c.pollSearch(memory.Query{Limit: 100}, func(h []memory.Item) bool { return containsAll(h, want) })
	if err != nil {
		c.fatalf("setup: empty-query search failed after MakeSearchIndexVisible: %v", err)
	}
	if !ok {
		c.fatalf("setup: %d stored items still not all found by an empty query %s after MakeSearchIndexVisible; got %s",
			len(want), c.opts.VisibilityTimeout, hitIDs(hits))
	}
	return hits
}

// requestCount reads the transport (in process) or backend-call (over the wire) counter.
func (c *caseRun) requestCount() (int64, bool) {
	if !c.has(CapBackendCalls) {
		c.lack(CapBackendCalls)
		return 0, false
	}
	if o, ok := c.h.(TransportObserver); ok {
		return o.RequestCount(), true
	}
	n, err := c.h.(BackendCallCounter).BackendCalls(c.ctx)
	if err != nil {
		c.fatalf("harness backend-call count failed: %v", err)
	}
	return n, true
}

// silent runs f and reports whether no request reached the transport (no backend call),
// if observable.
func (c *caseRun) silent(f func()) (silent, observable bool) {
	before, ok := c.requestCount()
	f()
	if !ok {
		return false, false
	}
	after, _ := c.requestCount()
	return after == before, true
}

func isAdapterError(err error) bool {
	return errors.Is(err, memory.ErrAdapter) && !errors.Is(err, memory.ErrUnavailable)
}

func short(b []byte) string { return truncateString(string(b), 120) }
