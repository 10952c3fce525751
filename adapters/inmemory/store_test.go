package inmemory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func item(content string, tags ...string) memory.Item {
	return memory.NewItem(json.RawMessage(content), tags...)
}

func str(s string) *string { return &s }

func ids(items []memory.Item) []uuid.UUID {
	out := make([]uuid.UUID, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// storeAll stores items in order and fails the test on any error.
func storeAll(g Gomega, s *inmemory.Store, items ...memory.Item) {
	for _, it := range items {
		_, err := s.Store(context.Background(), it)
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// lionagi's cross-backend fence (tests/protocols/test_memory.py), in Go.

func TestFenceStoreReturnsTheItemsOwnID(t *testing.T) {
	g := NewWithT(t)
	s := inmemory.New(inmemory.Options{})
	it := item(`"hello"`, "a")
	id, err := s.Store(context.Background(), it)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(id).To(Equal(it.ID))
}

func TestFenceStoreThenRetrieveKeepsIDContentTags(t *testing.T) {
	g := NewWithT(t)
	s := inmemory.New(inmemory.Options{})
	it := item(`{"text":"remember this","n":9007199254740993,"nested":{"b":[1,2],"a":null}}`, "b", "a", "b")
	it.Metadata["source"] = json.RawMessage(`"cli"`)
	_, err := s.Store(context.Background(), it)
	g.Expect(err).NotTo(HaveOccurred())

	got, err := s.Retrieve(context.Background(), it.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).NotTo(BeNil())
	g.Expect(got.ID).To(Equal(it.ID))
	g.Expect(memory.JSONEqual(got.Content, it.Content)).To(BeTrue())
	g.Expect(got.Tags).To(Equal([]string{"b", "a", "b"}))
	// The reference store claims full fidelity, so every field survives.
	g.Expect(got.Diff(it)).To(BeEmpty())
}

func TestFenceRetrieveUnknownIDIsNil(t *testing.T) {
	g := NewWithT(t)
	s := inmemory.New(inmemory.Options{})
	storeAll(g, s, item(`1`))
	got, err := s.Retrieve(context.Background(), uuid.New())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeNil())
}

// lionagi's InMemoryStore-specific behavior.

func TestSearchText(t *testing.T) {
	s := inmemory.New(inmemory.Options{})
	hello := item(`"Hello World"`)
	object := item(`{"note":"Needle in a haystack"}`)
	percent := item(`"100% sure_thing"`)
	number := item(`12345`)
	storeAll(NewWithT(t), s, hello, object, percent, number)

	tests := []struct {
		text string
		want []uuid.UUID
	}{
		{"world", []uuid.UUID{hello.ID}},                         // case-insensitive
		{"HELLO W", []uuid.UUID{hello.ID}},                       // substring, not word match
		{"needle", []uuid.UUID{object.ID}},                       // non-string content is searched as JSON text
		{`"note"`, []uuid.UUID{object.ID}},                       // including its keys
		{"%", []uuid.UUID{percent.ID}},                           // SQL wildcards are literal
		{"0% s", []uuid.UUID{percent.ID}},                        //
		{"_", []uuid.UUID{percent.ID}},                           //
		{"h.llo", nil},                                           // regex metacharacters are literal
		{"hel*", nil},                                            // glob metacharacters are literal
		{"234", []uuid.UUID{number.ID}},                          // numbers by their JSON text
		{"", ids([]memory.Item{hello, object, percent, number})}, // empty text matches everything, as in lionagi
		{"absent", nil},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			g := NewWithT(t)
			got, err := s.Search(context.Background(), memory.Query{Text: str(tt.text), Limit: 20})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).NotTo(BeNil(), "no match is an empty list, not nil")
			if tt.want == nil {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(ids(got)).To(Equal(tt.want))
		})
	}
}

func TestSearchTagsMatchAny(t *testing.T) {
	s := inmemory.New(inmemory.Options{})
	a := item(`1`, "a")
	b := item(`2`, "b", "x")
	c := item(`3`, "c")
	none := item(`4`)
	storeAll(NewWithT(t), s, a, b, c, none)

	tests := []struct {
		name string
		tags []string
		want []uuid.UUID
	}{
		{"one tag", []string{"a"}, []uuid.UUID{a.ID}},
		{"any of two", []string{"b", "a"}, []uuid.UUID{a.ID, b.ID}}, // insertion order, not tag order
		{"second tag of an item", []string{"x"}, []uuid.UUID{b.ID}},
		{"no item has it", []string{"z"}, nil},
		{"tags are case-sensitive", []string{"A"}, nil},
		{"empty tag list is no predicate", []string{}, []uuid.UUID{a.ID, b.ID, c.ID, none.ID}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := s.Search(context.Background(), memory.Query{Tags: tt.tags, Limit: 20})
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == nil {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(ids(got)).To(Equal(tt.want))
			for _, it := range got {
				g.Expect(it.Tags).NotTo(BeNil(), "hits carry their tags")
			}
		})
	}
}

func TestSearchMetadataFilters(t *testing.T) {
	s := inmemory.New(inmemory.Options{SupportedFilters: []string{"branch_id", "source", "n"}})
	meta := func(it memory.Item, kv ...string) memory.Item {
		for i := 0; i < len(kv); i += 2 {
			it.Metadata[kv[i]] = json.RawMessage(kv[i+1])
		}
		return it
	}
	cliB1 := meta(item(`1`), "source", `"cli"`, "branch_id", `"b1"`, "n", `9007199254740993`)
	apiB1 := meta(item(`2`), "source", `"api"`, "branch_id", `"b1"`, "n", `{"a":1,"b":2}`)
	cliB2 := meta(item(`3`), "source", `"cli"`, "branch_id", `"b2"`)
	bare := item(`4`)
	storeAll(NewWithT(t), s, cliB1, apiB1, cliB2, bare)

	f := func(kv ...string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = json.RawMessage(kv[i+1])
		}
		return m
	}
	tests := []struct {
		name    string
		filters map[string]json.RawMessage
		want    []uuid.UUID
	}{
		{"one key", f("source", `"cli"`), []uuid.UUID{cliB1.ID, cliB2.ID}},
		{"every key must match", f("source", `"cli"`, "branch_id", `"b1"`), []uuid.UUID{cliB1.ID}},
		{"exact big integer", f("n", `9007199254740993`), []uuid.UUID{cliB1.ID}},
		{"big integer neighbor", f("n", `9007199254740992`), nil},
		{"object value by JSON equality", f("n", `{"b":2.0,"a":1}`), []uuid.UUID{apiB1.ID}},
		{"string is not a number", f("n", `"9007199254740993"`), nil},
		{"missing key does not match null", f("source", `null`), nil},
		{"no match", f("source", `"web"`), nil},
		{"empty filter map is no predicate", f(), []uuid.UUID{cliB1.ID, apiB1.ID, cliB2.ID, bare.ID}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := s.Search(context.Background(), memory.Query{Filters: tt.filters, Limit: 20})
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == nil {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(ids(got)).To(Equal(tt.want))
		})
	}
}

