package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// fetchChunk is how many ids one search round trip fetches.
const fetchChunk = 128

// Store is the Redis ExternalStore. It is safe for concurrent use; Close releases it.
type Store struct {
	cfg      config
	k        keys
	client   *goredis.Client
	manifest memory.Manifest

	// openVersion and openPersistence are what the server reported at Open; a later probe
	// that sees different values reports the manifest's evidence as invalidated.
	openVersion string
	// pin refuses data calls while the server runs another version than openVersion.
	pin             *versionPin
	openPersistence Persistence

	ix *indexer

	// views are the stores InScope made on this store's client, closed with it; a view
	// itself has parent set and closes only its own indexer.
	viewsMu sync.Mutex
	views   []*Store
	parent  *Store

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var (
	_ memory.ExternalStore = (*Store)(nil)
	_ memory.Prober        = (*Store)(nil)
)

// Manifest returns the manifest this adapter declares for the given filter keys and adapter
// id: every field native and exact (the item's wire JSON is stored verbatim), search hits
// carry tags and metadata, and search is eventual because an asynchronous indexer feeds it.
func Manifest(adapterID string, supportedFilters []string) memory.Manifest {
	if adapterID == "" {
		adapterID = AdapterID
	}
	return memory.Manifest{
		Adapter:           adapterID,
		NativeItemFields:  slices.Clone(memory.AllItemFields),
		DroppedItemFields: []memory.ItemField{},
		SupportedFilters:  slices.Clone(supportedFilters),
		SearchConsistency: memory.ConsistencyEventual,
		RetrieveFidelity:  memory.FidelityFull,
		SearchFidelity:    memory.FidelityFull,
		SearchReturnsTags: true,
		PreservesMetadata: true,
	}.Normalize()
}

// Open validates opts, connects, checks that the server has what the adapter needs (Redis
// 6.2 or later for ZUNION/ZINTER and XAUTOCLAIM), records its version and persistence
// settings, prepares the scope (config and consumer group) and starts the indexer.
// Invalid options or an incompatible scope are a MemoryAdapterError; an unreachable server
// is a MemoryAdapterUnavailable.
func Open(ctx context.Context, opts Options) (*Store, error) {
	cfg, err := opts.resolve()
	if err != nil {
		return nil, memory.NewAdapterError("open: invalid options", err)
	}
	s := &Store{
		cfg:      cfg,
		k:        newKeys(cfg.scope),
		pin:      &versionPin{},
		manifest: Manifest(cfg.adapterID, cfg.filters),
	}
	s.client = newClient(cfg, 0, s.pin.onConnect)
	s.client.AddHook(pinHook{s.pin})
	if err := s.setup(ctx); err != nil {
		_ = s.client.Close()
		return nil, err
	}
	s.ix = newIndexer(s)
	go s.ix.run()
	return s, nil
}

func (s *Store) setup(ctx context.Context) error {
	version, err := s.serverVersion(ctx)
	if err != nil {
		return err
	}
	if !atLeast(version, 6, 2) {
		return memory.NewAdapterError(fmt.Sprintf("open: Redis %s is too old: 6.2 or later is required (ZUNION, ZINTER, XAUTOCLAIM)", version), nil)
	}
	s.openVersion = version
	s.pin.pin(version)
	p, err := s.persistence(ctx)
	if err != nil {
		return err
	}
	s.openPersistence = p
	if err := s.ensureScope(ctx); err != nil {
		return err
	}
	return s.backfillStored(ctx)
}

// ensureScope records the scope's layout and filter set on first use and refuses a scope
// whose recorded filter set differs (its filter index would not match this manifest) or
// whose layout is unknown, migrates a layout-1 scope (scopeScript), then creates the
// consumer group. It is idempotent and also used after a scope was dropped, and now and
// then by the indexer to notice a layout-1 instance that came back.
func (s *Store) ensureScope(ctx context.Context) error {
	filtersJSON, _ := json.Marshal(s.cfg.filters)
	vals, err := scopeScript.Run(ctx, s.client, []string{s.k.config(), s.k.all(), s.k.stream()},
		layoutVersion, string(filtersJSON), legacyLayoutVersion, legacyGroupName).Slice()
	if err != nil {
		return classify("open: scope config", err)
	}
	if len(vals) != 2 || vals[0] != layoutVersion || vals[1] != string(filtersJSON) {
		return memory.NewAdapterError(fmt.Sprintf("open: scope %q was created with another layout or filter set (%v); a scope's filter set is fixed at creation", s.cfg.scope, vals), nil)
	}
	err = s.client.XGroupCreateMkStream(ctx, s.k.stream(), groupName, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return classify("open: create consumer group", err)
	}
	return nil
}

// Manifest implements memory.ExternalStore.
func (s *Store) Manifest() memory.Manifest { return s.manifest }

// Scope returns the namespace this store is bound to.
func (s *Store) Scope() string { return s.cfg.scope }

// Close stops the indexer (waiting for its goroutine), leaves the consumer group if this
// instance holds no pending entries, and closes the connection pool. It is idempotent:
// later calls return the first call's result. Explicit calls after Close are
// MemoryAdapterUnavailable.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.closeViews()
		s.ix.stop()
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTO)
		defer cancel()
		// Best effort: a consumer without pending entries only clutters XINFO; one with
		// pending entries must stay so that XAUTOCLAIM can hand them to a live instance.
		if n, err := s.consumerPending(ctx); err == nil && n == 0 {
			_ = s.client.XGroupDelConsumer(ctx, s.k.stream(), groupName, s.cfg.consumer).Err()
		}
		if s.parent != nil {
			return // the client is the parent's
		}
		if err := s.client.Close(); err != nil && !errors.Is(err, goredis.ErrClosed) {
			s.closeErr = memory.NewAdapterError("close", err)
		}
	})
	return s.closeErr
}

