package redis

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// sweepBatch bounds the items one retention script deletes: a script blocks the server while
// it runs, so a large expiry is removed in many short scripts instead of one long one.
const sweepBatch = 500

var (
	_ memory.Sweeper       = (*Store)(nil)
	_ memory.UsageReporter = (*Store)(nil)
)

// writeScript writes an item's record with its size, stamps it in ix:stored and moves
// ix:usage's bytes by the size's change, atomically, so that usage never drifts from the
// records: the old size is only known on the server. KEYS: item, ix:stored, ix:usage; ARGV:
// kind, json, size, store time, id. A key of another type at the item's identity fails the
// script before any write, as the plain HSET it replaces failed.
const writeScript = `
local old = redis.call('HGET', KEYS[1], 'size')
redis.call('HSET', KEYS[1], 'kind', ARGV[1], 'json', ARGV[2], 'size', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
redis.call('HINCRBY', KEYS[3], 'bytes', tonumber(ARGV[3]) - (tonumber(old) or 0))
return 1`

// writeItem queues writeScript for item, whose wire JSON is data, stored at now, in the
// store's transaction c. EVAL with the script's text, not EVALSHA: inside MULTI a NOSCRIPT
// (a restarted or failed-over server forgets loaded scripts) would fail the write alone
// while the transaction's stream entry went through.
func writeItem(ctx context.Context, c goredis.Pipeliner, k keys, item memory.Item, data []byte, now time.Time) {
	c.Eval(ctx, writeScript, []string{k.item(item.ID), k.stored(), k.usage()},
		itemKind, data, memory.ItemSize(item), now.UnixMicro(), item.ID.String())
}

// sweepScript deletes the items named with the store time the sweep read for each, unless a
// store has restamped one since (it is then fresh, and kept), and queues a stream entry per
// deleted item so that the indexer drops its index entries (it indexes an item's current
// value, and a missing record is removed from every set and bitmap). KEYS: ix:stored,
// ix:usage, stream; ARGV: the scope's key prefix, then id and store time pairs. Returns how
// many it deleted.
var sweepScript = goredis.NewScript(`
local n = 0
for i = 2, #ARGV, 2 do
	local id = ARGV[i]
	local at = redis.call('ZSCORE', KEYS[1], id)
	if at and tonumber(at) == tonumber(ARGV[i + 1]) then
		local key = ARGV[1] .. 'item:' .. id
		local size = redis.call('HGET', key, 'size')
		redis.call('DEL', key)
		redis.call('ZREM', KEYS[1], id)
		redis.call('HINCRBY', KEYS[2], 'bytes', -(tonumber(size) or 0))
		redis.call('XADD', KEYS[3], '*', 'id', id)
		n = n + 1
	end
end
return n`)

// Sweep removes the items p expires at now (memory.Sweeper), oldest first, reading ix:stored
// by score or rank, so it touches only the items it removes. A removed item leaves retrieve
// at once and search at once too (search fetches every hit's record and skips a missing
// one); the indexer then drops its index entries.
func (s *Store) Sweep(ctx context.Context, p memory.RetentionPolicy, now time.Time) (int64, error) {
	if err := s.checkOpen("retention sweep"); err != nil {
		return 0, err
	}
	var deleted int64
	if cutoff, ok := p.Cutoff(now); ok {
		for {
			zs, err := s.client.ZRangeArgsWithScores(ctx, goredis.ZRangeArgs{
				Key: s.k.stored(), Start: "-inf", Stop: strconv.FormatInt(cutoff, 10), ByScore: true, Count: sweepBatch,
			}).Result()
			if err != nil {
				return deleted, classify("retention sweep", err)
			}
			n, err := s.sweepItems(ctx, zs)
			deleted += n
			// n == 0: every item read was restamped since, and is no longer expired.
			if err != nil || len(zs) < sweepBatch || n == 0 {
				return s.sweepExcess(ctx, p, deleted, err)
			}
		}
	}
	return s.sweepExcess(ctx, p, deleted, nil)
}

// sweepExcess removes the oldest items beyond p.MaxItems after the age sweep (err is its
// outcome, returned as is when set).
func (s *Store) sweepExcess(ctx context.Context, p memory.RetentionPolicy, deleted int64, err error) (int64, error) {
	if err != nil || p.MaxItems <= 0 {
		return deleted, err
	}
	for {
		total, err := s.client.ZCard(ctx, s.k.stored()).Result()
		if err != nil {
			return deleted, classify("retention sweep", err)
		}
		excess := total - p.MaxItems
		if excess <= 0 {
			return deleted, nil
		}
		zs, err := s.client.ZRangeWithScores(ctx, s.k.stored(), 0, min(excess, sweepBatch)-1).Result()
		if err != nil {
			return deleted, classify("retention sweep", err)
		}
		n, err := s.sweepItems(ctx, zs)
		deleted += n
		if err != nil || n == 0 {
			return deleted, err
		}
	}
}