func TestSearchCombinesPredicates(t *testing.T) {
	g := NewWithT(t)
	s := inmemory.New(inmemory.Options{})
	match := item(`"alpha report"`, "t")
	match.Metadata["source"] = json.RawMessage(`"cli"`)
	wrongTag := item(`"alpha report"`, "u")
	wrongTag.Metadata["source"] = json.RawMessage(`"cli"`)
	wrongText := item(`"beta report"`, "t")
	wrongText.Metadata["source"] = json.RawMessage(`"cli"`)
	storeAll(g, s, wrongTag, match, wrongText)
	got, err := s.Search(context.Background(), memory.Query{
		Text: str("ALPHA"), Tags: []string{"t"},
		Filters: map[string]json.RawMessage{"source": json.RawMessage(`"cli"`)}, Limit: 20,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(got)).To(Equal([]uuid.UUID{match.ID}))
}

func TestSearchRejectsUnsupportedQueries(t *testing.T) {
	s := inmemory.New(inmemory.Options{})
	storeAll(NewWithT(t), s, item(`1`))
	tests := []struct {
		name string
		q    memory.Query
		keys []string
	}{
		{"negative limit", memory.Query{Limit: -1}, []string{"limit"}},
		{"unsupported filter keys, sorted", memory.Query{
			Filters: map[string]json.RawMessage{"zeta": json.RawMessage(`1`), "alpha": json.RawMessage(`1`), "source": json.RawMessage(`1`)},
			Limit:   5,
		}, []string{"alpha", "zeta"}},
		{"all at once", memory.Query{Filters: map[string]json.RawMessage{"x": json.RawMessage(`1`)}, Limit: -3}, []string{"limit", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := s.Search(context.Background(), tt.q)
			g.Expect(got).To(BeNil(), "an unsupported query returns no results, not a partial page")
			g.Expect(errors.Is(err, memory.ErrUnsupportedQuery)).To(BeTrue())
			g.Expect(errors.Is(err, memory.ErrAdapter)).To(BeTrue())
			g.Expect(errors.Is(err, memory.ErrUnavailable)).To(BeFalse())
			var uq *memory.UnsupportedMemoryQuery
			g.Expect(errors.As(err, &uq)).To(BeTrue())
			g.Expect(uq.RejectedKeys).To(Equal(tt.keys))
		})
	}
}

func TestSearchLimitAndEmptyQuery(t *testing.T) {
	s := inmemory.New(inmemory.Options{})
	var all []memory.Item
	for i := range 25 {
		all = append(all, item(fmt.Sprintf(`%d`, i)))
	}
	storeAll(NewWithT(t), s, all...)

	tests := []struct {
		name  string
		limit int
		want  int
	}{
		{"default limit returns the first page", memory.DefaultLimit, 20},
		{"limit below the count", 3, 3},
		{"limit above the count", 100, 25},
		{"limit zero returns an empty list", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := s.Search(context.Background(), memory.Query{Limit: tt.limit})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).NotTo(BeNil())
			g.Expect(ids(got)).To(Equal(ids(all[:tt.want])), "insertion order, cut to the limit")
		})
	}
}

