package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// TestConformanceLive runs the shared 17-case matrix against the real server. The harness
// offers every optional capability (storetest.FullConformance demands it at compile time),
// so no case may be NotApplicable or unobserved.
func TestConformanceLive(t *testing.T) {
	storetest.FullConformance(t, newHarness(t), conformance.Options{AdapterVersion: "test", CaseTimeout: 2 * time.Minute})
}

// The shared helpers under their historical local names.
var (
	text      = storetest.Text
	mustStore = storetest.MustStore
	ids       = storetest.IDs
)

// factory gives the shared behaviour tests a fresh harness on an empty scope per call; its
// MakeSearchIndexVisible is how they wait for the eventual index.
func factory(t *testing.T) storetest.Harness { return newHarness(t) }

// TestExactnessFixtures stores contract.md §3's shared fixtures plus U+0000 and checks that
// retrieve and (after the index caught up) search return them exactly. The declared
// behaviour for U+0000 is: preserved exactly (Redis strings are binary-safe and the item's
// JSON is stored verbatim), so it is a full-fidelity fixture, not a lossy one. Filters on
// the "n" key and on U+0000 values and tags are checked here as well.
func TestExactnessFixtures(t *testing.T) {
	h := newHarness(t, "branch_id", "source", "n")
	const nul = "U+0000"
	fixtures := storetest.Exactness(t, func(*testing.T) storetest.Harness { return h }, storetest.Fixture{Name: nul, Item: memory.Item{
		Content:  json.RawMessage(`"nul\u0000inside"`),
		Metadata: map[string]json.RawMessage{"branch_id": json.RawMessage(`"a\u0000b"`)},
		Tags:     []string{"t\x00g"},
	}})
	ctx := testCtx(t)
	s, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Filters compare by JSON value: 9007199254740993 must not match ...992 (float64 would).
	big := fixtures[storetest.FixtureBigInteger]
	for _, tc := range []struct {
		key, val string
		want     memory.Item
		match    bool
	}{
		{"n", `9007199254740993`, big, true},
		{"n", `9007199254740992`, big, false},
		{"n", `9007199254740993.0`, big, true},
		{"branch_id", `"a\u0000b"`, fixtures[nul], true},
		{"branch_id", `"a"`, fixtures[nul], false},
	} {
		got, err := s.Search(ctx, memory.Query{Filters: map[string]json.RawMessage{tc.key: json.RawMessage(tc.val)}, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if tc.match && !slices.Equal(ids(got), []uuid.UUID{tc.want.ID}) || !tc.match && len(got) != 0 {
			t.Errorf("filter %s=%s: got %v, match=%v", tc.key, tc.val, ids(got), tc.match)
		}
	}
	got, err := s.Search(ctx, memory.Query{Tags: []string{"t\x00g"}, Limit: 10})
	if err != nil || !slices.Equal(ids(got), []uuid.UUID{fixtures[nul].ID}) {
		t.Errorf("tag with U+0000: %v, %v", ids(got), err)
	}
}

// TestTextIsLiteral checks that %, _, * and regex metacharacters are literal, and that text
// is case-insensitive as in lionagi's InMemoryStore.
func TestTextIsLiteral(t *testing.T) { storetest.LiteralText(t, factory) }

// TestSearchPredicatesAndOrder: predicates alone and together, insertion order, replacement,
// all through the eventual index.
func TestSearchPredicatesAndOrder(t *testing.T) { storetest.PredicatesAndOrder(t, factory) }

// TestSearchDifferential compares random searches, with rare and absent tags, filter values
// and text, against the reference semantics (memory.Matches) over random items, so the
// index probes in front of the search change no result.
func TestSearchDifferential(t *testing.T) {
	for _, seed := range []uint64{1, 20261204} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { storetest.Differential(t, factory, seed) })
	}
}

