package redis

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func TestTrigramsAndDocRecords(t *testing.T) {
	if got := trigrams("abcab"); !slices.Equal(got, []string{"abc", "bca", "cab"}) {
		t.Errorf("trigrams(abcab) = %q", got)
	}
	if got := trigrams("ab"); got != nil {
		t.Errorf("trigrams(ab) = %q, want none", got)
	}
	// Byte trigrams cut runes: a needle's bytes still occur in any text holding it.
	if got := trigrams("ü!"); !slices.Equal(got, []string{"ü!"}) {
		t.Errorf("trigrams(ü!) = %q", got)
	}
	members := []string{"ix:t:a", "ix:f:b"}
	for _, text := range []string{"", "ab", `{"text":"item 1 lorem"}`, strings.Repeat("abcd", 500), "ünï\x00\"\\ code"} {
		te := textEntry{text: text, grams: trigrams(text)}
		gotMembers, gotGrams := decodeDoc(string(encodeDoc(members, te)))
		if !slices.Equal(gotMembers, members) || !slices.Equal(gotGrams, te.grams) {
			t.Errorf("doc of %q read back as %q, %q", text, gotMembers, gotGrams)
		}
	}
	// The long repetitive text is stored as its four trigrams, not as 2,000 bytes.
	if doc := encodeDoc(nil, textEntry{text: strings.Repeat("abcd", 500), grams: trigrams(strings.Repeat("abcd", 500))}); len(doc) > 100 {
		t.Errorf("doc of a repetitive text is %d bytes: %s", len(doc), doc)
	}
	// Layout 1's doc, a JSON array of members, set no trigram bits.
	if gotMembers, gotGrams := decodeDoc(`["ix:t:a"]`); !slices.Equal(gotMembers, []string{"ix:t:a"}) || gotGrams != nil {
		t.Errorf("layout-1 doc read as %q, %q", gotMembers, gotGrams)
	}
}

