package redis

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Indexer timing. The block time bounds how long Close waits for a blocked read to notice
// the stop (Close also closes the pool, which interrupts it at once); the backoff keeps a
// lost server from being hammered while the indexer waits for it to return.
const (
	indexBlock        = time.Second
	indexMinBackoff   = 50 * time.Millisecond
	indexMaxBackoff   = 2 * time.Second
	indexTrimEvery    = 10 * time.Second
	indexMaxWatchRuns = 16
)

// indexer is one adapter instance's consumer in the scope's consumer group. It applies
// stream entries to the search index and acknowledges them in the same transaction, so an
// entry is acknowledged exactly when its effect is visible to search.
type indexer struct {
	s *Store
	// c is the indexer's own small pool: closing it interrupts a blocked XREADGROUP at
	// once, so Close never waits for the block timeout, and explicit calls never queue
	// behind index traffic.
	c      *goredis.Client
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// filling is set while the text index's backfill goroutine runs (wg waits for it).
	filling atomic.Bool
	wg      sync.WaitGroup

	mu      sync.Mutex
	lastErr error
}

func newIndexer(s *Store) *indexer {
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), indexerCtxKey{}, true))
	// Three connections: the blocking read, a claim or trim, and a text index backfill.
	return &indexer{s: s, c: newClient(s.cfg, 3, nil), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// stop cancels the indexer, closes its pool (interrupting a blocked read) and waits for
// its goroutine. It is idempotent.
func (ix *indexer) stop() {
	ix.cancel()
	_ = ix.c.Close()
	<-ix.done
	ix.wg.Wait()
}

// status returns the last round's error (nil when the last round succeeded).
func (ix *indexer) status() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.lastErr
}

func (ix *indexer) run() {
	defer close(ix.done)
	backoff := time.Duration(0)
	ownPending := true // after a start or a failure, first re-read our own pending entries
	var lastClaim, lastTrim time.Time
	for ix.ctx.Err() == nil {
		err := ix.round(&ownPending, &lastClaim, &lastTrim)
		if ix.ctx.Err() != nil {
			return
		}
		ix.mu.Lock()
		ix.lastErr = err
		ix.mu.Unlock()
		if err == nil {
			backoff = 0
			continue
		}
		ownPending = true
		if strings.HasPrefix(err.Error(), "NOGROUP") {
			// The scope was dropped (a harness reset, or an operator): recreate it.
			if e := ix.s.ensureScope(ix.ctx); e == nil {
				continue
			}
		}
		var wait time.Duration
		backoff, wait = nextBackoff(backoff)
		if !ix.sleep(wait) {
			return
		}
	}
}

// nextBackoff doubles backoff within the indexer's bounds and returns it with the wait
// before the next attempt (half of it plus up to half again at random).
func nextBackoff(backoff time.Duration) (next, wait time.Duration) {
	next = min(max(backoff*2, indexMinBackoff), indexMaxBackoff)
	return next, next/2 + rand.N(next/2+1)
}

// sleep waits d, or less if the indexer stops; it reports whether the indexer still runs.
func (ix *indexer) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ix.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// round does one unit of work: claim entries a dead consumer left pending, re-read our own
// pending entries, or block for new ones; then trim the stream now and then.
func (ix *indexer) round(ownPending *bool, lastClaim, lastTrim *time.Time) error {
	ctx, s := ix.ctx, ix.s
	if time.Since(*lastClaim) >= s.cfg.claimIdle/2 {
		if err := ix.claim(); err != nil {
			return err
		}
		*lastClaim = time.Now()
	}
	if time.Since(*lastTrim) >= indexTrimEvery {
		if err := ix.trim(); err != nil {
			return err
		}
		// After trim, which destroys a layout-1 group that came back and so may have
		// declared the text index incomplete.
		if err := ix.maybeBackfill(); err != nil {
			return err
		}
		*lastTrim = time.Now()
	}
	start, block := ">", indexBlock
	if *ownPending {
		start, block = "0", -1
	}
	res, err := ix.c.XReadGroup(ctx, &goredis.XReadGroupArgs{
		Group: groupName, Consumer: s.cfg.consumer, Streams: []string{s.k.stream(), start},
		Count: int64(s.cfg.batch), Block: block,
	}).Result()
	if errors.Is(err, goredis.Nil) {
		return nil
	}
	if err != nil {
		return err
	}
	var msgs []goredis.XMessage
	for _, st := range res {
		msgs = append(msgs, st.Messages...)
	}
	if *ownPending && len(msgs) == 0 {
		*ownPending = false
		return nil
	}
	return ix.apply(msgs)
}

