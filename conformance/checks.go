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
}

// checkRegistry records every named check that ran, so that the mutation test can disable
// each one in turn and prove that some accuracy-table row depends on it.
var checkRegistry = struct {
	sync.Mutex
	names map[string]bool
}{names: map[string]bool{}}

// check reports whether the named check should run. Every observation a case makes is
// guarded by one named check; only the mutation test disables any.
func (c *caseRun) check(name string) bool {
	checkRegistry.Lock()
	checkRegistry.names[name] = true
	checkRegistry.Unlock()
	if c.opts.disabledCheck == name {
		return false
	}
	c.current = name
	return true
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
		return CaseResult{Outcome: Failed, Message: strings.Join(msg, "; ") + extra, failedChecks: c.failedChecks}
	case c.na != "":
		return CaseResult{Outcome: NotApplicable, Message: c.na}
	default:
		return CaseResult{Outcome: Passed, Message: strings.Join(c.notes, "; ")}
	}
}

// caseFuncs maps every case id to its implementation.
var caseFuncs map[CaseID]func(*caseRun)

func init() {
	caseFuncs = map[CaseID]func(*caseRun){
		CaseStructuralSurface:  caseStructuralSurface,
		CaseStoreIdentifier:    caseStoreIdentifier,
		CaseDirectRetrieval:    caseDirectRetrieval,
		CaseUnknownID:          caseUnknownID,
		CaseWrongNativeKind:    caseWrongNativeKind,
		CaseDroppedWriteField:  caseDroppedWriteField,
		CaseTypedSearch:        caseTypedSearch,
		CaseLimit:              caseLimit,
		CaseEmptyQuery:         caseEmptyQuery,
		CaseUnsupportedFilter:  caseUnsupportedFilter,
		CaseSupportedFilter:    caseSupportedFilter,
		CaseTagProjection:      caseTagProjection,
		CaseMetadataProjection: caseMetadataProjection,
		CaseConsistency:        caseConsistency,
		CaseTransportOutage:    caseTransportOutage,
		CaseRejectedWrite:      caseRejectedWrite,
		CaseManifestAccuracy:   caseManifestAccuracy,
	}
}

// ---- fixtures ----

// bigInt is 2^53 + 1: a float64 cannot hold it, so any float round trip changes it.
const bigInt = "9007199254740993"

// fixtureTime has microsecond precision, the contract's resolution.
var fixtureTime = time.Date(2001, 2, 3, 4, 5, 6, 789012000, time.UTC)