// openStore opens a store on a fresh harness's scope.
func openStore(t *testing.T) (*Harness, *Store) {
	t.Helper()
	h := newHarness(t)
	s, err := h.OpenStore(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return h, s
}

// textCorpus is a mix of texts for the reference comparisons: the scale benchmark's items
// (every one holds every trigram of "lorem item" but " it", and of "dolorem"), JSON
// content, non-ASCII text whose case folds, and texts shorter than a trigram.
func textCorpus() []memory.Item {
	var items []memory.Item
	for i := range 300 {
		items = append(items, storetest.BenchItem(i))
	}
	for _, c := range []string{`"Ünïcode CASE"`, `"ab"`, `"x"`, `""`, `"dolor sit amet"`, `"100% sure"`, `{"k":"Item 7 LOREM"}`, `["lorem", "item"]`, `"a\"quote\"d"`, `"tab\there"`, `"line\nbreak Lorem"`} {
		items = append(items, memory.NewItem(json.RawMessage(c), "extra"))
	}
	return items
}

// textNeedles are the needles compared with memory.Matches: absent ones (with and without
// an absent trigram), one whose trigrams are all on every benchmark item though it is on
// none (the positional-free index's worst case), rare, common, mixed case, non-ASCII,
// JSON punctuation, and needles under three bytes (which walk).
var textNeedles = []string{
	"zebra", "lorem item", "dolorem", "ipsum dolorem", "item 42 lorem", "item 4 ", "W7 ", "LOREM",
	"w1", "ünïcode", "ÜNÏ", `"text":"item 29`, `quote"d`, "\t", "e\nbreak l", "\nbr", "%", "em", "x", "sit amet", "item 299 lorem ipsum w49 dolor",
}

// checkTextReference compares every needle at several limits, through Search and through
// the text index alone (scanText, which must not fall back), with memory.Matches over want
// in insertion order.
func checkTextReference(t *testing.T, s *Store, want []memory.Item) {
	t.Helper()
	ctx := testCtx(t)
	for _, needle := range textNeedles {
		for _, limit := range []int{1, 3, 1000} {
			q := memory.Query{Text: storetest.Text(needle), Limit: limit}
			lower := memory.Needle(needle)
			var ref []uuid.UUID
			for _, it := range want {
				if len(ref) < limit && memory.Matches(it, q, lower) {
					ref = append(ref, it.ID)
				}
			}
			hits, err := s.Search(ctx, q)
			if err != nil || !slices.Equal(ids(hits), ref) {
				t.Errorf("Search %q limit %d: %v, %v; memory.Matches: %v", needle, limit, ids(hits), err, ref)
			}
			if len(lower) < minIndexedNeedle {
				continue
			}
			hits, err = s.scanText(ctx, q, lower)
			if err != nil || !slices.Equal(ids(hits), ref) {
				t.Errorf("text index %q limit %d: %v, %v; memory.Matches: %v", needle, limit, ids(hits), err, ref)
			}
		}
	}
}

// checkGramCounts compares the trigram counts (ix:gc) with the number of items in want
// holding each trigram: a count that fell to zero wrongly would answer "no hit" for a needle
// some item holds.
func checkGramCounts(t *testing.T, h *Harness, want []memory.Item) {
	t.Helper()
	ref := map[string]string{}
	for _, it := range want {
		for _, g := range textEntryOf(it).grams {
			k := hex.EncodeToString([]byte(g))
			n, _ := strconv.Atoi(ref[k])
			ref[k] = strconv.Itoa(n + 1)
		}
	}
	got, err := h.admin.HGetAll(testCtx(t), h.k.gramCounts()).Result()
	if err != nil {
		t.Fatal(err)
	}
	maps.DeleteFunc(got, func(_, v string) bool { return v == "0" })
	if !maps.Equal(got, ref) {
		t.Errorf("trigram counts: %d trigrams counted, want %d; first differences: %v", len(got), len(ref), firstDiffs(got, ref))
	}
}

func firstDiffs(got, want map[string]string) []string {
	var out []string
	for k, v := range want {
		if got[k] != v && len(out) < 5 {
			out = append(out, fmt.Sprintf("%s: %q, want %q", k, got[k], v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && len(out) < 10 {
			out = append(out, fmt.Sprintf("%s: %q, want none", k, v))
		}
	}
	return out
}

// deleteItem removes an item's record as another writer (a purge, an operator) would and
// queues its stream entry, so the indexer removes it from the index.
func deleteItem(t *testing.T, h *Harness, id uuid.UUID) {
	t.Helper()
	ctx := testCtx(t)
	if err := h.admin.Del(ctx, h.k.item(id)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.admin.XAdd(ctx, &goredis.XAddArgs{Stream: h.k.stream(), Values: []string{"id", id.String()}}).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestTextIndexMatchesReference stores, overwrites and deletes items and checks that text
// search, through the index, answers exactly what memory.Matches does, in order.
func TestTextIndexMatchesReference(t *testing.T) {
	h, s := openStore(t)
	items := textCorpus()
	for _, it := range items {
		mustStore(t, s, it)
	}
	storetest.Visible(t, h)
	checkTextReference(t, s, items)
	checkGramCounts(t, h, items)
	// Overwrite every seventh item with another text (same position) and delete every
	// eleventh: the old texts must stop matching, the new ones match in the old places.
	var kept []memory.Item
	for i, it := range items {
		switch {
		case i%11 == 5:
			deleteItem(t, h, it.ID)
			continue
		case i%7 == 3:
			it.Content = json.RawMessage(fmt.Sprintf(`"Zebra %d dolorem"`, i))
			mustStore(t, s, it)
		}
		kept = append(kept, it)
	}
	storetest.Visible(t, h)
	checkTextReference(t, s, kept)
	checkGramCounts(t, h, kept)
}

// gramBit reads the bit of trigram g at position pos.
func gramBit(t *testing.T, h *Harness, g string, pos int64) int64 {
	t.Helper()
	rel, off := gramRel(g, pos)
	v, err := h.admin.GetBit(testCtx(t), h.k.abs(rel), off).Result()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTextIndexOverwriteAndDeleteClearBits checks the bitmaps themselves: an overwrite
// clears the bits of trigrams only the old text had and keeps the shared ones, and a
// deleted item's bits are all cleared.
func TestTextIndexOverwriteAndDeleteClearBits(t *testing.T) {
	h, s := openStore(t)
	ctx := testCtx(t)
	it := memory.NewItem(json.RawMessage(`"Alpha Zulu"`))
	mustStore(t, s, it)
	storetest.Visible(t, h)
	pos, err := h.admin.ZScore(ctx, h.k.all(), it.ID.String()).Result()
	if err != nil {
		t.Fatal(err)
	}
	p := int64(pos)
	for _, g := range trigrams("alpha zulu") {
		if gramBit(t, h, g, p) != 1 {
			t.Errorf("trigram %q: bit not set after the store", g)
		}
	}
	it.Content = json.RawMessage(`"Alpha Yankee"`)
	mustStore(t, s, it)
	storetest.Visible(t, h)
	for g, want := range map[string]int64{"zul": 0, "a z": 0, "ulu": 0, "yan": 1, "kee": 1, "alp": 1, "ha ": 1} {
		if got := gramBit(t, h, g, p); got != want {
			t.Errorf("after the overwrite, trigram %q: bit %d, want %d", g, got, want)
		}
	}
	for needle, want := range map[string]int{"zulu": 0, "yankee": 1, "alpha": 1} {
		if hits, err := s.Search(ctx, memory.Query{Text: &needle, Limit: 5}); err != nil || len(hits) != want {
			t.Errorf("after the overwrite, %q: %v, %v; want %d hits", needle, ids(hits), err, want)
		}
	}
	deleteItem(t, h, it.ID)
	storetest.Visible(t, h)
	for _, g := range trigrams("alpha yankee") {
		if gramBit(t, h, g, p) != 0 {
			t.Errorf("after the delete, trigram %q: bit still set", g)
		}
	}
	if n, err := h.admin.Exists(ctx, h.k.doc(it.ID)).Result(); err != nil || n != 0 {
		t.Errorf("after the delete, the index record exists (%d, %v)", n, err)
	}
	if hits, err := s.Search(ctx, memory.Query{Text: storetest.Text("alpha"), Limit: 5}); err != nil || len(hits) != 0 {
		t.Errorf("after the delete, alpha: %v, %v", ids(hits), err)
	}
}

// writeLayout1 writes items into h's scope as a layout-1 adapter left them: config layout
// 1, layout 1's consumer group, each item's record, tag sets, ix:all and an ix:doc array of
// members, and no trigram bits; the last item is stored but not yet indexed (its stream
// entry unread).
func writeLayout1(t *testing.T, h *Harness, items []memory.Item) {
	t.Helper()
	ctx := testCtx(t)
	cfg, err := Options{Addr: redisAddr, Scope: h.Scope()}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	filters, _ := json.Marshal(cfg.filters)
	s := &Store{k: h.k, cfg: cfg}
	pipe := h.admin.Pipeline()
	pipe.HSet(ctx, h.k.config(), "layout", legacyLayoutVersion, "filters", string(filters))
	pipe.XGroupCreateMkStream(ctx, h.k.stream(), legacyGroupName, "$")
	for i, it := range items {
		data, err := memory.MarshalItem(it)
		if err != nil {
			t.Fatal(err)
		}
		pipe.HSet(ctx, h.k.item(it.ID), "kind", itemKind, "json", data)
		if i == len(items)-1 {
			pipe.XAdd(ctx, &goredis.XAddArgs{Stream: h.k.stream(), Values: []string{"id", it.ID.String()}})
			continue
		}
		z := goredis.Z{Score: float64(i + 1), Member: it.ID.String()}
		members := s.membersOf(it)
		for _, rel := range members {
			pipe.ZAdd(ctx, h.k.abs(rel), z)
		}
		pipe.ZAdd(ctx, h.k.all(), z)
		b, _ := json.Marshal(members)
		pipe.Set(ctx, h.k.doc(it.ID), b, 0)
	}
	pipe.Set(ctx, h.k.seq(), len(items)-1, 0)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// groupNames lists the consumer groups of h's stream.
func groupNames(t *testing.T, h *Harness) []string {
	t.Helper()
	gs, err := h.admin.XInfoGroups(testCtx(t), h.k.stream()).Result()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range gs {
		names = append(names, g.Name)
	}
	slices.Sort(names)
	return names
}

// TestTextIndexBackfillsLayout1Scope opens a scope written by a layout-1 adapter: Open
// migrates it (layout 2, layout 1's group destroyed), text searches stay exact by walking
// until the backfill has set every item's bits, then the index answers them; a layout-1
// group that comes back (an old instance still running) makes the index unusable at once
// and is destroyed and backfilled over again.
func TestTextIndexBackfillsLayout1Scope(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	var items []memory.Item
	for i := range 2500 { // several SCAN batches and index batches
		items = append(items, storetest.BenchItem(i))
	}
	writeLayout1(t, h, items)
	s, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if layout, err := h.admin.HGet(ctx, h.k.config(), "layout").Result(); err != nil || layout != layoutVersion {
		t.Fatalf("layout after Open: %q, %v", layout, err)
	}
	if got := groupNames(t, h); !slices.Equal(got, []string{groupName}) {
		t.Fatalf("groups after Open: %q, want only %q", got, groupName)
	}
	storetest.Visible(t, h)
	eventually(t, 30*time.Second, "the backfill to complete the text index", func() bool {
		v, err := h.admin.HGet(ctx, h.k.config(), configText).Result()
		return err == nil && v == "1"
	})
	checkTextReference(t, s, items)
	checkGramCounts(t, h, items)
	raw, err := h.admin.Get(ctx, h.k.doc(items[0].ID)).Result()
	if err != nil || !strings.HasPrefix(raw, `{"v":2`) {
		t.Errorf("a layout-1 index record after the backfill: %q, %v", raw, err)
	}

	// Declared incomplete, the index is not used, and text search walks: still exact.
	if err := h.admin.HSet(ctx, h.k.config(), configText, "0").Err(); err != nil {
		t.Fatal(err)
	}
	q := memory.Query{Text: storetest.Text("item 2042 lorem"), Limit: 5}
	if _, err := s.scanText(ctx, q, memory.Needle(*q.Text)); !errors.Is(err, errTextIndexUnusable) {
		t.Fatalf("scanText on an incomplete index: %v, want errTextIndexUnusable", err)
	}
	if hits, err := s.Search(ctx, q); err != nil || !slices.Equal(ids(hits), []uuid.UUID{items[2042].ID}) {
		t.Fatalf("Search on an incomplete index: %v, %v", ids(hits), err)
	}
	if err := h.admin.HSet(ctx, h.k.config(), configText, "1").Err(); err != nil {
		t.Fatal(err)
	}

	// A layout-1 instance's probe recreates its group: unusable at once, then destroyed,
	// declared incomplete and backfilled by the indexer.
	if err := h.admin.XGroupCreate(ctx, h.k.stream(), legacyGroupName, "$").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.scanText(ctx, q, memory.Needle(*q.Text)); !errors.Is(err, errTextIndexUnusable) {
		t.Fatalf("scanText beside a layout-1 group: %v, want errTextIndexUnusable", err)
	}
	gen, err := h.admin.HGet(ctx, h.k.config(), configTextGen).Int()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ix.trim(); err != nil {
		t.Fatal(err)
	}
	if got := groupNames(t, h); !slices.Equal(got, []string{groupName}) {
		t.Fatalf("groups after trim: %q, want only %q", got, groupName)
	}
	if g2, err := h.admin.HGet(ctx, h.k.config(), configTextGen).Int(); err != nil || g2 != gen+1 {
		t.Fatalf("textgen after trim: %d, %v; want %d", g2, err, gen+1)
	}
	if err := s.ix.maybeBackfill(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the second backfill", func() bool {
		v, err := h.admin.HGet(ctx, h.k.config(), configText).Result()
		return err == nil && v == "1"
	})
	if hits, err := s.scanText(ctx, q, memory.Needle(*q.Text)); err != nil || !slices.Equal(ids(hits), []uuid.UUID{items[2042].ID}) {
		t.Fatalf("scanText after the second backfill: %v, %v", ids(hits), err)
	}
}

// TestNewScopeTextIndexIsComplete: a scope created by this layout needs no backfill, and
// one whose config vanished under live data gets one.
func TestNewScopeTextIndexIsComplete(t *testing.T) {
	h, s := openStore(t)
	ctx := testCtx(t)
	if v, err := h.admin.HGet(ctx, h.k.config(), configText).Result(); err != nil || v != "1" {
		t.Fatalf("a new scope's text index: %q, %v", v, err)
	}
	mustStore(t, s, memory.NewItem(json.RawMessage(`"kept"`)))
	storetest.Visible(t, h)
	if err := h.admin.Del(ctx, h.k.config()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.ensureScope(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := h.admin.HGet(ctx, h.k.config(), configText).Result(); err != nil || v != "0" {
		t.Fatalf("a config recreated under indexed items: text %q, %v; want 0", v, err)
	}
}
