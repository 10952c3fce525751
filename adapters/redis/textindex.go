package redis

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// The text index (layout 2): for every distinct three-byte sequence (trigram) of an item's
// search text (memory.SearchText, the lower-cased text memory.Matches looks in) a bit at the
// item's search position in the bitmap ix:g:<hex trigram>:<position / gramChunk>. An item
// containing a needle contains each of the needle's trigrams, so the AND of the needle's
// bitmaps holds every hit; every candidate is then fetched and checked with memory.Matches,
// so a false candidate (trigrams present, needle absent) costs a fetch but never a wrong
// hit. Bitmaps, not sorted sets: a member of a sorted set costs about 100 bytes and an item
// has about 40 distinct trigrams, so a set per trigram would cost several GB per million
// items; a bit costs an eighth of a byte where the trigram is common, and at most a chunk
// (8 KiB) per trigram and chunk where it is rare.

// gramChunkShift cuts each trigram's bitmap into keys of 1<<gramChunkShift positions, so a
// trigram that only occurs at high positions costs one chunk, not a bitmap from position 0.
const gramChunkShift = 16

// minIndexedNeedle is the shortest needle (in bytes, lower-cased) the text index answers;
// shorter needles have no trigram and walk the scope as before.
const minIndexedNeedle = 3

// Scope config fields of the text index. configText is "1" while every item's trigrams are
// in the index; anything else (a scope migrated from layout 1, or one where a layout-1
// instance was seen indexing) means a backfill is due and text searches walk the scope.
// configTextGen counts the times the index was declared incomplete, so a backfill that
// started before the last such time cannot declare it complete.
const (
	configText    = "text"
	configTextGen = "textgen"
)

// legacyGroupName is the consumer group of layout 1, whose instances index without
// trigrams. Its presence on the stream means such an instance may be indexing now.
const legacyGroupName = "indexer"

// gramPrefix is the relative key prefix of the trigram bitmaps.
const gramPrefix = "ix:g:"