func (s *Store) consumerPending(ctx context.Context) (int64, error) {
	res, err := s.client.XPendingExt(ctx, &goredis.XPendingExtArgs{
		Stream: s.k.stream(), Group: groupName, Start: "-", End: "+", Count: 1, Consumer: s.cfg.consumer,
	}).Result()
	if err != nil {
		return 0, err
	}
	return int64(len(res)), nil
}

func (s *Store) checkOpen(op string) error {
	if s.closed.Load() {
		return memory.NewUnavailable(op+": the adapter is closed", goredis.ErrClosed)
	}
	return nil
}

// Store writes the item's exact wire JSON at its identity, its store time and size
// (writeItem), and queues it for indexing, in one MULTI/EXEC transaction. Storing an
// existing id replaces the item (last writer wins), keeps its search position and restarts
// its retention age. Store is not retried: the caller may retry, as a repeated
// store of the same item is idempotent.
func (s *Store) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	if err := s.checkOpen("store"); err != nil {
		return uuid.Nil, err
	}
	data, err := s.encode(item)
	if err != nil {
		return uuid.Nil, err
	}
	c := s.client.TxPipeline()
	var cn *goredis.Conn
	if s.cfg.promise.minReplicas > 0 {
		// WAIT counts the replicas that reached this connection's last write: it must run
		// on the connection that wrote, and go-redis pools connections, so pin one.
		cn = s.client.Conn()
		defer func() { _ = cn.Close() }()
		c = cn.TxPipeline()
	}
	writeItem(ctx, c, s.k, item, data, s.cfg.now())
	xadd := c.XAdd(ctx, &goredis.XAddArgs{Stream: s.k.stream(), Values: []string{"id", item.ID.String()}})
	if cmds, err := c.Exec(ctx); err != nil {
		return uuid.Nil, classify("store", queuedErr(cmds, err))
	}
	if xadd.Val() == "" {
		return uuid.Nil, memory.NewAdapterError("store: the server acknowledged the transaction without a stream entry id", nil)
	}
	if cn != nil {
		if err := s.awaitReplicas(ctx, cn); err != nil {
			return uuid.Nil, err
		}
	}
	return item.ID, nil
}

// awaitReplicas is the replication promise of a store just written on cn: WAIT until
// min_replicas replicas confirm it, else MemoryAdapterUnavailable. The write is applied on
// the primary either way; what the caller learns is that it was not acknowledged, so a
// failover may lose it (a repeat of the same store is idempotent).
func (s *Store) awaitReplicas(ctx context.Context, cn *goredis.Conn) error {
	p := s.cfg.promise
	n, err := cn.Wait(ctx, p.minReplicas, p.timeout).Result()
	if err != nil {
		return classify("store: written on the primary, but waiting for its replicas failed", err)
	}
	if n < int64(p.minReplicas) {
		return memory.NewUnavailable(fmt.Sprintf("store: written on the primary, but %d of the %d replicas required confirmed it within %s: not acknowledged", n, p.minReplicas, p.timeout), errTooFewReplicas)
	}
	return nil
}