// sweepItems runs sweepScript over zs (members and the store times read for them).
func (s *Store) sweepItems(ctx context.Context, zs []goredis.Z) (int64, error) {
	if len(zs) == 0 {
		return 0, nil
	}
	args := make([]any, 0, 1+2*len(zs))
	args = append(args, s.k.prefix)
	for _, z := range zs {
		id, _ := z.Member.(string)
		if _, err := uuid.Parse(id); err != nil {
			return 0, memory.NewAdapterError("retention sweep: the store-time index holds a malformed id", err)
		}
		args = append(args, id, strconv.FormatFloat(z.Score, 'f', -1, 64))
	}
	n, err := sweepScript.Run(ctx, s.client, []string{s.k.stored(), s.k.usage(), s.k.stream()}, args...).Int64()
	if err != nil {
		return 0, classify("retention sweep", err)
	}
	return n, nil
}

// Usage reads the scope's item count (ZCARD of ix:stored) and bytes (ix:usage), both kept
// by the store's transaction and the sweep: O(1), whatever the scope's size.
func (s *Store) Usage(ctx context.Context) (memory.Usage, error) {
	if err := s.checkOpen("usage"); err != nil {
		return memory.Usage{}, err
	}
	pipe := s.client.Pipeline()
	card := pipe.ZCard(ctx, s.k.stored())
	bytes := pipe.HGet(ctx, s.k.usage(), "bytes")
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return memory.Usage{}, classify("usage", err)
	}
	u := memory.Usage{Items: card.Val()}
	if v := bytes.Val(); v != "" {
		b, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return u, memory.NewAdapterError("usage: ix:usage holds a malformed byte count", err)
		}
		u.Bytes = b
	}
	return u, nil
}

// backfillChunk is how many indexed items one backfill script stamps.
const backfillChunk = 500

// backfillScript stamps items a version before retention wrote (no size, not in ix:stored):
// each id whose record is still this adapter's and still unstamped gets the size Go read
// for it, the store time ARGV[3] (the backfill's: nothing says when it was stored, and it
// must not go before its time) and its bytes in ix:usage. KEYS: ix:stored, ix:usage; ARGV:
// the scope's key prefix, the kind marker, the store time, then id and size pairs.
var backfillScript = goredis.NewScript(`
local n = 0
for i = 4, #ARGV, 2 do
	local id = ARGV[i]
	local key = ARGV[1] .. 'item:' .. id
	local ok, kind = pcall(redis.call, 'HGET', key, 'kind')
	if ok and kind == ARGV[2] and not redis.call('ZSCORE', KEYS[1], id) and redis.call('HEXISTS', key, 'size') == 0 then
		redis.call('HSET', key, 'size', ARGV[i + 1])
		redis.call('ZADD', KEYS[1], ARGV[3], id)
		redis.call('HINCRBY', KEYS[2], 'bytes', ARGV[i + 1])
		n = n + 1
	end
end
return n`)

// backfillStored brings the items of a scope written before retention (issue 46) under it,
// once per scope: it walks ix:all (every indexed item) and stamps the unstamped ones at now
// (backfillScript), then marks the scope's config "stored". A new scope is marked at once.
// Instances of an older version still writing to the scope write unstamped items the
// backfill does not see; they come under retention when written again.
func (s *Store) backfillStored(ctx context.Context) error {
	done, err := s.client.HGet(ctx, s.k.config(), "stored").Result()
	if err == nil && done == "1" {
		return nil
	}
	if err != nil && !errors.Is(err, goredis.Nil) {
		return classify("open: retention backfill", err)
	}
	now := s.cfg.now().UnixMicro()
	for start := int64(0); ; start += backfillChunk {
		ids, err := s.client.ZRange(ctx, s.k.all(), start, start+backfillChunk-1).Result()
		if err != nil {
			return classify("open: retention backfill", err)
		}
		if len(ids) == 0 {
			break
		}
		if err := s.backfillChunk(ctx, ids, now); err != nil {
			return err
		}
	}
	if err := s.client.HSet(ctx, s.k.config(), "stored", "1").Err(); err != nil {
		return classify("open: retention backfill", err)
	}
	return nil
}

// backfillChunk reads the records of ids and runs backfillScript with their sizes.
func (s *Store) backfillChunk(ctx context.Context, ids []string, now int64) error {
	pipe := s.client.Pipeline()
	cmds := make([]*goredis.SliceCmd, len(ids))
	for i, raw := range ids {
		cmds[i] = pipe.HMGet(ctx, s.k.prefix+"item:"+raw, "kind", "json")
	}
	// Each command is judged on its own: a foreign key of another type is skipped.
	_, _ = pipe.Exec(ctx)
	args := []any{s.k.prefix, itemKind, now}
	for i, raw := range ids {
		id, err := uuid.Parse(raw)
		if err != nil || cmds[i].Err() != nil {
			continue
		}
		it, err := decodeRecord(id, cmds[i].Val())
		if err != nil || it == nil {
			continue
		}
		args = append(args, raw, memory.ItemSize(*it))
	}
	if len(args) == 3 {
		return nil
	}
	if err := backfillScript.Run(ctx, s.client, []string{s.k.stored(), s.k.usage()}, args...).Err(); err != nil {
		return classify("open: retention backfill", err)
	}
	return nil
}