// TestSearchIsEventual proves that search is served by the asynchronous index: with the
// only indexer stopped, a stored item is retrievable but not searchable; once an indexer
// runs and the group caught up, it is found.
func TestSearchIsEventual(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	s, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.ix.stop()
	it := memory.NewItem(json.RawMessage(`"eventual"`), "e")
	mustStore(t, s, it)
	if got, err := s.Retrieve(ctx, it.ID); err != nil || got == nil {
		t.Fatalf("retrieve before indexing: %v, %v", got, err)
	}
	hits, err := s.Search(ctx, memory.Query{Tags: []string{"e"}, Limit: 5})
	if err != nil || len(hits) != 0 {
		t.Fatalf("search before indexing: %v, %v (want no hit: nothing indexes)", ids(hits), err)
	}
	st, err := s.IndexStatus(ctx)
	if err != nil || st.CaughtUp || st.Lag != 1 {
		t.Fatalf("index status before indexing: %+v, %v (want lag 1)", st, err)
	}
	if _, err := h.OpenStore(ctx); err != nil { // a second instance's indexer takes over
		t.Fatal(err)
	}
	if err := h.MakeSearchIndexVisible(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err = s.Search(ctx, memory.Query{Tags: []string{"e"}, Limit: 5})
	if err != nil || !slices.Equal(ids(hits), []uuid.UUID{it.ID}) {
		t.Fatalf("search after indexing: %v, %v", ids(hits), err)
	}
}

// TestCrashedConsumerEntriesAreClaimed simulates an instance that read entries and died
// before acknowledging them: a live instance must claim and index them.
func TestCrashedConsumerEntriesAreClaimed(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	writer, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	writer.ix.stop()
	it := memory.NewItem(json.RawMessage(`"orphaned"`), "orphan")
	mustStore(t, writer, it)
	// The "crashed" consumer takes the entry and never acknowledges it.
	res, err := h.admin.XReadGroup(ctx, &goredis.XReadGroupArgs{
		Group: groupName, Consumer: "crashed", Streams: []string{h.k.stream(), ">"}, Count: 10, Block: -1,
	}).Result()
	if err != nil || len(res) != 1 || len(res[0].Messages) != 1 {
		t.Fatalf("crashed consumer read: %v, %v", res, err)
	}
	live, err := Open(ctx, Options{Addr: redisAddr, Scope: h.Scope(), ClaimIdle: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := live.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err := live.Search(ctx, memory.Query{Tags: []string{"orphan"}, Limit: 5})
	if err != nil || !slices.Equal(ids(hits), []uuid.UUID{it.ID}) {
		t.Fatalf("claimed entry not indexed: %v, %v", ids(hits), err)
	}
	// Once it holds nothing and stays silent for ten claim periods, the dead consumer is
	// forgotten; the live one stays.
	eventually(t, 20*time.Second, "the dead consumer to be removed from the group", func() bool {
		cs, err := h.admin.XInfoConsumers(ctx, h.k.stream(), groupName).Result()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, c := range cs {
			names[c.Name] = true
		}
		return !names["crashed"] && names[live.cfg.consumer]
	})
}

// TestOverwriteReindexes checks duplicate-id behaviour: last writer wins, the position in
// insertion order is kept, and stale tag memberships are removed.
func TestOverwriteReindexes(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	s, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := memory.NewItem(json.RawMessage(`"one"`), "old")
	second := memory.NewItem(json.RawMessage(`"two"`), "x")
	mustStore(t, s, first)
	mustStore(t, s, second)
	if err := h.MakeSearchIndexVisible(ctx); err != nil {
		t.Fatal(err)
	}
	replaced := first
	replaced.Content = json.RawMessage(`"uno"`)
	replaced.Tags = []string{"new", "x"}
	mustStore(t, s, replaced)
	if err := h.MakeSearchIndexVisible(ctx); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Search(ctx, memory.Query{Tags: []string{"old"}, Limit: 5}); err != nil || len(hits) != 0 {
		t.Errorf("stale tag still matches: %v, %v", ids(hits), err)
	}
	hits, err := s.Search(ctx, memory.Query{Tags: []string{"x"}, Limit: 5})
	if err != nil || !slices.Equal(ids(hits), []uuid.UUID{first.ID, second.ID}) || !hits[0].Equal(replaced) {
		t.Errorf("overwrite: got %v, %v; want replaced item first", ids(hits), err)
	}
	n, err := h.admin.ZCard(ctx, h.k.abs(tagRel("old"))).Result()
	if err != nil || n != 0 {
		t.Errorf("stale tag set holds %d members (%v)", n, err)
	}
}

// TestWrongKindAndMalformedRecords: foreign records at an identity read as not found; a
// record with the adapter's marker but a broken payload is a MemoryAdapterError.
func TestWrongKindAndMalformedRecords(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	s, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	planted, err := h.MakeWrongKindRecord(ctx)
	if err != nil {
		t.Fatal(err)
	}
	str := uuid.New()
	list := uuid.New()
	bad := uuid.New()
	if err := h.admin.Set(ctx, h.k.item(str), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.admin.RPush(ctx, h.k.item(list), "x").Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.admin.HSet(ctx, h.k.item(bad), "kind", itemKind, "json", "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uuid.UUID{planted, str, list, uuid.New()} {
		got, err := s.Retrieve(ctx, id)
		if err != nil || got != nil {
			t.Errorf("retrieve %s: %v, %v; want nil, nil", id, got, err)
		}
	}
	got, err := s.Retrieve(ctx, bad)
	var ae *memory.MemoryAdapterError
	if got != nil || !errors.As(err, &ae) || errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("malformed record: %v, %v; want MemoryAdapterError", got, err)
	}
}

// TestRejectedWrite: the server's WRONGTYPE becomes a MemoryAdapterError with the native
// cause chained, no id, and the orphan stream entry is discarded by the indexer.
func TestRejectedWrite(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	s, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	it, err := h.MakeWriteRejected(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Store(ctx, it)
	var rerr goredis.Error
	if id != uuid.Nil || !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) || !errors.As(err, &rerr) {
		t.Fatalf("store over a foreign key: %v, %v; want MemoryAdapterError chaining the WRONGTYPE reply", id, err)
	}
	if err := h.MakeSearchIndexVisible(ctx); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Search(ctx, memory.Query{Limit: 10}); err != nil || len(hits) != 0 {
		t.Errorf("rejected write became searchable: %v, %v", ids(hits), err)
	}
}

// TestValidationBeforeTransport: bad input is refused with the cut proxy, proving that no
// I/O was needed to refuse it.
func TestValidationBeforeTransport(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	s, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.MakeTransportUnavailable(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = s.Search(ctx, memory.Query{Filters: map[string]json.RawMessage{"zeta": json.RawMessage(`1`), "alpha": json.RawMessage(`1`), "branch_id": json.RawMessage(`1`)}, Limit: -1})
	var uq *memory.UnsupportedMemoryQuery
	if !errors.As(err, &uq) || !slices.Equal(uq.RejectedKeys, []string{"alpha", "limit", "zeta"}) {
		t.Errorf("unsupported query: %v", err)
	}
	if hits, err := s.Search(ctx, memory.Query{Limit: 0}); err != nil || hits == nil || len(hits) != 0 {
		t.Errorf("limit 0: %v, %v; want [] without transport", hits, err)
	}
	bad := []memory.Item{
		{ID: uuid.Nil, CreatedAt: memory.Now()},
		{ID: uuid.New(), CreatedAt: memory.Now(), Content: json.RawMessage(`{bad`)},
		{ID: uuid.New(), CreatedAt: memory.Now(), Tags: []string{"\xff"}},
		{ID: uuid.New(), CreatedAt: math.Nextafter(memory.MaxTimestamp, math.Inf(1))},
		{ID: uuid.New(), CreatedAt: memory.Now(), Content: json.RawMessage(`"` + string(make([]byte, memory.MaxItemBytes)) + `"`)},
	}
	for i, it := range bad {
		id, err := s.Store(ctx, it)
		if id != uuid.Nil || !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("bad item %d: %v, %v; want MemoryAdapterError before transport", i, id, err)
		}
	}
}

// TestOutageThroughProxy: with the transport cut, every explicit call is Unavailable; after
// the transport returns, the same store works again.
func TestOutageThroughProxy(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	s, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	it := memory.NewItem(json.RawMessage(`"before"`), "t")
	mustStore(t, s, it)
	if err := h.MakeTransportUnavailable(ctx); err != nil {
		t.Fatal(err)
	}
	assertUnavailable(t, s, it.ID)
	h.proxy.Restore()
	eventually(t, 20*time.Second, "retrieve after restore", func() bool {
		got, err := s.Retrieve(ctx, it.ID)
		return err == nil && got != nil
	})
	if err := h.MakeSearchIndexVisible(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, memory.Query{Tags: []string{"t"}, Limit: 5})
	if err != nil || len(hits) != 1 {
		t.Fatalf("search after restore: %v, %v", ids(hits), err)
	}
}

func assertUnavailable(t *testing.T, s *Store, known uuid.UUID) {
	t.Helper()
	ctx := testCtx(t)
	id, err := s.Store(ctx, memory.NewItem(json.RawMessage(`1`)))
	if id != uuid.Nil || !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("store during outage: %v, %v; want MemoryAdapterUnavailable", id, err)
	}
	got, err := s.Retrieve(ctx, known)
	if got != nil || !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("retrieve during outage: %v, %v; want MemoryAdapterUnavailable", got, err)
	}
	for _, q := range []memory.Query{{Limit: 5}, {Tags: []string{"t"}, Limit: 5}, {Text: text("x"), Limit: 5}} {
		hits, err := s.Search(ctx, q)
		if hits != nil || !errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("search %+v during outage: %v, %v; want MemoryAdapterUnavailable", q, hits, err)
		}
	}
	if _, err := s.Probe(ctx); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("probe during outage: %v; want MemoryAdapterUnavailable", err)
	}
}