func TestStoreIsImmediatelyVisible(t *testing.T) {
	g := NewWithT(t)
	s := inmemory.New(inmemory.Options{})
	for i := range 50 {
		it := item(fmt.Sprintf(`"note %d"`, i), fmt.Sprintf("t%d", i))
		storeAll(g, s, it)
		got, err := s.Search(context.Background(), memory.Query{Tags: []string{fmt.Sprintf("t%d", i)}, Limit: 1})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ids(got)).To(Equal([]uuid.UUID{it.ID}), "a successful store is searchable at once")
	}
}

func TestStoreSameIDReplacesInPlace(t *testing.T) {
	g := NewWithT(t)
	s := inmemory.New(inmemory.Options{})
	first, second := item(`"one"`), item(`"two"`)
	storeAll(g, s, first, second)
	replaced := first.Clone()
	replaced.Content = json.RawMessage(`"uno"`)
	replaced.Tags = []string{"new"}
	storeAll(g, s, replaced)

	got, err := s.Search(context.Background(), memory.Query{Limit: 20})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(got)).To(Equal([]uuid.UUID{first.ID, second.ID}), "no duplicate, original position kept")
	g.Expect(got[0].Diff(replaced)).To(BeEmpty(), "the last write wins")
}

func TestStoreIsolatesState(t *testing.T) {
	g := NewWithT(t)
	s := inmemory.New(inmemory.Options{})
	it := item(`{"a":1}`, "x")
	it.Metadata["source"] = json.RawMessage(`"cli"`)
	want := it.Clone()
	storeAll(g, s, it)

	// Mutating the caller's item after Store must not reach the store.
	it.Tags[0] = "mutated"
	it.Content[5] = '9'
	it.Metadata["source"][1] = 'X'

	got, err := s.Retrieve(context.Background(), want.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Diff(want)).To(BeEmpty())

	// Nor may mutating what Retrieve or Search returned.
	got.Tags[0] = "mutated"
	got.Metadata["new"] = json.RawMessage(`1`)
	hits, err := s.Search(context.Background(), memory.Query{Limit: 1})
	g.Expect(err).NotTo(HaveOccurred())
	hits[0].Content[0] = '['
	again, err := s.Retrieve(context.Background(), want.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Diff(want)).To(BeEmpty())
}