// queuedErr returns, for a transaction the server discarded (EXECABORT), the error of the
// first command it refused to queue: that says why (READONLY from a demoted primary is an
// outage, where EXECABORT alone would read as a rejected request).
func queuedErr(cmds []goredis.Cmder, err error) error {
	if !isServerReply(err) || !strings.HasPrefix(err.Error(), "EXECABORT") {
		return err
	}
	for _, c := range cmds {
		if cerr := c.Err(); cerr != nil && isServerReply(cerr) && !strings.HasPrefix(cerr.Error(), "EXECABORT") {
			return fmt.Errorf("%w (%w)", cerr, err)
		}
	}
	return err
}

// errTooFewReplicas is the cause of a store answered unavailable because WAIT counted
// fewer replicas than the promise requires.
var errTooFewReplicas = errors.New("too few replicas acknowledged the write")

// encode validates the item before any I/O and returns the exact bytes to store. It
// decodes its own output and compares it with the input, so nothing is ever written that
// would read back different (for example a timestamp outside years 1 to 9999).
func (s *Store) encode(item memory.Item) ([]byte, error) {
	if item.ID == uuid.Nil {
		return nil, memory.NewAdapterError("store: item id must not be the nil UUID", nil)
	}
	// Before canonicalisation and JSONEqual, whose own recursion bound (256) would otherwise
	// surface as a misleading "would not read back" error.
	if err := memory.CheckItemDepth(item); err != nil {
		return nil, err
	}
	if err := memory.CheckItemLimits(item); err != nil {
		return nil, err
	}
	for _, t := range item.Tags {
		if !utf8.ValidString(t) {
			return nil, memory.NewAdapterError("store: every tag must be valid UTF-8", nil)
		}
	}
	for k, v := range item.Metadata {
		if !utf8.ValidString(k) {
			return nil, memory.NewAdapterError("store: metadata keys must be valid UTF-8", nil)
		}
		// Invalid bytes inside a JSON string would be stored verbatim and sent back as invalid
		// UTF-8, which strict clients (Python's json) cannot read.
		if !utf8.Valid(v) {
			return nil, memory.NewAdapterError("store: metadata values must be valid UTF-8", nil)
		}
	}
	if !utf8.Valid(item.Content) {
		return nil, memory.NewAdapterError("store: content must be valid UTF-8", nil)
	}
	data, err := memory.MarshalItem(item)
	if err != nil {
		return nil, memory.NewAdapterError("store: item is not representable as JSON", err)
	}
	if len(data) > s.cfg.maxItem {
		return nil, memory.ItemTooLarge(s.cfg.maxItem)
	}
	back, err := memory.UnmarshalItem(data)
	if err != nil {
		return nil, memory.NewAdapterError("store: item would not read back", err)
	}
	if d := back.Diff(item); len(d) > 0 {
		return nil, memory.NewAdapterError(fmt.Sprintf("store: fields %v would not read back exactly", d), nil)
	}
	return data, nil
}

// Retrieve reads the item at its identity. An unknown id, or a key there that is not a
// memory record of this adapter (another data type, or a hash without the kind marker), is
// (nil, nil). A marked record that does not decode is a MemoryAdapterError.
func (s *Store) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	if err := s.checkOpen("retrieve"); err != nil {
		return nil, err
	}
	var vals []any
	err := s.withReadRetry(ctx, s.cfg.retrieveRetry, func() error {
		var err error
		vals, err = s.client.HMGet(ctx, s.k.item(id), "kind", "json").Result()
		return err
	})
	if err != nil {
		if isWrongType(err) {
			return nil, nil
		}
		return nil, classify("retrieve", err)
	}
	return decodeRecord(id, vals)
}

// decodeRecord turns HMGET kind json into an item, nil for a missing or foreign record.
func decodeRecord(id uuid.UUID, vals []any) (*memory.Item, error) {
	if len(vals) != 2 {
		return nil, memory.NewAdapterError("retrieve: malformed reply from the server", nil)
	}
	kind, _ := vals[0].(string)
	if kind != itemKind {
		return nil, nil
	}
	raw, ok := vals[1].(string)
	if !ok {
		return nil, memory.NewAdapterError("retrieve: memory record "+id.String()+" has no payload", nil)
	}
	it, err := memory.UnmarshalItem([]byte(raw))
	if err != nil {
		return nil, memory.NewAdapterError("retrieve: memory record "+id.String()+" is malformed", err)
	}
	if it.ID != id {
		return nil, memory.NewAdapterError("retrieve: memory record "+id.String()+" holds another id", nil)
	}
	return &it, nil
}