// TestServerKillAndRestart kills a dedicated server with SIGKILL mid-run: explicit calls are
// Unavailable, never empty; after a restart on the same port and data directory the same
// store recovers without being reopened, and acknowledged writes survived (AOF).
func TestServerKillAndRestart(t *testing.T) {
	dir := t.TempDir()
	addr, err := startServer(dir)
	if err != nil {
		t.Fatalf("start dedicated server: %v", err)
	}
	t.Cleanup(func() {
		if err := serverScript("stop", dir); err != nil {
			t.Errorf("stop dedicated server: %v", err)
		}
	})
	ctx := testCtx(t)
	s, err := Open(ctx, Options{Addr: addr, Scope: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var stored []memory.Item
	for i := range 50 {
		it := memory.NewItem(json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), "crash")
		mustStore(t, s, it)
		stored = append(stored, it)
	}
	if err := serverScript("kill", dir); err != nil {
		t.Fatal(err)
	}
	assertUnavailable(t, s, stored[0].ID)
	if _, err := startServer(dir); err != nil {
		t.Fatalf("restart: %v", err)
	}
	eventually(t, 30*time.Second, "the store to recover after restart", func() bool {
		got, err := s.Retrieve(ctx, stored[0].ID)
		return err == nil && got != nil
	})
	for _, it := range stored {
		got, err := s.Retrieve(ctx, it.ID)
		if err != nil || got == nil || !got.Equal(it) {
			t.Fatalf("acknowledged write %s lost or altered across the crash: %v, %v", it.ID, got, err)
		}
	}
	after := memory.NewItem(json.RawMessage(`"after"`), "crash")
	mustStore(t, s, after)
	if err := s.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, memory.Query{Tags: []string{"crash"}, Limit: 100})
	if err != nil || len(hits) != len(stored)+1 {
		t.Fatalf("search after restart: %d hits, %v; want %d", len(hits), err, len(stored)+1)
	}
}