func TestStoreDefaultsAndRejections(t *testing.T) {
	g := NewWithT(t)
	s := inmemory.New(inmemory.Options{})
	bare := memory.Item{ID: uuid.New()}
	storeAll(g, s, bare)
	got, err := s.Retrieve(context.Background(), bare.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got.Content)).To(Equal("null"))
	g.Expect(got.Tags).To(Equal([]string{}))
	g.Expect(got.Metadata).To(Equal(map[string]json.RawMessage{}))

	tests := []struct {
		name string
		it   memory.Item
	}{
		{"nil UUID", memory.Item{Content: json.RawMessage(`1`)}},
		{"invalid content", memory.Item{ID: uuid.New(), Content: json.RawMessage(`{`)}},
		{"invalid metadata", memory.Item{ID: uuid.New(), Metadata: map[string]json.RawMessage{"k": json.RawMessage(`nope`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			id, err := s.Store(context.Background(), tt.it)
			g.Expect(id).To(Equal(uuid.Nil), "a rejected write returns no identifier")
			g.Expect(errors.Is(err, memory.ErrAdapter)).To(BeTrue())
			g.Expect(errors.Is(err, memory.ErrUnavailable)).To(BeFalse())
			var ae *memory.MemoryAdapterError
			g.Expect(errors.As(err, &ae)).To(BeTrue())
			if tt.it.ID != uuid.Nil {
				got, err := s.Retrieve(context.Background(), tt.it.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(BeNil(), "nothing was stored")
			}
		})
	}
}

func TestCanceledContextIsUnavailable(t *testing.T) {
	g := NewWithT(t)
	s := inmemory.New(inmemory.Options{})
	it := item(`1`)
	storeAll(g, s, it)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	id, err := s.Store(ctx, item(`2`))
	g.Expect(id).To(Equal(uuid.Nil))
	g.Expect(errors.Is(err, memory.ErrUnavailable)).To(BeTrue())
	g.Expect(errors.Is(err, context.Canceled)).To(BeTrue(), "the cause stays reachable")

	got, err := s.Retrieve(ctx, it.ID)
	g.Expect(got).To(BeNil())
	var un *memory.MemoryAdapterUnavailable
	g.Expect(errors.As(err, &un)).To(BeTrue())

	hits, err := s.Search(ctx, memory.Query{Limit: 5})
	g.Expect(hits).To(BeNil(), "an outage is an error, never an empty result")
	g.Expect(errors.Is(err, memory.ErrUnavailable)).To(BeTrue())
}

func TestManifest(t *testing.T) {
	g := NewWithT(t)
	s := inmemory.New(inmemory.Options{})
	m := s.Manifest()
	g.Expect(m.Validate()).To(Succeed())
	g.Expect(m.Adapter).To(Equal("inmemory"))
	g.Expect(m.SearchConsistency).To(Equal(memory.ConsistencyImmediate))
	g.Expect(m.RetrieveFidelity).To(Equal(memory.FidelityFull))
	g.Expect(m.SearchFidelity).To(Equal(memory.FidelityFull))
	g.Expect(m.SearchReturnsTags).To(BeTrue())
	g.Expect(m.PreservesMetadata).To(BeTrue())
	g.Expect(m.DroppedItemFields).To(BeEmpty())
	g.Expect(m.SupportedFilters).To(Equal([]string{"branch_id", "source"}))
	g.Expect(s.Manifest().Hash()).To(Equal(m.Hash()), "the manifest is stable for the instance's lifetime")

	custom := inmemory.New(inmemory.Options{SupportedFilters: []string{"z", "a", "z"}}).Manifest()
	g.Expect(custom.SupportedFilters).To(Equal([]string{"a", "z"}))
	none := inmemory.New(inmemory.Options{SupportedFilters: []string{}}).Manifest()
	g.Expect(none.SupportedFilters).To(BeEmpty(), "an explicit empty set means no filters, not the defaults")
}

func TestConcurrentStoreSearchRetrieve(t *testing.T) {
	// Run with -race (make test does): writers, searchers and readers share one store.
	g := NewWithT(t)
	s := inmemory.New(inmemory.Options{})
	const writers, perWriter, readers = 8, 100, 8
	ctx := context.Background()

	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter+readers*perWriter)
	stored := make([][]uuid.UUID, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				it := item(fmt.Sprintf(`"w%d-%d"`, w, i), fmt.Sprintf("w%d", w))
				it.Metadata["source"] = json.RawMessage(fmt.Sprintf(`"w%d"`, w))
				if _, err := s.Store(ctx, it); err != nil {
					errs <- err
					return
				}
				stored[w] = append(stored[w], it.ID)
			}
		})
	}
	for r := range readers {
		wg.Go(func() {
			for i := range perWriter {
				q := memory.Query{Text: str(fmt.Sprintf("w%d-", r)), Tags: []string{fmt.Sprintf("w%d", r)}, Limit: 1000}
				hits, err := s.Search(ctx, q)
				if err != nil {
					errs <- err
					return
				}
				for _, h := range hits {
					// Mutate the copy: it must never be shared with the store.
					h.Tags = append(h.Tags, "x")
					got, err := s.Retrieve(ctx, h.ID)
					if err != nil {
						errs <- fmt.Errorf("retrieve %s after search (iteration %d): %w", h.ID, i, err)
						return
					}
					if got == nil {
						errs <- fmt.Errorf("retrieve %s after search (iteration %d): not found", h.ID, i)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}

	all, err := s.Search(ctx, memory.Query{Limit: writers * perWriter})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all).To(HaveLen(writers * perWriter))
	for w := range writers {
		hits, err := s.Search(ctx, memory.Query{Filters: map[string]json.RawMessage{"source": json.RawMessage(fmt.Sprintf(`"w%d"`, w))}, Limit: 1000})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ids(hits)).To(Equal(stored[w]), "each writer's items keep its order")
		for _, h := range hits {
			g.Expect(h.Tags).To(Equal([]string{fmt.Sprintf("w%d", w)}))
		}
	}
}

// TestReferenceAppliesTheContractLimits: the reference refuses what every other backend
// refuses, through the same functions, so an adapter author comparing against it is not
// misled into accepting items the others reject.
func TestReferenceAppliesTheContractLimits(t *testing.T) {
	ctx := context.Background()
	s := inmemory.New(inmemory.Options{})
	many := func(n, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%0*d", size, i)
		}
		return out
	}
	keys := map[string]json.RawMessage{}
	for i := range memory.MaxMetadataKeys + 1 {
		keys[fmt.Sprint("k", i)] = json.RawMessage(`1`)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", memory.MaxItemBytes) + `"`)
	for name, it := range map[string]memory.Item{
		"too many tags":          {Tags: many(memory.MaxTagsPerItem+1, 1)},
		"a tag too long":         {Tags: many(1, memory.MaxTagBytes+1)},
		"too many metadata keys": {Metadata: keys},
		"an item too large":      {Content: big},
	} {
		it.ID = uuid.New()
		if _, err := s.Store(ctx, it); !errors.Is(err, memory.ErrAdapter) {
			t.Errorf("%s: stored (%v), want a MemoryAdapterError", name, err)
		}
	}
	text := strings.Repeat("q", memory.MaxQueryTextBytes+1)
	for name, q := range map[string]memory.Query{
		"too many query tags": {Tags: many(memory.MaxQueryTags+1, 1), Limit: 1},
		"query text too long": {Text: &text, Limit: 1},
	} {
		if _, err := s.Search(ctx, q); !errors.Is(err, memory.ErrAdapter) {
			t.Errorf("%s: searched (%v), want a MemoryAdapterError", name, err)
		}
	}
	ok := memory.Item{ID: uuid.New(), Content: json.RawMessage(`"fits"`), Tags: many(memory.MaxTagsPerItem, 1)}
	if _, err := s.Store(ctx, ok); err != nil {
		t.Errorf("an item at the limits was refused: %v", err)
	}
}

// TestSubScopes: views of other scopes hold their own items (storetest.SubScopes).
func TestSubScopes(t *testing.T) {
	storetest.SubScopes(t, inmemory.New(inmemory.Options{}), "agents")
}
