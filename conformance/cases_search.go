package conformance

// This file holds the cases about search: typed hits, the limit rules, the empty query, filters,
// the projection of tags and metadata, and the declared consistency.

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

var caseTypedSearch = Case{
	ID:          CaseTypedSearch,
	Title:       "Typed search",
	Description: "every search hit is a well-formed Item that was stored, projected at the declared search fidelity; malformed payloads fail",
	Hint:        "search passes malformed or partial service payloads through, or hits lose fields the search fidelity claims",
	run: func(c *caseRun) {
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
		if !c.has(CapResponsesMalformed) {
			c.lack(CapResponsesMalformed)
			c.notef("malformed payload handling not observable (missing harness capability %s: MalformedResponder)", CapResponsesMalformed)
			return
		}
		if err := c.h.(MalformedResponder).MakeResponsesMalformed(c.ctx); err != nil {
			c.fatalf("harness MakeResponsesMalformed failed: %v", err)
		}
		if c.check("typed-search/malformed-payload-fails") {
			hits, err := c.store.Search(c.ctx, memory.Query{Limit: 100})
			if !isAdapterError(err) || len(hits) != 0 {
				c.failf("search over malformed service payloads returned (%d hits, %v), want MemoryAdapterError", len(hits), err)
			}
			if obs, ok := c.checkAnswer("typed-search/malformed-answered-502"); ok {
				c.expectAnswer(obs, "search over malformed service payloads", http.StatusBadGateway, memory.ProblemAdapterError)
			}
			got, err := c.store.Retrieve(c.ctx, items[0].ID)
			if !isAdapterError(err) || got != nil {
				c.failf("retrieve of a malformed service payload returned (item %v, %v), want MemoryAdapterError", got != nil, err)
			}
			if obs, ok := c.checkAnswer("typed-search/malformed-answered-502"); ok {
				c.expectAnswer(obs, "retrieve of a malformed service payload", http.StatusBadGateway, memory.ProblemAdapterError)
			}
		}
		c.notef("hits are stored items at %s fidelity; malformed payloads raise MemoryAdapterError", c.m.SearchFidelity)
	},
}

var caseLimit = Case{
	ID:          CaseLimit,
	Title:       "Limit",
	Description: "a positive limit returns at most N, 0 returns an empty list without transport, a negative limit is UnsupportedMemoryQuery naming limit",
	Hint:        "limit=0 is sent to the service, or a negative limit is passed on (Python slice semantics) instead of rejected",
	run: func(c *caseRun) {
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
			c.notef("transport silence for limit 0 and -1 not observable (missing harness capability %s: TransportObserver or BackendCallCounter)", CapBackendCalls)
		}
		c.notef("positive limits cap the first page; 0 is [] and -1 is UnsupportedMemoryQuery[limit]")
	},
}

var caseEmptyQuery = Case{
	ID:          CaseEmptyQuery,
	Title:       "Empty query",
	Description: "a query with no predicates returns the backend's first page up to the limit, never a wildcard search",
	Hint:        "the adapter substitutes a magic search string (\"*\", \"\") for an empty query, which the service treats literally",
	run: func(c *caseRun) {
		items := []memory.Item{c.fixture(1), c.fixture(2), c.fixture(3)}
		c.mustStore(items...)
		if err := c.h.MakeSearchIndexVisible(c.ctx); err != nil {
			c.harnessFailed("MakeSearchIndexVisible", err)
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
	},
}

var caseUnsupportedFilter = Case{
	ID:          CaseUnsupportedFilter,
	Title:       "Unsupported filter",
	Description: "filter keys outside supported_filters raise UnsupportedMemoryQuery naming every rejected key, sorted and unique, before transport",
	Hint:        "unsupported keys are ignored, stripped or validated only after the service call, or only the first key is reported",
	run: func(c *caseRun) {
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
				c.notef("transport silence not observable (missing harness capability %s: TransportObserver or BackendCallCounter)", CapBackendCalls)
			}
		}
		c.notef("unsupported keys are rejected together, sorted, before transport")
	},
}

// maxFilterKeysChecked bounds the supported-filter case on manifests with many keys.
const maxFilterKeysChecked = 8

var caseSupportedFilter = Case{
	ID:          CaseSupportedFilter,
	Title:       "Supported filter",
	Description: "every supported filter key narrows results to exactly the matching items, and reaches the transport mapped as documented",
	Hint:        "a supported key is not sent to the service, is mapped to the wrong native key, or the service cannot filter on a key the manifest lists",
	run: func(c *caseRun) {
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
			retries, err := retryUnavailable(c.ctx, c.opts.setUpDelay, func() error { return c.h.Reset(c.ctx) })
			if err != nil {
				c.harnessFailed("Reset", err)
			}
			c.noteSetUpRetries("Reset", retries)
			var s memory.ExternalStore
			retries, err = retryUnavailable(c.ctx, c.opts.setUpDelay, func() (err error) { s, err = c.h.MakeStore(c.ctx); return err })
			if err != nil || s == nil {
				c.fatalf("harness MakeStore failed: %v", err)
			}
			c.noteSetUpRetries("MakeStore", retries)
			closeStore(c.store)
			c.store = s
		}
		if !hasRec {
			c.notef("native key/value mapping not observable (harness lacks FilterRecorder)")
		}
		c.notef("supported keys %v narrow results exactly", keys)
	},
}

var caseTagProjection = Case{
	ID:          CaseTagProjection,
	Title:       "Tag projection",
	Description: "search-hit tags agree with search_returns_tags in both directions; retrieve returns tags exactly (order and duplicates)",
	Hint:        "search_returns_tags does not match what hits carry, or tags are de-duplicated or reordered",
	run: func(c *caseRun) {
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
	},
}

var caseMetadataProjection = Case{
	ID:          CaseMetadataProjection,
	Title:       "Metadata projection",
	Description: "store, retrieve and search agree with preserves_metadata and the field classification, with exact JSON values",
	Hint:        "metadata numbers pass through float64 (integers above 2^53 change) or metadata is dropped while preserves_metadata is true",
	run: func(c *caseRun) {
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
	},
}

var caseConsistency = Case{
	ID:          CaseConsistency,
	Title:       "Consistency",
	Description: "immediate: a write is searchable at once; eventual: it may miss until the index is made visible and must be found after; retrieve is never stale",
	Hint:        "the manifest says immediate while search runs on an asynchronously built index, or retrieve goes through the search index",
	run: func(c *caseRun) {
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
			c.harnessFailed("MakeSearchIndexVisible", err)
		}
		hits, ok, err := c.pollSearch(memory.Query{Limit: 100}, func(h []memory.Item) bool { return containsAll(h, want) })
		if c.check("consistency/eventual-found-after") && (err != nil || !ok) {
			c.failf("search_consistency is eventual but the item was still not found %s after MakeSearchIndexVisible (hits %s, error %v)", c.opts.VisibilityTimeout, hitIDs(hits), err)
		}
		c.notef("eventual: missed before index visibility: %v; found after", missed)
	},
}