// TestConcurrentWritersAndSearchers: acknowledged writes from concurrent writers over two
// instances are all retrievable and, once indexed, searchable; concurrent searches never fail.
func TestConcurrentWritersAndSearchers(t *testing.T) {
	storetest.ConcurrentWritersLoseNothing(t, factory, 60)
}

// TestCloseStopsIndexerAndIsIdempotent: Close waits for the indexer goroutine, a second
// Close is harmless, and calls after Close are Unavailable.
func TestCloseStopsIndexerAndIsIdempotent(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	// Warm up the harness's own connections so they are not counted as leaks.
	if _, err := h.ServiceVersion(ctx); err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	for range 3 {
		s, err := Open(ctx, Options{Addr: redisAddr, Scope: h.Scope()})
		if err != nil {
			t.Fatal(err)
		}
		mustStore(t, s, memory.NewItem(json.RawMessage(`1`)))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second close: %v", err)
		}
		if _, err := s.Retrieve(ctx, uuid.New()); !errors.Is(err, memory.ErrUnavailable) {
			t.Fatalf("retrieve after close: %v", err)
		}
	}
	eventually(t, 10*time.Second, fmt.Sprintf("goroutines to return to %d", base), func() bool {
		return runtime.NumGoroutine() <= base
	})
}

// TestScopeFilterSetIsFixed: a scope keeps the filter set it was created with.
func TestScopeFilterSetIsFixed(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	if _, err := h.OpenStore(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, Options{Addr: redisAddr, Scope: h.Scope(), SupportedFilters: []string{"other"}})
	if !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("open with another filter set: %v; want MemoryAdapterError", err)
	}
}