// claim takes over entries that another consumer has held for longer than ClaimIdle: that
// consumer is presumed dead (a crashed replica) and its entries would otherwise never be
// indexed.
func (ix *indexer) claim() error {
	s := ix.s
	start := "0-0"
	for range 64 {
		msgs, next, err := ix.c.XAutoClaim(ix.ctx, &goredis.XAutoClaimArgs{
			Stream: s.k.stream(), Group: groupName, Consumer: s.cfg.consumer,
			MinIdle: s.cfg.claimIdle, Start: start, Count: int64(s.cfg.batch),
		}).Result()
		if err != nil {
			return err
		}
		if err := ix.apply(msgs); err != nil {
			return err
		}
		if next == "0-0" || next == "" {
			break
		}
		start = next
	}
	return ix.forgetDeadConsumers()
}

// forgetDeadConsumers removes consumers that hold nothing and have not read for ten claim
// periods: instances that died with a random consumer name. A live consumer reads at least
// once per block timeout, and a removed one that comes back is recreated by its next read.
func (ix *indexer) forgetDeadConsumers() error {
	s := ix.s
	consumers, err := ix.c.XInfoConsumers(ix.ctx, s.k.stream(), groupName).Result()
	if err != nil {
		return err
	}
	for _, c := range consumers {
		if c.Name != s.cfg.consumer && c.Pending == 0 && c.Idle > 10*s.cfg.claimIdle {
			if err := ix.c.XGroupDelConsumer(ix.ctx, s.k.stream(), groupName, c.Name).Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// trim drops stream entries that every consumer has acknowledged: those below the oldest
// pending entry, or below the group's last delivered entry when none is pending.
func (ix *indexer) trim() error {
	s := ix.s
	groups, err := ix.c.XInfoGroups(ix.ctx, s.k.stream()).Result()
	if err != nil {
		if isServerReply(err) && strings.Contains(err.Error(), "no such key") {
			return nil // the scope was dropped; the next read recreates it
		}
		return err
	}
	for _, g := range groups {
		if g.Name == legacyGroupName {
			// A layout-1 instance is indexing (its probe recreated its group); ensureScope
			// destroys the group and declares the text index incomplete.
			if err := s.ensureScope(ix.ctx); err != nil {
				return err
			}
		}
	}
	for _, g := range groups {
		if g.Name != groupName {
			continue
		}
		minID := g.LastDeliveredID
		if g.Pending > 0 {
			p, err := ix.c.XPending(ix.ctx, s.k.stream(), groupName).Result()
			if err != nil {
				return err
			}
			minID = p.Lower
		}
		if minID == "" || minID == "0-0" {
			return nil
		}
		return ix.c.XTrimMinIDApprox(ix.ctx, s.k.stream(), minID, 0).Err()
	}
	return nil
}

// indexDoc is what the index holds for one item after a batch is applied.
type indexDoc struct {
	id       uuid.UUID
	valid    bool
	members  []string // relative keys of tag and filter sets
	text     textEntry
	old      []string
	oldGrams []string
	score    float64
	hasPos   bool
}

// apply indexes the items named by msgs and acknowledges the entries, in one transaction
// guarded by WATCH on each item and its index record. It always indexes an item's current
// value, so entries applied out of order (two consumers) still converge; a concurrent
// change to a watched key aborts the transaction and the batch is recomputed.
func (ix *indexer) apply(msgs []goredis.XMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	entryIDs := make([]string, 0, len(msgs))
	var ids []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for _, m := range msgs {
		entryIDs = append(entryIDs, m.ID)
		raw, _ := m.Values["id"].(string)
		id, err := memory.ParseID(raw)
		if err != nil || seen[id] {
			continue // a malformed or repeated entry is acknowledged without effect
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ix.applyIDs(ids, entryIDs)
}

// applyIDs indexes the current value of each item in ids (distinct) and acknowledges
// entryIDs (none for a backfill), in one transaction guarded by WATCH on each item and its
// index record.
func (ix *indexer) applyIDs(ids []uuid.UUID, entryIDs []string) error {
	s := ix.s
	watch := make([]string, 0, 2*len(ids))
	for _, id := range ids {
		watch = append(watch, s.k.item(id), s.k.doc(id))
	}
	for range indexMaxWatchRuns {
		err := ix.c.Watch(ix.ctx, func(tx *goredis.Tx) error {
			return ix.applyWatched(tx, ids, entryIDs)
		}, watch...)
		if errors.Is(err, goredis.TxFailedErr) {
			continue
		}
		return err
	}
	return errors.New("index: batch kept conflicting with concurrent writers")
}

func (ix *indexer) applyWatched(tx *goredis.Tx, ids []uuid.UUID, entryIDs []string) error {
	ctx, s := ix.ctx, ix.s
	records := make([]*goredis.SliceCmd, len(ids))
	docs := make([]*goredis.StringCmd, len(ids))
	scores := make([]*goredis.FloatCmd, len(ids))
	if len(ids) > 0 {
		_, err := tx.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, id := range ids {
				records[i] = p.HMGet(ctx, s.k.item(id), "kind", "json")
				docs[i] = p.Get(ctx, s.k.doc(id))
				scores[i] = p.ZScore(ctx, s.k.all(), id.String())
			}
			return nil
		})
		if err != nil && !isServerReply(err) && !errors.Is(err, goredis.Nil) {
			return err
		}
	}
	plan := make([]indexDoc, len(ids))
	needPos := 0
	for i, id := range ids {
		d := indexDoc{id: id}
		if err := docs[i].Err(); err == nil {
			d.old, d.oldGrams = decodeDoc(docs[i].Val())
		} else if !errors.Is(err, goredis.Nil) {
			return err
		}
		if err := scores[i].Err(); err == nil {
			d.score, d.hasPos = scores[i].Val(), true
		} else if !errors.Is(err, goredis.Nil) {
			return err
		}
		var it *memory.Item
		if err := records[i].Err(); err == nil {
			// A malformed record is left out of the index; retrieve reports it loudly.
			it, _ = decodeRecord(id, records[i].Val())
		} else if !isWrongType(err) {
			return err
		}
		if it != nil {
			d.valid = true
			d.members = s.membersOf(*it)
			d.text = textEntryOf(*it)
			if !d.hasPos {
				needPos++
			}
		}
		plan[i] = d
	}
	var next float64
	if needPos > 0 {
		end, err := tx.IncrBy(ctx, s.k.seq(), int64(needPos)).Result()
		if err != nil {
			return err
		}
		next = float64(end - int64(needPos) + 1)
	}
	_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		tw := newTextWrites()
		for i := range plan {
			d := &plan[i]
			member := d.id.String()
			for _, rel := range d.old {
				if !slices.Contains(d.members, rel) {
					p.ZRem(ctx, s.k.abs(rel), member)
				}
			}
			if !d.valid {
				if d.hasPos {
					// A deleted item: clear every bit its last text set.
					tw.add(int64(d.score), nil, d.oldGrams)
				}
				p.ZRem(ctx, s.k.all(), member)
				p.Del(ctx, s.k.doc(d.id))
				continue
			}
			if !d.hasPos {
				// Bits are only ever set at a position held in ix:all.
				d.score, d.oldGrams = next, nil
				next++
			}
			s.queueIndexWrites(ctx, p, d.id, d.score, d.members, d.text)
			tw.add(int64(d.score), d.text.grams, d.oldGrams)
		}
		tw.queue(ctx, p, s.k)
		if len(entryIDs) > 0 {
			p.XAck(ctx, s.k.stream(), groupName, entryIDs...)
		}
		return nil
	})
	return err
}

// queueIndexWrites queues the index entries of one valid item at its search position
// (score): its member in each of its tag and filter sets and in ix:all (kept if present, so
// a replaced item keeps its position), and its ix:doc record of those sets and of its search
// text, which the next change to the item diffs against. Its text index bits and counts are
// the caller's textWrites, queued once per batch.
func (s *Store) queueIndexWrites(ctx context.Context, p goredis.Pipeliner, id uuid.UUID, score float64, members []string, te textEntry) {
	z := goredis.Z{Score: score, Member: id.String()}
	for _, rel := range members {
		p.ZAdd(ctx, s.k.abs(rel), z)
	}
	p.ZAddNX(ctx, s.k.all(), z)
	p.Set(ctx, s.k.doc(id), encodeDoc(members, te), 0)
}

// membersOf lists the index sets an item belongs to: one per distinct tag and one per
// supported filter key present in its metadata.
func (s *Store) membersOf(it memory.Item) []string {
	var out []string
	for _, t := range it.Tags {
		out = append(out, tagRel(t))
	}
	for _, k := range s.cfg.filters {
		v, ok := it.Metadata[k]
		if !ok {
			continue
		}
		c, err := canonicalJSON(v)
		if err != nil {
			// Deeper than memory.JSONEqual compares: no filter can equal it anyway.
			continue
		}
		out = append(out, filterRel(k, c))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