// fixture returns a demanding item: an integer above 2^53, nested objects, unicode outside
// the BMP, a microsecond timestamp and tags with duplicates in a significant order. Metadata
// is left empty when the manifest drops it, so that cases other than dropped-write-field do
// not depend on how the adapter handles a dropped field.
func (c *caseRun) fixture(n int) memory.Item {
	id := uuid.New()
	content := fmt.Sprintf(`{"n":%d,"big":%s,"text":"conformance ünïcødé ✓ 𝄞 %s","nested":{"list":[1,"two",{"three":3.25}],"empty":{},"null":null},"micro":0.000001}`, n, bigInt, id)
	it := memory.Item{
		ID:        id,
		CreatedAt: fixtureTime.Add(time.Duration(n) * time.Second),
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
		c.fatalf("harness MakeSearchIndexVisible failed: %v", err)
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

func (c *caseRun) requestCount() (int64, bool) {
	if o, ok := c.h.(TransportObserver); ok {
		return o.RequestCount(), true
	}
	return 0, false
}

// silent runs f and reports whether no request reached the transport, if observable.
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

// ---- cases ----

func caseStructuralSurface(c *caseRun) {
	if c.check("structural-surface/manifest-validates") {
		if err := c.m.Validate(); err != nil {
			c.fatalf("manifest does not validate: %v", err)
		}
	}
	if c.check("structural-surface/manifest-immutable") {
		// Exercise the store in between: a manifest that changes after use is as wrong as
		// one that changes between two reads.
		it := c.fixture(0)
		_, _ = c.store.Store(c.ctx, it)
		_, _ = c.store.Search(c.ctx, memory.Query{Limit: 1})
		for i := range 2 {
			if later := c.store.Manifest(); !later.Equal(c.m) {
				c.fatalf("Manifest() changed during the instance's lifetime (read %d): first %s, later %s", i+2, c.m.Hash(), later.Hash())
			}
		}
	}
	c.notef("manifest %s validates and is stable", c.m.Hash())
}

func caseStoreIdentifier(c *caseRun) {
	a, b := c.fixture(1), c.fixture(2)
	if c.check("store-identifier/returns-item-id") {
		for _, it := range []memory.Item{a, b} {
			id, err := c.store.Store(c.ctx, it)
			if err != nil {
				c.fatalf("store failed: %v", err)
			}
			if id != it.ID {
				c.failf("store returned %s, want the item's own id %s", id, it.ID)
			}
		}
	}
	w, ok := c.h.(IdentitylessWriter)
	if !ok {
		c.notef("identityless write response not observable (harness lacks IdentitylessWriter)")
		return
	}
	if err := w.MakeNextWriteIdentityless(c.ctx); err != nil {
		c.fatalf("harness MakeNextWriteIdentityless failed: %v", err)
	}
	it := c.fixture(3)
	id, err := c.store.Store(c.ctx, it)
	if c.check("store-identifier/identityless-write-fails") {
		if err == nil || !isAdapterError(err) || id != uuid.Nil {
			c.failf("a write acknowledged without an identity returned (%s, %v), want (nil UUID, MemoryAdapterError)", id, err)
		}
	}
}

// fieldProblems compares got with stored on the given fields.
func fieldProblems(stored, got memory.Item, fields ...memory.ItemField) []string {
	var out []string
	for _, f := range fields {
		switch f {
		case memory.FieldID:
			if got.ID != stored.ID {
				out = append(out, fmt.Sprintf("id %s, want %s", got.ID, stored.ID))
			}
		case memory.FieldContent:
			if !memory.JSONEqual(got.ContentJSON(), stored.ContentJSON()) {
				out = append(out, fmt.Sprintf("content %s, want %s", short(got.ContentJSON()), short(stored.ContentJSON())))
			}
		case memory.FieldCreatedAt:
			if !got.CreatedAt.Truncate(time.Microsecond).Equal(stored.CreatedAt) {
				out = append(out, fmt.Sprintf("created_at %s, want %s", got.CreatedAt.UTC().Format(time.RFC3339Nano), stored.CreatedAt.Format(time.RFC3339Nano)))
			}
		case memory.FieldTags:
			if !slices.Equal(got.Tags, stored.Tags) {
				out = append(out, fmt.Sprintf("tags %q, want %q", got.Tags, stored.Tags))
			}
		case memory.FieldMetadata:
			if !memory.MetadataEqual(got.Metadata, stored.Metadata) {
				gb, _ := json.Marshal(got.Metadata)
				sb, _ := json.Marshal(stored.Metadata)
				out = append(out, fmt.Sprintf("metadata %s, want %s", short(gb), short(sb)))
			}
		}
	}
	return out
}

func caseDirectRetrieval(c *caseRun) {
	it := c.fixture(1)
	c.mustStore(it)
	// No MakeSearchIndexVisible: a successful store must be directly retrievable at once.
	got, err := c.store.Retrieve(c.ctx, it.ID)
	if c.check("direct-retrieval/retrievable-at-once") {
		if err != nil || got == nil {
			c.fatalf("retrieve right after a successful store returned (%v, %v), want the item (retrieve must not wait for a search index)", got != nil, err)
		}
	}
	if got == nil {
		// Only reachable when the check above is disabled by the mutation test.
		return
	}
	if c.check("direct-retrieval/anchors-exact") {
		// id and content are ADR-0093's direct-retrieval anchors at every fidelity: a service
		// that cannot preserve them must reject the write, not normalise them.
		for _, p := range fieldProblems(it, *got, memory.FieldID, memory.FieldContent) {
			c.failf("retrieve: %s", p)
		}
	}
	if c.check("direct-retrieval/tags-anchor-exact") {
		// tags are the third anchor: exact (order and duplicates) even at lossy fidelity.
		for _, p := range fieldProblems(it, *got, memory.FieldTags) {
			c.failf("retrieve (tags are a direct-retrieval anchor at every fidelity): %s", p)
		}
	}
	exact := c.m.RetrieveFidelity != memory.FidelityLossy
	if c.check("direct-retrieval/created-at-fidelity") {
		if c.m.Native(memory.FieldCreatedAt) && exact {
			for _, p := range fieldProblems(it, *got, memory.FieldCreatedAt) {
				c.failf("retrieve at %s fidelity with created_at native: %s", c.m.RetrieveFidelity, p)
			}
		}
	}
	if c.check("direct-retrieval/metadata-fidelity") {
		// full and native_fields promise every native field round-trips on retrieve, whatever
		// preserves_metadata says (that flag is metadata-projection's business).
		if c.m.Native(memory.FieldMetadata) && exact {
			for _, p := range fieldProblems(it, *got, memory.FieldMetadata) {
				c.failf("retrieve at %s fidelity with metadata native: %s", c.m.RetrieveFidelity, p)
			}
		}
	}
	verified, skipped := []string{"id", "content", "tags"}, []string(nil)
	for _, f := range []memory.ItemField{memory.FieldCreatedAt, memory.FieldMetadata} {
		switch {
		case !c.m.Native(f):
		case exact:
			verified = append(verified, string(f))
		default:
			skipped = append(skipped, string(f))
		}
	}
	c.notef("retrieve at %s fidelity returns %s exactly", c.m.RetrieveFidelity, strings.Join(verified, ", "))
	if len(skipped) > 0 {
		c.notef("native %s not compared: lossy retrieve fidelity permits normalising them", strings.Join(skipped, ", "))
	}
}

func caseUnknownID(c *caseRun) {
	unknown := uuid.New()
	// A stored item that mentions the unknown id in its content catches a retrieve
	// implemented as ranked search with the UUID as query text.
	decoy := c.fixture(1)
	decoy.Content = json.RawMessage(fmt.Sprintf(`{"mentions":%q}`, unknown.String()))
	c.mustStore(decoy)
	c.visible([]uuid.UUID{decoy.ID})
	got, err := c.store.Retrieve(c.ctx, unknown)
	if c.check("unknown-id/none") {
		if err != nil {
			c.failf("retrieve of an unknown id returned error %v, want no item and no error", err)
		} else if got != nil {
			c.failf("retrieve of an unknown id returned an item (id %s), want none (not an empty item, not a search result)", got.ID)
		}
	}
	c.notef("unknown id returns no item")
}

func caseWrongNativeKind(c *caseRun) {
	w, ok := c.h.(WrongKindMaker)
	if !ok {
		c.notApplicable("the harness cannot plant a non-memory service record (it does not implement WrongKindMaker)")
	}
	id, err := w.MakeWrongKindRecord(c.ctx)
	if err != nil {
		c.fatalf("harness MakeWrongKindRecord failed: %v", err)
	}
	got, err := c.store.Retrieve(c.ctx, id)
	if c.check("wrong-native-kind/retrieve-none") {
		if err != nil || got != nil {
			c.failf("retrieve of a non-memory record returned (item %v, %v), want no item and no error", got != nil, err)
		}
	}
	anchor := c.fixture(1)
	c.mustStore(anchor)
	hits := c.visible([]uuid.UUID{anchor.ID})
	if c.check("wrong-native-kind/search-excludes") {
		if _, found := findHit(hits, id); found {
			c.failf("search returned the non-memory record %s coerced into an item", id)
		}
	}
	c.notef("non-memory record is absent from retrieve and search")
}

func caseDroppedWriteField(c *caseRun) {
	it := c.fixture(1)
	it.Metadata = map[string]json.RawMessage{"probe": json.RawMessage(`{"kept":[1,2,3]}`), "seq": json.RawMessage(`1`)}
	var id uuid.UUID
	var err error
	silent, observable := c.silent(func() { id, err = c.store.Store(c.ctx, it) })
	if err != nil {
		// Rejection is allowed only for declared-dropped fields, before any transport.
		if c.check("dropped-write-field/rejection-allowed") {
			if !isAdapterError(err) {
				c.fatalf("store of an item with non-default fields failed with %v, want success or MemoryAdapterError", err)
			}
			if len(c.m.DroppedItemFields) == 0 {
				c.fatalf("store rejected an item although no field is declared dropped: %v", err)
			}
			if observable && !silent {
				c.fatalf("store rejected the item only after a request reached the transport (reject before transport): %v", err)
			}
		}
		if !observable {
			c.notef("rejection before transport not observable (harness lacks TransportObserver)")
		}
		c.notef("item with values in dropped fields %v rejected before transport", c.m.DroppedItemFields)
		return
	}
	_ = id
	got, err := c.store.Retrieve(c.ctx, it.ID)
	if err != nil || got == nil {
		c.fatalf("setup: retrieve after store returned (%v, %v)", got != nil, err)
	}
	if c.m.Dropped(memory.FieldMetadata) {
		if c.check("dropped-write-field/dropped-metadata-default") && len(got.Metadata) != 0 {
			c.failf("metadata is declared dropped but retrieve returned %d keys, want the default {}", len(got.Metadata))
		}
	} else if c.check("dropped-write-field/native-metadata-survives") {
		for k := range it.Metadata {
			if _, ok := got.Metadata[k]; !ok {
				c.failf("metadata is not declared dropped but key %q did not survive store/retrieve", k)
			}
		}
	}
	delta := got.CreatedAt.Sub(it.CreatedAt).Abs()
	if c.m.Dropped(memory.FieldCreatedAt) {
		if c.check("dropped-write-field/dropped-created-at-not-kept") && delta == 0 {
			c.failf("created_at is declared dropped but retrieve returned the stored value %s", it.CreatedAt.Format(time.RFC3339Nano))
		}
	} else if c.check("dropped-write-field/native-created-at-survives") && delta > 24*time.Hour {
		// Even a lossy created_at stays near its value; a default (epoch, "now") does not.
		c.failf("created_at is not declared dropped but retrieve returned %s for a stored %s", got.CreatedAt.UTC().Format(time.RFC3339Nano), it.CreatedAt.Format(time.RFC3339Nano))
	}
	c.notef("dropped fields %v come back as defaults; other fields survive", c.m.DroppedItemFields)
}

func caseTypedSearch(c *caseRun) {
	items := []memory.Item{c.fixture(1), c.fixture(2), c.fixture(3)}
	c.mustStore(items...)
	hits := c.visible(ids(items))
	if c.check("typed-search/hits-are-stored-items") {
		for _, h := range hits {
			stored := slices.ContainsFunc(items, func(it memory.Item) bool { return it.ID == h.ID })
			if !stored || h.ID == uuid.Nil || !json.Valid(h.ContentJSON()) {
				c.failf("search returned something that is not a stored item: id %s, content %s", h.ID, short(h.ContentJSON()))
				continue
			}
			for k, v := range h.Metadata {
				if !json.Valid(v) {
					c.failf("hit %s: metadata %q is not valid JSON", h.ID, k)
				}
			}
		}
	}
	if c.check("typed-search/hit-fidelity") && c.m.SearchFidelity != memory.FidelityLossy {
		// Tags and metadata in hits are the projection cases' business.
		fields := []memory.ItemField{memory.FieldID, memory.FieldContent}
		if c.m.Native(memory.FieldCreatedAt) {
			fields = append(fields, memory.FieldCreatedAt)
		}
		for _, it := range items {
			if h, ok := findHit(hits, it.ID); ok {
				for _, p := range fieldProblems(it, h, fields...) {
					c.failf("hit at %s search fidelity: %s", c.m.SearchFidelity, p)
				}
			}
		}
	}
	mr, ok := c.h.(MalformedResponder)
	if !ok {
		c.notef("malformed payload handling not observable (harness lacks MalformedResponder)")
		return
	}
	if err := mr.MakeResponsesMalformed(c.ctx); err != nil {
		c.fatalf("harness MakeResponsesMalformed failed: %v", err)
	}
	if c.check("typed-search/malformed-payload-fails") {
		hits, err := c.store.Search(c.ctx, memory.Query{Limit: 100})
		if !isAdapterError(err) || len(hits) != 0 {
			c.failf("search over malformed service payloads returned (%d hits, %v), want MemoryAdapterError", len(hits), err)
		}
		got, err := c.store.Retrieve(c.ctx, items[0].ID)
		if !isAdapterError(err) || got != nil {
			c.failf("retrieve of a malformed service payload returned (item %v, %v), want MemoryAdapterError", got != nil, err)
		}
	}
	c.notef("hits are stored items at %s fidelity; malformed payloads raise MemoryAdapterError", c.m.SearchFidelity)
}

func caseLimit(c *caseRun) {
	items := []memory.Item{c.fixture(1), c.fixture(2), c.fixture(3)}
	c.mustStore(items...)
	c.visible(ids(items))
	if c.check("limit/positive") {
		for _, n := range []int{1, 2, 3, 5} {
			hits, err := c.store.Search(c.ctx, memory.Query{Limit: n})
			if err != nil {
				c.failf("search with limit %d failed: %v", n, err)
				continue
			}
			if want := min(n, len(items)); len(hits) != want {
				c.failf("search with limit %d over %d items returned %d hits, want %d (the first page up to the limit)", n, len(items), len(hits), want)
			}
		}
	}
	var hits []memory.Item
	var err error
	silent, observable := c.silent(func() { hits, err = c.store.Search(c.ctx, memory.Query{Limit: 0}) })
	if c.check("limit/zero-empty") && (err != nil || len(hits) != 0) {
		c.failf("search with limit 0 returned (%d hits, %v), want an empty list and no error", len(hits), err)
	}
	if c.check("limit/zero-no-transport") && observable && !silent {
		c.failf("search with limit 0 sent a request to the transport; it must answer [] locally")
	}
	silent, observable = c.silent(func() { hits, err = c.store.Search(c.ctx, memory.Query{Limit: -1}) })
	if c.check("limit/negative-rejected") {
		var u *memory.UnsupportedMemoryQuery
		if !errors.As(err, &u) || !slices.Equal(u.RejectedKeys, []string{"limit"}) || len(hits) != 0 {
			c.failf("search with limit -1 returned (%d hits, %v), want UnsupportedMemoryQuery naming exactly [limit]", len(hits), err)
		}
	}
	if c.check("limit/negative-no-transport") && observable && !silent {
		c.failf("search with limit -1 sent a request to the transport before rejecting it")
	}
	if !observable {
		c.notef("transport silence for limit 0 and -1 not observable (harness lacks TransportObserver)")
	}
	c.notef("positive limits cap the first page; 0 is [] and -1 is UnsupportedMemoryQuery[limit]")
}

func caseEmptyQuery(c *caseRun) {
	items := []memory.Item{c.fixture(1), c.fixture(2), c.fixture(3)}
	c.mustStore(items...)
	if err := c.h.MakeSearchIndexVisible(c.ctx); err != nil {
		c.fatalf("harness MakeSearchIndexVisible failed: %v", err)
	}
	empty := ""
	for _, q := range []memory.Query{
		{Limit: memory.DefaultLimit},
		{Text: &empty, Tags: []string{}, Filters: map[string]json.RawMessage{}, Limit: memory.DefaultLimit},
	} {
		hits, ok, err := c.pollSearch(q, func(h []memory.Item) bool { return len(h) == len(items) && containsAll(h, ids(items)) })
		if c.check("empty-query/first-page") && (err != nil || !ok) {
			c.failf("empty query (text %v) over a scope of %d items returned %s (error %v) within %s after MakeSearchIndexVisible, want exactly those items",
				q.Text != nil, len(items), hitIDs(hits), err, c.opts.VisibilityTimeout)
		}
	}
	c.notef("an empty query returns the whole first page")
}

func caseUnsupportedFilter(c *caseRun) {
	a, b := "conformance-unsupported-a", "conformance-unsupported-b"
	for c.m.SupportsFilter(a) || c.m.SupportsFilter(b) {
		a, b = a+"x", b+"x"
	}
	filters := map[string]json.RawMessage{b: json.RawMessage(`1`), a: json.RawMessage(`"x"`)}
	if len(c.m.SupportedFilters) > 0 {
		// A supported key next to the rejected ones must not be reported.
		filters[c.m.SupportedFilters[0]] = json.RawMessage(`"conformance"`)
	}
	for _, tc := range []struct {
		limit int
		want  []string
	}{
		{memory.DefaultLimit, []string{a, b}},
		{-1, []string{a, b, "limit"}},
	} {
		var hits []memory.Item
		var err error
		silent, observable := c.silent(func() {
			hits, err = c.store.Search(c.ctx, memory.Query{Filters: filters, Limit: tc.limit})
		})
		if c.check("unsupported-filter/rejected-keys") {
			var u *memory.UnsupportedMemoryQuery
			if !errors.As(err, &u) || !slices.Equal(u.RejectedKeys, tc.want) || len(hits) != 0 {
				c.failf("search with unsupported filters (limit %d) returned (%d hits, %v), want UnsupportedMemoryQuery naming exactly %v", tc.limit, len(hits), err, tc.want)
			}
		}
		if c.check("unsupported-filter/no-transport") && observable && !silent {
			c.failf("search with unsupported filters (limit %d) sent a request to the transport; validation must precede it", tc.limit)
		}
		if !observable {
			c.notef("transport silence not observable (harness lacks TransportObserver)")
		}
	}
	c.notef("unsupported keys are rejected together, sorted, before transport")
}

// maxFilterKeysChecked bounds the supported-filter case on manifests with many keys.
const maxFilterKeysChecked = 8

func caseSupportedFilter(c *caseRun) {
	if len(c.m.SupportedFilters) == 0 {
		c.notApplicable("the manifest declares no supported_filters")
	}
	keys := slices.Clone(c.m.SupportedFilters)
	if len(keys) > maxFilterKeysChecked {
		keys = keys[:maxFilterKeysChecked]
		c.notef("checked the first %d of %d supported keys", maxFilterKeysChecked, len(c.m.SupportedFilters))
	}
	rec, hasRec := c.h.(FilterRecorder)
	for _, key := range keys {
		match, other, absent := c.fixture(1), c.fixture(2), c.fixture(3)
		match.Metadata = map[string]json.RawMessage{key: json.RawMessage(`7`)}
		other.Metadata = map[string]json.RawMessage{key: json.RawMessage(`8`)}
		absent.Metadata = map[string]json.RawMessage{}
		c.mustStore(match, other, absent)
		c.visible([]uuid.UUID{match.ID, other.ID, absent.ID})
		q := memory.Query{Filters: map[string]json.RawMessage{key: json.RawMessage(`7`)}, Limit: 100}
		hits, err := c.store.Search(c.ctx, q)
		if c.check("supported-filter/exact-matches") {
			if err != nil {
				c.failf("filter %s=7: search failed: %v", key, err)
			} else if len(hits) != 1 || hits[0].ID != match.ID {
				c.failf("filter %s=7 returned %s, want exactly the one matching item %s", key, hitIDs(hits), match.ID.String()[:8])
			}
		}
		if hasRec && c.check("supported-filter/documented-mapping") {
			want := rec.DocumentedFilter(key, []byte(`7`))
			if !slices.Contains(rec.RecordedFilters(), want) {
				c.failf("filter %s=7 did not reach the transport as the documented %q (recorded %q)", key, want, truncateString(strings.Join(rec.RecordedFilters(), " "), 200))
			}
		}
		if err := c.h.Reset(c.ctx); err != nil {
			c.fatalf("harness Reset failed: %v", err)
		}
		s, err := c.h.MakeStore(c.ctx)
		if err != nil || s == nil {
			c.fatalf("harness MakeStore failed: %v", err)
		}
		closeStore(c.store)
		c.store = s
	}
	if !hasRec {
		c.notef("native key/value mapping not observable (harness lacks FilterRecorder)")
	}
	c.notef("supported keys %v narrow results exactly", keys)
}

func caseTagProjection(c *caseRun) {
	it := c.fixture(1)
	c.mustStore(it)
	got, err := c.store.Retrieve(c.ctx, it.ID)
	if err != nil || got == nil {
		c.fatalf("setup: retrieve after store returned (%v, %v)", got != nil, err)
	}
	if c.check("tag-projection/retrieve-exact") {
		for _, p := range fieldProblems(it, *got, memory.FieldTags) {
			c.failf("retrieve (tags are a required native anchor): %s", p)
		}
	}
	hits := c.visible([]uuid.UUID{it.ID})
	h, _ := findHit(hits, it.ID)
	if c.m.SearchReturnsTags {
		if c.check("tag-projection/hits-carry-tags") && !slices.Equal(h.Tags, it.Tags) {
			c.failf("search_returns_tags is true but the hit carries tags %q, want %q", h.Tags, it.Tags)
		}
	} else if c.check("tag-projection/hits-without-tags") && len(h.Tags) != 0 {
		c.failf("search_returns_tags is false but the hit carries tags %q; the manifest understates the adapter", h.Tags)
	}
	c.notef("tags exact on retrieve; hit tags agree with search_returns_tags=%v", c.m.SearchReturnsTags)
}

func caseMetadataProjection(c *caseRun) {
	it := c.fixture(1)
	it.Metadata = fixtureMetadata(1)
	if _, err := c.store.Store(c.ctx, it); err != nil {
		if !c.m.Dropped(memory.FieldMetadata) || !isAdapterError(err) {
			c.fatalf("store of an item with metadata failed: %v", err)
		}
		// A dropped field may be rejected; observe the projection of an item without it.
		it.Metadata = map[string]json.RawMessage{}
		c.mustStore(it)
	}
	got, err := c.store.Retrieve(c.ctx, it.ID)
	if err != nil || got == nil {
		c.fatalf("setup: retrieve after store returned (%v, %v)", got != nil, err)
	}
	hits := c.visible([]uuid.UUID{it.ID})
	h, _ := findHit(hits, it.ID)
	switch {
	case c.m.Dropped(memory.FieldMetadata):
		if c.check("metadata-projection/dropped-empty") {
			if len(got.Metadata) != 0 {
				c.failf("metadata is declared dropped but retrieve returned %d keys", len(got.Metadata))
			}
			if len(h.Metadata) != 0 {
				c.failf("metadata is declared dropped but the search hit carries %d keys", len(h.Metadata))
			}
		}
	case c.m.PreservesMetadata:
		if c.check("metadata-projection/preserved-retrieve-exact") {
			for _, p := range fieldProblems(it, *got, memory.FieldMetadata) {
				c.failf("preserves_metadata is true but retrieve returned %s", p)
			}
		}
		if c.m.SearchFidelity != memory.FidelityLossy && c.check("metadata-projection/preserved-hits-exact") {
			for _, p := range fieldProblems(it, h, memory.FieldMetadata) {
				c.failf("preserves_metadata is true and search fidelity is %s but the hit has %s", c.m.SearchFidelity, p)
			}
		}
	default:
		c.notef("metadata is native but not preserved: exactness is not claimed, so only the classification is checked")
	}
	c.notef("metadata agrees with preserves_metadata=%v and the classification", c.m.PreservesMetadata)
}

func caseConsistency(c *caseRun) {
	it := c.fixture(1)
	c.mustStore(it)
	want := []uuid.UUID{it.ID}
	if c.m.SearchConsistency == memory.ConsistencyImmediate {
		hits, err := c.store.Search(c.ctx, memory.Query{Limit: 100})
		if c.check("consistency/immediate-found-at-once") && (err != nil || !containsAll(hits, want)) {
			c.failf("search_consistency is immediate but a search right after a successful store returned %s (error %v) without it", hitIDs(hits), err)
		}
		c.notef("a stored item is searchable at once")
		return
	}
	// Eventual: a miss before the index is made visible is allowed, an error is not.
	hits, err := c.store.Search(c.ctx, memory.Query{Limit: 100})
	if err != nil {
		c.fatalf("search before MakeSearchIndexVisible failed: %v (a miss is allowed, an error is not)", err)
	}
	missed := !containsAll(hits, want)
	if err := c.h.MakeSearchIndexVisible(c.ctx); err != nil {
		c.fatalf("harness MakeSearchIndexVisible failed: %v", err)
	}
	hits, ok, err := c.pollSearch(memory.Query{Limit: 100}, func(h []memory.Item) bool { return containsAll(h, want) })
	if c.check("consistency/eventual-found-after") && (err != nil || !ok) {
		c.failf("search_consistency is eventual but the item was still not found %s after MakeSearchIndexVisible (hits %s, error %v)", c.opts.VisibilityTimeout, hitIDs(hits), err)
	}
	c.notef("eventual: missed before index visibility: %v; found after", missed)
}

func caseTransportOutage(c *caseRun) {
	stored := c.fixture(1)
	c.mustStore(stored)
	if err := c.h.MakeTransportUnavailable(c.ctx); err != nil {
		c.fatalf("harness MakeTransportUnavailable failed: %v", err)
	}
	if c.check("transport-outage/calls-unavailable") {
		c.expectUnavailable("existing store", c.store, stored.ID)
	}
	// A store made while the transport is down: the failure surfaces from the first
	// explicit call (ADR-0093 D4), or already from construction.
	s, err := c.h.MakeStore(c.ctx)
	if c.check("transport-outage/creation-unavailable") {
		switch {
		case err != nil && errors.Is(err, memory.ErrUnavailable):
			c.notef("a store made during the outage failed at construction with MemoryAdapterUnavailable")
		case err != nil:
			c.failf("making a store during the outage failed with %v, want MemoryAdapterUnavailable (or success and Unavailable on first use)", err)
		case s == nil:
			c.failf("harness MakeStore returned a nil store")
		default:
			c.expectUnavailable("store created during the outage", s, stored.ID)
		}
	}
	if s != nil {
		closeStore(s)
	}
	c.notef("explicit calls raise MemoryAdapterUnavailable during the outage")
}

func (c *caseRun) expectUnavailable(which string, s memory.ExternalStore, known uuid.UUID) {
	it := c.fixture(2)
	id, err := s.Store(c.ctx, it)
	if !errors.Is(err, memory.ErrUnavailable) || id != uuid.Nil {
		c.failf("%s: store during the outage returned (%s, %v), want (nil UUID, MemoryAdapterUnavailable)", which, id, err)
	}
	got, err := s.Retrieve(c.ctx, known)
	if !errors.Is(err, memory.ErrUnavailable) || got != nil {
		c.failf("%s: retrieve during the outage returned (item %v, %v), want MemoryAdapterUnavailable", which, got != nil, err)
	}
	hits, err := s.Search(c.ctx, memory.Query{Limit: memory.DefaultLimit})
	if !errors.Is(err, memory.ErrUnavailable) || len(hits) != 0 {
		c.failf("%s: search during the outage returned (%d hits, %v), want MemoryAdapterUnavailable", which, len(hits), err)
	}
}

func caseRejectedWrite(c *caseRun) {
	w, ok := c.h.(WriteRejecter)
	if !ok {
		c.notApplicable("the harness cannot make the service reject a write (it does not implement WriteRejecter)")
	}
	it, err := w.MakeWriteRejected(c.ctx)
	if err != nil {
		c.fatalf("harness MakeWriteRejected failed: %v", err)
	}
	id, err := c.store.Store(c.ctx, it)
	if c.check("rejected-write/error-no-id") && (!isAdapterError(err) || id != uuid.Nil) {
		c.failf("a write the service rejected returned (%s, %v), want (nil UUID, MemoryAdapterError)", id, err)
	}
	c.notef("a rejected write raises MemoryAdapterError and returns no id")
}

func caseManifestAccuracy(c *caseRun) {
	acc := c.opts.Accuracy
	if acc == nil {
		acc = RunAccuracyTable
	}
	sum, err := acc(c.ctx)
	if err != nil {
		c.fatalf("manifest-accuracy table could not run: %v", err)
	}
	if c.check("manifest-accuracy/all-caught") && !sum.OK() {
		c.failf("the suite caught %d of %d (knob, lie) pairs and passed %d of %d truthful configurations: %s",
			sum.Caught, sum.Total, sum.TruthfulPassed, sum.Truthful, strings.Join(sum.Problems, "; "))
	}
	c.notef("the built-in fake table caught %d of %d (knob, lie) pairs; %d of %d truthful configurations passed",
		sum.Caught, sum.Total, sum.TruthfulPassed, sum.Truthful)
}