// trigrams returns the distinct three-byte sequences of text, sorted. Bytes, not runes:
// strings.Contains is a byte comparison, so every byte trigram of a needle occurs in any
// text containing it, whatever the encoding.
func trigrams(text string) []string {
	if len(text) < 3 {
		return nil
	}
	out := make([]string, 0, len(text)-2)
	for i := 0; i+3 <= len(text); i++ {
		out = append(out, text[i:i+3])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// gramRel is the relative key of the chunk of trigram g's bitmap that holds position pos,
// and offset the bit of pos in it.
func gramRel(g string, pos int64) (rel string, offset int64) {
	return gramPrefix + hex.EncodeToString([]byte(g)) + ":" + strconv.FormatInt(pos>>gramChunkShift, 10),
		pos & (1<<gramChunkShift - 1)
}

// textEntry is what the index holds for one item's text: its search text and trigrams.
type textEntry struct {
	text  string
	grams []string
}

func textEntryOf(it memory.Item) textEntry {
	t := memory.SearchText(it.ContentJSON())
	return textEntry{text: t, grams: trigrams(t)}
}

// docRecord is the JSON part of an ix:doc value of layout 2: the sets an item is a member
// of and, for a text longer than its packed trigrams, those trigrams (base64 of their
// concatenation). Otherwise the search text itself follows the JSON after a newline (JSON
// never holds a raw one), raw, so that the text index's script can check a candidate's
// text without decoding anything (textCandidates). Either way the index record says which
// bits the item's text set, so re-indexing a changed or deleted item clears exactly those.
type docRecord struct {
	V       int      `json:"v"`
	Members []string `json:"m"`
	Grams   string   `json:"g,omitempty"`
}

// encodeDoc renders an item's ix:doc value.
func encodeDoc(members []string, te textEntry) []byte {
	d := docRecord{V: 2, Members: members}
	if members == nil {
		d.Members = []string{}
	}
	packed := base64.StdEncoding.EncodeToString([]byte(strings.Join(te.grams, "")))
	if len(packed) < len(te.text) {
		d.Grams = packed
	}
	b, _ := json.Marshal(d)
	if d.Grams == "" {
		b = append(append(b, '\n'), te.text...)
	}
	return b
}

// decodeDoc reads an ix:doc value of either layout. A layout-1 value (a JSON array of
// members) set no trigram bits. An unreadable value yields nothing, as layout 1 did: its
// stale memberships and bits can only add candidates, which search re-checks.
func decodeDoc(raw string) (members, grams []string) {
	if strings.HasPrefix(raw, "[") {
		_ = json.Unmarshal([]byte(raw), &members)
		return members, nil
	}
	head, text, hasText := strings.Cut(raw, "\n")
	var d docRecord
	if err := json.Unmarshal([]byte(head), &d); err != nil {
		return nil, nil
	}
	if hasText {
		return d.Members, trigrams(text)
	}
	packed, err := base64.StdEncoding.DecodeString(d.Grams)
	if err != nil || len(packed)%3 != 0 {
		return d.Members, nil
	}
	for i := 0; i < len(packed); i += 3 {
		grams = append(grams, string(packed[i:i+3]))
	}
	return d.Members, grams
}

// textWrites collects one transaction's text index changes (a batch of items), so that each
// bitmap chunk gets one BITFIELD and each trigram count one HINCRBY however many of the
// batch's items share them: about 1,300 commands for 250 benchmark items instead of 20,000.
type textWrites struct {
	bits   map[string][]any // relative chunk key -> BITFIELD arguments
	counts map[string]int64 // hex trigram -> change of its count
}

func newTextWrites() *textWrites {
	return &textWrites{bits: map[string][]any{}, counts: map[string]int64{}}
}

// add records one item's changes at position pos: its bit set for each of grams (again, if
// already set: cheap, and it repairs an index record a layout-1 instance rewrote without
// trigrams), cleared for each trigram only oldGrams (its previous text's, sorted) had, and
// the trigram counts (ix:gc) moved by the difference, so that a count is the number of
// items whose index record lists the trigram.
func (w *textWrites) add(pos int64, grams, oldGrams []string) {
	set := func(g string, v int, by int64) {
		rel, off := gramRel(g, pos)
		w.bits[rel] = append(w.bits[rel], "SET", "u1", off, v)
		if by != 0 {
			w.counts[hex.EncodeToString([]byte(g))] += by
		}
	}
	for _, g := range grams {
		if _, found := slices.BinarySearch(oldGrams, g); found {
			set(g, 1, 0)
		} else {
			set(g, 1, 1)
		}
	}
	for _, g := range oldGrams {
		if _, found := slices.BinarySearch(grams, g); !found {
			set(g, 0, -1)
		}
	}
}

// queue queues the collected changes on p.
func (w *textWrites) queue(ctx context.Context, p goredis.Pipeliner, k keys) {
	for rel, args := range w.bits {
		p.BitField(ctx, k.abs(rel), args...)
	}
	for g, by := range w.counts {
		if by != 0 {
			p.HIncrBy(ctx, k.gramCounts(), g, by)
		}
	}
}

// maxGramKeys bounds how many of a needle's trigrams (the rarest) one chunk's AND reads:
// past a few, another trigram removes few candidates and costs a chunk's bytes.
const maxGramKeys = 8

// textCandidates finds, in one server-side call, the ids at search positions from `from` on
// whose bits are set for the needle's selective trigrams, in position order, at most `want`
// of them. The trigram counts (ix:gc) decide first: a trigram no item has answers "no hit"
// at once, whatever the scope's size; trigrams on more than half the items are left out
// (they exclude little and would cost their bitmaps' bytes), and if that leaves none the
// answer is "walk" (the candidates are most items anyway). Then per chunk of positions:
// one EXISTS of the kept trigrams' chunk keys (the rarest first, at most maxGramKeys), one
// BITOP AND into a scratch key, BITPOS to jump to each next non-zero byte (a Lua scan of an
// 8 KiB chunk of zeros cost more than the rest of the search), and the set bits mapped to
// ids through ix:all. A candidate whose index record holds its search text (docRecord) is
// dropped here unless that text contains the needle (a plain string.find, the byte
// comparison strings.Contains makes): most false candidates then never cross the wire nor
// get decoded, and the scope's size shows less in a rare needle's time. The record is
// written with the bits, so it describes the same (last indexed) text; every candidate
// returned is still checked by collect. One call checks at most 4 × want + 4,096
// candidates, so a needle with many false candidates cannot hold the server for long. The scratch key is written and deleted inside the script and not
// replicated, so a search leaves nothing in the data set, the AOF or a replica.
// Replies: {0} the index is incomplete or a layout-1 indexer group exists; {2} walk;
// {1, next, ids...}, next being the position to continue from, or -1 after the last one.
var textCandidates = goredis.NewScript(`
if redis.call('HGET', KEYS[1], 'text') ~= '1' then return {0} end
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[2])
if ok then
  for _, g in ipairs(groups) do
    for i = 1, #g, 2 do
      if g[i] == 'name' and g[i + 1] == ARGV[2] then return {0} end
    end
  end
end
local counts = redis.call('HMGET', KEYS[6], unpack(ARGV, 9))
local total = redis.call('ZCARD', KEYS[5])
local kept = {}
for i, c in ipairs(counts) do
  local n = tonumber(c) or 0
  if n <= 0 then return {1, -1} end
  if n * 2 <= total then kept[#kept + 1] = {n, ARGV[8 + i]} end
end
if #kept == 0 then return {2} end
table.sort(kept, function(a, b) return a[1] < b[1] end)
redis.set_repl(redis.REPL_NONE)
local last = tonumber(redis.call('GET', KEYS[4]) or '0')
local pos = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local size = tonumber(ARGV[5])
local nkeys = math.min(#kept, tonumber(ARGV[6]))
local out = {1, -1}
local n = 0
local checked = 0
local budget = 4 * want + 4096
while pos <= last do
  local chunk = math.floor(pos / size)
  local base = chunk * size
  local ks = {}
  for i = 1, nkeys do ks[i] = ARGV[1] .. kept[i][2] .. ':' .. chunk end
  if redis.call('EXISTS', unpack(ks)) == #ks then
    local src = ks[1]
    if #ks > 1 then
      redis.call('BITOP', 'AND', KEYS[3], unpack(ks))
      src = KEYS[3]
    end
    local byte = math.floor((pos - base) / 8)
    while true do
      local first = redis.call('BITPOS', src, 1, byte)
      if first < 0 then break end
      -- BITPOS skips zero bytes in C; the window after a set bit is read in Lua.
      local off = math.floor(first / 8)
      local bits = redis.call('GETRANGE', src, off, off + 31)
      for at = 1, #bits do
        local v = string.byte(bits, at)
        if v ~= 0 then
          for j = 0, 7 do
            local p = base + (off + at - 1) * 8 + j
            if p >= pos and math.floor(v / 2 ^ (7 - j)) % 2 == 1 then
              local id = redis.call('ZRANGEBYSCORE', KEYS[5], p, p, 'LIMIT', 0, 1)[1]
              if id then
                local doc = redis.call('GET', ARGV[7] .. id)
                local nl = doc and string.find(doc, '\n', 1, true)
                if not nl or string.find(doc, ARGV[8], nl + 1, true) then
                  out[#out + 1] = id
                  n = n + 1
                end
              end
              checked = checked + 1
              if n >= want or checked >= budget then
                if #ks > 1 then redis.call('DEL', KEYS[3]) end
                out[2] = p + 1
                return out
              end
            end
          end
        end
      end
      byte = off + 32
    end
    if #ks > 1 then redis.call('DEL', KEYS[3]) end
  end
  pos = base + size
end
return out
`)

// errTextIndexUnusable makes scanText's caller walk the scope instead.
var errTextIndexUnusable = errors.New("text index unusable")

// scanText answers a text-only query of at least minIndexedNeedle bytes from the text index:
// candidates in position (insertion) order, each fetched and checked by collect, pages
// growing from the limit to 1,024 candidates; a needle made only of trigrams most items have
// walks the scope, as it would without the index. It returns errTextIndexUnusable while the
// index is incomplete (a backfill is due or running, or a layout-1 instance may be
// indexing) and when the server refuses the script's scratch write (OOM under maxmemory):
// the caller then walks the scope, so an incomplete index never costs a hit.
func (s *Store) scanText(ctx context.Context, q memory.Query, lower string) ([]memory.Item, error) {
	grams := trigrams(lower)
	args := []any{s.k.abs(gramPrefix), legacyGroupName, int64(0), 0, int64(1) << gramChunkShift, maxGramKeys, s.k.abs("ix:doc:"), lower}
	for _, g := range grams {
		args = append(args, hex.EncodeToString([]byte(g)))
	}
	keys := []string{s.k.config(), s.k.stream(), s.k.abs("ix:scratch"), s.k.seq(), s.k.all(), s.k.gramCounts()}
	want := min(max(q.Limit, 20), fetchChunk)
	from := int64(0)
	out := []memory.Item{}
	for {
		args[2], args[3] = from, want
		var res []any
		err := s.withReadRetry(ctx, s.cfg.searchRetry, func() error {
			var err error
			res, err = textCandidates.Run(ctx, s.client, keys, args...).Slice()
			return err
		})
		if err != nil {
			if isServerReply(err) && strings.HasPrefix(err.Error(), "OOM") {
				return nil, errTextIndexUnusable
			}
			return nil, classify("search", err)
		}
		if len(res) == 1 && res[0] == int64(0) {
			return nil, errTextIndexUnusable
		}
		if len(res) == 1 && res[0] == int64(2) {
			return s.scanSet(ctx, s.k.all(), q, lower)
		}
		if len(res) < 2 || res[0] != int64(1) {
			return nil, memory.NewAdapterError("search: malformed text index reply", nil)
		}
		next, _ := res[1].(int64)
		ids := make([]string, 0, len(res)-2)
		for _, v := range res[2:] {
			id, _ := v.(string)
			ids = append(ids, id)
		}
		var done bool
		out, done, err = s.collect(ctx, ids, q, lower, out)
		if err != nil {
			return nil, err
		}
		if done || next < 0 {
			return out, nil
		}
		from, want = next, min(want*4, 1024)
	}
}

// scopeScript creates or checks a scope's config atomically and keeps the text index's
// completeness honest (KEYS config, ix:all, stream; ARGV layout, filters JSON, legacy layout,
// legacy group). A new scope's index is complete, unless ix:all already holds items (a
// config deleted under live data). A layout-1 scope with the same filter set is migrated: layout 2,
// the index declared incomplete (a backfill is due) and layout 1's consumer group
// destroyed, so layout-1 instances still running stop indexing (their next read fails and
// their config check refuses layout 2) and stop trimming the stream under this layout's
// group. If that group is back (a layout-1 instance's probe recreates it), it is destroyed
// again and the index declared incomplete again: entries it trimmed may never have reached
// this layout's group. It returns the config's layout and filter set.
var scopeScript = goredis.NewScript(`
local function demote()
  redis.call('HSET', KEYS[1], 'text', '0')
  redis.call('HINCRBY', KEYS[1], 'textgen', 1)
end
if redis.call('HSETNX', KEYS[1], 'layout', ARGV[1]) == 1 then
  if redis.call('EXISTS', KEYS[2]) == 1 then demote() else redis.call('HSET', KEYS[1], 'text', '1') end
end
redis.call('HSETNX', KEYS[1], 'filters', ARGV[2])
local layout = redis.call('HGET', KEYS[1], 'layout')
local filters = redis.call('HGET', KEYS[1], 'filters')
if layout == ARGV[3] and filters == ARGV[2] then
  redis.call('HSET', KEYS[1], 'layout', ARGV[1])
  layout = ARGV[1]
  demote()
end
if layout == ARGV[1] then
  local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[3])
  if ok then
    for _, g in ipairs(groups) do
      for i = 1, #g, 2 do
        if g[i] == 'name' and g[i + 1] == ARGV[4] then
          redis.call('XGROUP', 'DESTROY', KEYS[3], ARGV[4])
          demote()
        end
      end
    end
  end
end
return {layout, filters}
`)

// finishScript declares the text index complete (KEYS config, stream; ARGV the textgen read
// before the backfill pass, legacy group) unless it was declared incomplete since, or a
// layout-1 group exists; it returns 1 when the index is complete, and also when the scope's
// config is gone (the scope was dropped: whoever recreates it decides afresh, and a config
// holding only this field would look like a scope of no layout).
var finishScript = goredis.NewScript(`
if not redis.call('HGET', KEYS[1], 'layout') then return 1 end
if redis.call('HGET', KEYS[1], 'text') == '1' then return 1 end
if (redis.call('HGET', KEYS[1], 'textgen') or '') ~= ARGV[1] then return 0 end
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[2])
if ok then
  for _, g in ipairs(groups) do
    for i = 1, #g, 2 do
      if g[i] == 'name' and g[i + 1] == ARGV[2] then return 0 end
    end
  end
end
redis.call('HSET', KEYS[1], 'text', '1')
return 1
`)

// maybeBackfill starts the backfill goroutine if the text index is incomplete and none runs.
func (ix *indexer) maybeBackfill() error {
	s := ix.s
	text, err := ix.c.HGet(ix.ctx, s.k.config(), configText).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return err
	}
	if text == "1" || !ix.filling.CompareAndSwap(false, true) {
		return nil
	}
	ix.wg.Add(1)
	go ix.backfill()
	return nil
}

// backfill runs passes until one completes the text index, retrying after failures with
// the indexer's backoff. Searches walk the scope meanwhile, so they stay exact.
func (ix *indexer) backfill() {
	defer ix.wg.Done()
	defer ix.filling.Store(false)
	backoff := time.Duration(0)
	for ix.ctx.Err() == nil {
		done, err := ix.backfillPass()
		if err == nil && done {
			return
		}
		// A failure, or the index was declared incomplete again during the pass (a
		// layout-1 instance is still about): another pass after a pause.
		var wait time.Duration
		backoff, wait = nextBackoff(backoff)
		if !ix.sleep(wait) {
			return
		}
	}
}

// backfillPass re-indexes every item record of the scope (SCAN, in batches through the
// indexer's own transaction, so it never races a stream entry's indexing) and then declares
// the index complete if nothing declared it incomplete since the pass began. Every item
// that exists when the pass begins is visited; one stored during the pass is also indexed
// by its stream entry.
func (ix *indexer) backfillPass() (bool, error) {
	ctx, s := ix.ctx, ix.s
	vals, err := ix.c.HMGet(ctx, s.k.config(), configText, configTextGen).Result()
	if err != nil {
		return false, err
	}
	if vals[0] == "1" {
		return true, nil
	}
	gen, _ := vals[1].(string)
	var cursor uint64
	for {
		found, next, err := ix.c.Scan(ctx, cursor, s.k.prefix+"item:*", 1000).Result()
		if err != nil {
			return false, err
		}
		var ids []uuid.UUID
		for _, key := range found {
			if id, err := uuid.Parse(strings.TrimPrefix(key, s.k.prefix+"item:")); err == nil {
				ids = append(ids, id)
			}
		}
		for batch := range slices.Chunk(ids, max(s.cfg.batch, 1)) {
			if err := ix.applyIDs(batch, nil); err != nil {
				return false, err
			}
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	done, err := finishScript.Run(ctx, ix.c, []string{s.k.config(), s.k.stream()}, gen, legacyGroupName).Int()
	return done == 1, err
}