// TestOpenFailures: bad options are a MemoryAdapterError; an unreachable server is
// Unavailable; a password file is read and wrong credentials never appear in the error.
func TestOpenFailures(t *testing.T) {
	ctx := testCtx(t)
	for _, o := range []Options{
		{Addr: redisAddr},
		{Addr: redisAddr, Scope: "bad scope"},
		{Addr: redisAddr, URL: "redis://" + redisAddr, Scope: "s"},
		{URL: "http://x", Scope: "s"},
	} {
		if _, err := Open(ctx, o); !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("options %+v: %v; want MemoryAdapterError", o, err)
		}
	}
	if _, err := Open(ctx, Options{Addr: "127.0.0.1:1", Scope: "s"}); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("unreachable server: %v; want MemoryAdapterUnavailable", err)
	}
	// An ACL user with a known password: a wrong one must fail without echoing it, the
	// right one (read from a file, as a mounted Secret) must work.
	h := newHarness(t)
	user := "mao-test-" + randomSuffix()
	if err := h.admin.Do(ctx, "ACL", "SETUSER", user, "on", ">right-pass-value", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.admin.Do(context.Background(), "ACL", "DELUSER", user).Err() })
	dir := t.TempDir()
	wrong, right := filepath.Join(dir, "wrong"), filepath.Join(dir, "right")
	if err := os.WriteFile(wrong, []byte("s3cr3t-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(right, []byte("right-pass-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, Options{Addr: redisAddr, Scope: h.Scope(), Username: user, PasswordFile: wrong})
	if err == nil || !errors.Is(err, memory.ErrAdapter) || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("wrong password: %v; want a MemoryAdapterError that does not echo the password", err)
	}
	s, err := Open(ctx, Options{Addr: redisAddr, Scope: h.Scope(), Username: user, PasswordFile: right})
	if err != nil {
		t.Fatalf("right password from file: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestProbe: the live server reports its version, the required features and persistence.
func TestProbe(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	s, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := s.Probe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := h.ServiceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ServiceVersion != want || !ev.AllOK() || ev.IndexLag == nil {
		t.Fatalf("probe: %+v (failed %v), want version %q and every probe OK", ev, ev.Failed(), want)
	}
	var names []string
	for _, p := range ev.Probes {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"redis_6_2", "version_unchanged", "stream_consumer_group", "persistence_unchanged", "index_lag", "indexer"}) {
		t.Errorf("probe names %v", names)
	}
	if !s.Persistence().Known {
		t.Errorf("persistence unknown on a server with CONFIG enabled: %+v", s.Persistence())
	}
	// A changed persistence setting invalidates the evidence. CONFIG SET is server-wide, so
	// this part uses a dedicated server, never one that other packages may share.
	dir := t.TempDir()
	addr, err := startServer(dir)
	if err != nil {
		t.Fatalf("start dedicated server: %v", err)
	}
	t.Cleanup(func() {
		if err := serverScript("stop", dir); err != nil {
			t.Errorf("stop dedicated server: %v", err)
		}
	})
	ds, err := Open(ctx, Options{Addr: addr, Scope: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if p := ds.Persistence(); !p.Known || !p.AppendOnly || p.AppendFsync != "everysec" || p.Save != "" {
		t.Fatalf("dedicated server persistence %+v; want AOF everysec without RDB, as hack/redis-server.sh configures", p)
	}
	if err := ds.client.ConfigSet(ctx, "appendfsync", "always").Err(); err != nil {
		t.Fatal(err)
	}
	ev, err = ds.Probe(ctx)
	if err != nil || !slices.Equal(ev.Failed(), []string{"persistence_unchanged"}) {
		t.Errorf("probe after appendfsync change: failed %v, %v; want exactly persistence_unchanged", ev.Failed(), err)
	}
}

// TestConcurrentOverwritesConverge: several writers overwrite the same ids with different
// tags through two instances (two indexers racing on the same items); once the index caught
// up, every tag set holds exactly the items whose final record carries that tag.
func TestConcurrentOverwritesConverge(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	a, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	shared := make([]uuid.UUID, 20)
	for i := range shared {
		shared[i] = uuid.New()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []*Store{a, b}[w%2]
			for round := range 15 {
				for _, id := range shared {
					it := memory.NewItem(json.RawMessage(fmt.Sprintf(`{"w":%d,"r":%d}`, w, round)), fmt.Sprintf("tag%d", (w+round)%5))
					it.ID = id
					if _, err := s.Store(ctx, it); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := h.MakeSearchIndexVisible(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]bool{}
	for _, id := range shared {
		it, err := a.Retrieve(ctx, id)
		if err != nil || it == nil || len(it.Tags) != 1 {
			t.Fatalf("retrieve %s: %v, %v", id, it, err)
		}
		if want[it.Tags[0]] == nil {
			want[it.Tags[0]] = map[string]bool{}
		}
		want[it.Tags[0]][id.String()] = true
	}
	for tg := range 5 {
		tag := fmt.Sprintf("tag%d", tg)
		members, err := h.admin.ZRange(ctx, h.k.abs(tagRel(tag)), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, m := range members {
			got[m] = true
		}
		if len(got) != len(want[tag]) {
			t.Errorf("tag %s set holds %d ids, final records carry it on %d", tag, len(got), len(want[tag]))
		}
		for m := range got {
			if !want[tag][m] {
				t.Errorf("tag %s set holds stale member %s", tag, m)
			}
		}
	}
	if n, err := h.admin.ZCard(ctx, h.k.all()).Result(); err != nil || n != int64(len(shared)) {
		t.Errorf("ix:all holds %d ids (%v), want %d", n, err, len(shared))
	}
}

// TestHostileData covers the Redis report (a value nested deeper than 256 was refused as "would
// not read back exactly"): too-deep values are now refused with the contract's message.
func TestHostileData(t *testing.T) { storetest.HostileData(t, factory, storetest.HostileOptions{}) }

// TestSubScopes: views of other scopes on the same client hold their own keys and indexes
// (storetest.SubScopes), and the harness's drop removes them with its scope.
func TestSubScopes(t *testing.T) {
	_, s := openStore(t)
	storetest.SubScopes(t, s, s.Scope())
}

// TestRetention runs the shared retention and usage suite (issue 46) on the real server.
func TestRetention(t *testing.T) {
	storetest.Retention(t, func(t *testing.T, clock func() time.Time) storetest.Harness {
		h := newHarness(t)
		h.opts.Now = clock
		return h
	})
}

// TestRetentionDropsIndexEntries: an item the sweep removes leaves ix:stored, the byte
// count, and, once the indexer has applied the removal, ix:all and its tag set, so the
// index does not keep growing with swept items.
func TestRetentionDropsIndexEntries(t *testing.T) {
	h := newHarness(t)
	clock := &storetest.Clock{}
	clock.Set(time.Unix(1_800_000_000, 0))
	h.opts.Now = clock.Now
	s, err := h.OpenStore(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	it := memory.NewItem(json.RawMessage(`{"text":"swept"}`), "swept-tag")
	storetest.MustStore(t, s, it)
	storetest.Visible(t, h)
	admin, k, id := h.admin, h.k, it.ID.String()
	if err := admin.ZScore(testCtx(t), k.all(), id).Err(); err != nil {
		t.Fatalf("the item is not indexed before the sweep: %v", err)
	}
	n, err := s.Sweep(testCtx(t), memory.RetentionPolicy{MaxAge: time.Minute}, clock.Now().Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1", n, err)
	}
	storetest.Visible(t, h)
	for _, key := range []string{k.all(), k.stored(), k.abs(tagRel("swept-tag"))} {
		if err := admin.ZScore(testCtx(t), key, id).Err(); !errors.Is(err, goredis.Nil) {
			t.Errorf("%s still holds the swept item (%v)", key, err)
		}
	}
	if u, err := s.Usage(testCtx(t)); err != nil || u != (memory.Usage{}) {
		t.Errorf("Usage after the sweep = %+v, %v; want zero", u, err)
	}
}

// TestRetentionBackfillsLegacyItems: items a version before retention wrote (no size, not
// in ix:stored, the scope's config unmarked) come under retention and usage when an
// instance of this version opens the scope: stamped at its open, never removed before the
// max age has passed since, counted at their ItemSize.
func TestRetentionBackfillsLegacyItems(t *testing.T) {
	h := newHarness(t)
	clock := &storetest.Clock{}
	clock.Set(time.Unix(1_800_000_000, 0))
	h.opts.Now = clock.Now
	s := storetest.Open(t, h)
	a := memory.NewItem(json.RawMessage(`{"text":"legacy a"}`), "old")
	b := memory.NewItem(json.RawMessage(`{"text":"legacy b, longer"}`))
	storetest.MustStore(t, s, a)
	storetest.MustStore(t, s, b)
	storetest.Visible(t, h)
	// What the previous version left: the same records without retention's bookkeeping.
	admin, k, ctx := h.admin, h.k, testCtx(t)
	for _, id := range []uuid.UUID{a.ID, b.ID} {
		if err := admin.HDel(ctx, k.item(id), "size").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Del(ctx, k.stored(), k.usage()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.HDel(ctx, k.config(), "stored").Err(); err != nil {
		t.Fatal(err)
	}
	clock.Set(clock.Now().Add(time.Hour))
	opened := clock.Now()
	s2, err := h.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := memory.Usage{Items: 2, Bytes: memory.ItemSize(a) + memory.ItemSize(b)}
	if u, err := s2.Usage(ctx); err != nil || u != want {
		t.Fatalf("Usage after the backfill = %+v, %v; want %+v", u, err, want)
	}
	p := memory.RetentionPolicy{MaxAge: time.Hour}
	if n, err := s2.Sweep(ctx, p, opened.Add(time.Hour-time.Microsecond)); err != nil || n != 0 {
		t.Fatalf("Sweep before an hour since the backfill = %d, %v; want 0", n, err)
	}
	if n, err := s2.Sweep(ctx, p, opened.Add(time.Hour)); err != nil || n != 2 {
		t.Fatalf("Sweep an hour after the backfill = %d, %v; want 2", n, err)
	}
	if u, err := s2.Usage(ctx); err != nil || u != (memory.Usage{}) {
		t.Fatalf("Usage after the sweep = %+v, %v; want zero", u, err)
	}
}