// withReadRetry runs a read-only call, repeating it after transport failures as the policy
// says (by default three attempts, 25 ms doubling up to 200 ms, equal jitter).
func (s *Store) withReadRetry(ctx context.Context, p memory.RetryPolicy, call func() error) error {
	var err error
	for attempt := 0; ; attempt++ {
		err = call()
		if err == nil || !retryable(err) || attempt+1 >= p.MaxAttempts || ctx.Err() != nil || s.closed.Load() {
			return err
		}
		t := time.NewTimer(p.Pause(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// Search answers from the index only, so an item stored but not yet indexed is missing
// (eventual consistency). Candidates come in insertion order: tags select the union of the
// tag sets, filters the intersection of the filter sets (with at most one tag, the smallest
// of those sets is paged instead), a text of three or more bytes alone takes the items whose
// bits are set in each of its trigrams' bitmaps (textindex.go; while that index is
// incomplete, the walk below), and an empty query walks every
// indexed item from the oldest. Each candidate is fetched by identity and must pass
// lionagi's predicates in Go, so query text is a literal, case-insensitive substring.
func (s *Store) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	if err := memory.CheckQuery(s.manifest, q); err != nil {
		return nil, err
	}
	if err := memory.CheckQueryDepth(q); err != nil {
		return nil, err
	}
	if err := memory.CheckQueryLimits(q); err != nil {
		return nil, err
	}
	if err := s.checkOpen("search"); err != nil {
		return nil, err
	}
	out := []memory.Item{}
	if q.Limit == 0 {
		return out, nil
	}
	var lower string
	if q.Text != nil {
		lower = strings.ToLower(*q.Text)
	}
	var err error
	if len(q.Tags) == 0 && len(q.Filters) == 0 && len(lower) >= minIndexedNeedle {
		out, err = s.scanText(ctx, q, lower)
		if errors.Is(err, errTextIndexUnusable) {
			out, err = s.scanSet(ctx, s.k.all(), q, lower)
		}
	} else if len(q.Tags) == 0 && len(q.Filters) == 0 {
		out, err = s.scanSet(ctx, s.k.all(), q, lower)
	} else {
		out, err = s.scanCandidates(ctx, q, lower)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanSet walks one index set in insertion order, page by page, until the limit is met.
func (s *Store) scanSet(ctx context.Context, key string, q memory.Query, lower string) ([]memory.Item, error) {
	out := []memory.Item{}
	page := int64(max(fetchChunk, min(q.Limit, 1024)))
	// Page by score, not by rank: the indexer may remove a stale member concurrently, which
	// would shift ranks and make a rank cursor skip an item.
	from := "-inf"
	for {
		var zs []goredis.Z
		err := s.withReadRetry(ctx, s.cfg.searchRetry, func() error {
			var err error
			zs, err = s.client.ZRangeArgsWithScores(ctx, goredis.ZRangeArgs{
				Key: key, Start: from, Stop: "+inf", ByScore: true, Count: page,
			}).Result()
			return err
		})
		if err != nil {
			return nil, classify("search", err)
		}
		ids := make([]string, len(zs))
		for i, z := range zs {
			ids[i], _ = z.Member.(string)
		}
		var done bool
		out, done, err = s.collect(ctx, ids, q, lower, out)
		if err != nil {
			return nil, err
		}
		if done || int64(len(zs)) < page {
			return out, nil
		}
		from = "(" + strconv.FormatFloat(zs[len(zs)-1].Score, 'f', -1, 64)
	}
}

func (s *Store) scanCandidates(ctx context.Context, q memory.Query, lower string) ([]memory.Item, error) {
	var tagKeys, filterKeys []string
	for _, t := range q.Tags {
		tagKeys = append(tagKeys, s.k.abs(tagRel(t)))
	}
	slices.Sort(tagKeys)
	tagKeys = slices.Compact(tagKeys)
	for k, v := range q.Filters {
		c, err := canonicalJSON(v)
		if err != nil {
			return nil, memory.NewAdapterError("search: filter "+k+" is not valid JSON", err)
		}
		filterKeys = append(filterKeys, s.k.abs(filterRel(k, c)))
	}
	if len(tagKeys)+len(filterKeys) == 1 {
		// One set decides the candidates: page through it instead of materialising it.
		return s.scanSet(ctx, slices.Concat(tagKeys, filterKeys)[0], q, lower)
	}
	if len(tagKeys) <= 1 {
		// Every hit is in each filter set and in the one tag's set, so any of them is a
		// superset of the hits, and collect checks every predicate on each fetched item:
		// page through the smallest instead of materialising them all (which costs the
		// size of the largest, 100,000 members for a 10 % filter at 1M items).
		key, err := s.smallestSet(ctx, slices.Concat(tagKeys, filterKeys))
		if err != nil {
			return nil, err
		}
		return s.scanSet(ctx, key, q, lower)
	}
	var tagSet, filterSet []goredis.Z
	err := s.withReadRetry(ctx, s.cfg.searchRetry, func() error {
		pipe := s.client.Pipeline()
		var tagCmd, filterCmd *goredis.ZSliceCmd
		if len(tagKeys) > 0 {
			tagCmd = pipe.ZUnionWithScores(ctx, goredis.ZStore{Keys: tagKeys, Aggregate: "MIN"})
		}
		if len(filterKeys) > 0 {
			filterCmd = pipe.ZInterWithScores(ctx, &goredis.ZStore{Keys: filterKeys, Aggregate: "MIN"})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		if tagCmd != nil {
			tagSet = tagCmd.Val()
		}
		if filterCmd != nil {
			filterSet = filterCmd.Val()
		}
		return nil
	})
	if err != nil {
		return nil, classify("search", err)
	}
	cands := tagSet
	switch {
	case len(q.Tags) == 0:
		cands = filterSet
	case len(q.Filters) > 0:
		inFilter := make(map[any]struct{}, len(filterSet))
		for _, z := range filterSet {
			inFilter[z.Member] = struct{}{}
		}
		cands = slices.DeleteFunc(tagSet, func(z goredis.Z) bool {
			_, ok := inFilter[z.Member]
			return !ok
		})
	}
	// ZUNION/ZINTER reply in score order already; sort anyway so the order never depends
	// on a reply detail.
	slices.SortStableFunc(cands, func(a, b goredis.Z) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		}
		return 0
	})
	out := []memory.Item{}
	for i := 0; i < len(cands); i += fetchChunk {
		chunk := cands[i:min(i+fetchChunk, len(cands))]
		ids := make([]string, len(chunk))
		for j, z := range chunk {
			ids[j], _ = z.Member.(string)
		}
		var done bool
		out, done, err = s.collect(ctx, ids, q, lower, out)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	return out, nil
}

// smallestSet returns the key of the index set with the fewest members (the first of
// equals), counted with one pipelined ZCARD each.
func (s *Store) smallestSet(ctx context.Context, keys []string) (string, error) {
	var cards []*goredis.IntCmd
	err := s.withReadRetry(ctx, s.cfg.searchRetry, func() error {
		pipe := s.client.Pipeline()
		cards = make([]*goredis.IntCmd, len(keys))
		for i, k := range keys {
			cards[i] = pipe.ZCard(ctx, k)
		}
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil {
		return "", classify("search", err)
	}
	best := 0
	for i, c := range cards {
		if c.Val() < cards[best].Val() {
			best = i
		}
	}
	return keys[best], nil
}

// collect fetches ids by identity in one pipeline and appends the matching items to out;
// done reports that the limit was reached.
func (s *Store) collect(ctx context.Context, ids []string, q memory.Query, lower string, out []memory.Item) ([]memory.Item, bool, error) {
	if len(ids) == 0 {
		return out, false, nil
	}
	parsed := make([]uuid.UUID, len(ids))
	for i, raw := range ids {
		id, err := uuid.Parse(raw)
		if err != nil {
			return nil, false, memory.NewAdapterError("search: the index holds a malformed id", err)
		}
		parsed[i] = id
	}
	var cmds []*goredis.SliceCmd
	err := s.withReadRetry(ctx, s.cfg.searchRetry, func() error {
		pipe := s.client.Pipeline()
		cmds = make([]*goredis.SliceCmd, len(parsed))
		for i, id := range parsed {
			cmds[i] = pipe.HMGet(ctx, s.k.item(id), "kind", "json")
		}
		_, err := pipe.Exec(ctx)
		if err != nil && !isServerReply(err) {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, false, classify("search", err)
	}
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			if isWrongType(err) {
				continue
			}
			return nil, false, classify("search", err)
		}
		it, err := decodeRecord(parsed[i], cmd.Val())
		if err != nil {
			return nil, false, err
		}
		if it == nil || !memory.Matches(*it, q, lower) {
			continue
		}
		out = append(out, *it)
		if len(out) >= q.Limit {
			return out, true, nil
		}
	}
	return out, false, nil
}
