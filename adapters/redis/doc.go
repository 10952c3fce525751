// Package redis is the Redis-backed memory adapter: items are stored so that retrieve is a
// direct identity read, while search is served by an index that a background indexer
// maintains from a Redis Stream through a consumer group. Search is therefore genuinely
// eventually consistent, and the adapter's manifest says so.
//
// Layout (every key lives under one disposable scope prefix "mao:{<scope>}:", the braces
// making it a Redis Cluster hash tag so that a store's transaction stays in one slot):
//
//	item:<uuid>    hash {kind: "mao.memory-item/v1", json: <exact wire JSON of the item>,
//	               size: <its memory.ItemSize>}
//	stream         the index change log; one entry {id: <uuid>} per acknowledged store
//	ix:all         sorted set of indexed ids, scored by first-index position (insertion order)
//	ix:t:<hash>    sorted set per tag, same scores
//	ix:f:<hash>    sorted set per (supported filter key, canonical JSON value), same scores
//	ix:doc:<uuid>  the index memberships and search text last applied for an item, so
//	               re-indexing can remove stale ones
//	ix:g:<hex trigram>:<chunk>  bitmap per trigram of the search text and chunk of 65,536
//	               positions: bit (position mod 65,536) set for each item holding it
//	ix:gc          hash: per trigram, how many items hold it
//	ix:seq         counter handing out insertion positions
//	ix:stored      sorted set of stored ids, scored by store time (Unix microseconds, the
//	               adapter's clock), written in the store's transaction: retention's index
//	ix:usage       hash {bytes: the sum of the items' memory.ItemSize}, kept by the store's
//	               transaction and the retention sweep
//	config         the scope's settings (layout version 2, indexed filter keys, whether the
//	               text index is complete, whether the retention backfill has run)
//
// Store writes the item and appends the stream entry in one MULTI/EXEC transaction, so an
// acknowledged store is both retrievable at once and queued for indexing. The indexer reads
// the stream with XREADGROUP, applies a batch under WATCH in one transaction that also XACKs
// the entries, and claims entries left pending by a crashed consumer with XAUTOCLAIM. Search
// reads the index only, fetches the hits by id and applies lionagi's predicates in Go
// (memory.Matches), so query text is always literal.
//
// docs/adapters/redis.md is the companion documentation the seed's D4 asks for: connection
// lifecycle, timeouts, retries, scope, duplicate ids, persistence and what a crash can lose,
// and the health evidence that invalidates the manifest.
package redis
