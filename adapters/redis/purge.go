package redis

import (
	"context"
	"errors"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// purgeBatch is how many keys one SCAN step asks for, and so bounds one UNLINK.
const purgeBatch = 500

// PurgeResult is what PurgeScope removed.
type PurgeResult struct {
	// Items is the number of memory items deleted.
	Items int64
	// Keys is the number of keys unlinked: the items and the scope's index, stream and
	// config.
	Keys int64
}

// PurgeScope deletes every memory item of opts.Scope and of its sub-scopes, and their own
// bookkeeping (the
// search index, the index stream with its consumer group, the config), so a later adapter
// on the scope starts empty. Connection options and Scope are used as Open uses them; the
// rest is ignored. No indexer is started. Other scopes are never touched: every key of a
// scope carries the "mao:{<scope>}:" prefix, and the scope alphabet has no glob
// metacharacter. A key at an item identity without the adapter's kind marker (another
// program's record, which retrieve never coerces) is left alone.
//
// The purge is idempotent but not atomic: run it when no adapter instance writes to the
// scope any more, and again after a failure. Errors never contain the password; an
// unreachable server is memory.MemoryAdapterUnavailable, a refusal by the server
// memory.MemoryAdapterError.
func PurgeScope(ctx context.Context, opts Options) (PurgeResult, error) {
	var res PurgeResult
	cfg, err := opts.resolve()
	if err != nil {
		return res, memory.NewAdapterError("purge: invalid options", err)
	}
	c := newClient(cfg, 0, nil)
	defer func() { _ = c.Close() }()
	k := newKeys(cfg.scope)
	if err := purgeMatching(ctx, c, k.pattern(), func(string) keys { return k }, &res); err != nil {
		return res, err
	}
	// The scope's sub-scopes (memory.SubScope) go with it. Their prefixes start with the
	// scope's name and the separator, which no scope's own name contains, so the pattern
	// matches them and nothing else; each key is judged under its own sub-scope's prefix.
	return res, purgeMatching(ctx, c, k.subScopesPattern(), keysOfKey, &res)
}

// purgeMatching unlinks what purgeable picks of every key matching pattern, judging each key
// under the keys keysOf gives it, and adds the counts to res.
func purgeMatching(ctx context.Context, c *goredis.Client, pattern string, keysOf func(key string) keys, res *PurgeResult) error {
	var cursor uint64
	for {
		batch, next, err := c.Scan(ctx, cursor, pattern, purgeBatch).Result()
		if err != nil {
			return classify("purge: scan", err)
		}
		byScope := map[keys][]string{}
		for _, key := range batch {
			byScope[keysOf(key)] = append(byScope[keysOf(key)], key)
		}
		for k, keysOfScope := range byScope {
			doomed, items, err := purgeable(ctx, c, k, keysOfScope)
			if err != nil {
				return err
			}
			if len(doomed) > 0 {
				n, err := c.Unlink(ctx, doomed...).Result()
				if err != nil {
					return classify("purge: unlink", err)
				}
				res.Keys += n
				res.Items += items
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// purgeable picks the keys of one SCAN batch the purge removes: the adapter's items (by
// their kind marker) and its bookkeeping keys; it also returns how many are items.
func purgeable(ctx context.Context, c *goredis.Client, k keys, batch []string) ([]string, int64, error) {
	var doomed, itemKeys []string
	for _, key := range batch {
		rel := strings.TrimPrefix(key, k.prefix)
		switch {
		case strings.HasPrefix(rel, "item:"):
			itemKeys = append(itemKeys, key)
		case strings.HasPrefix(rel, "ix:"), rel == "stream", rel == "config":
			doomed = append(doomed, key)
		}
	}
	if len(itemKeys) == 0 {
		return doomed, 0, nil
	}
	pipe := c.Pipeline()
	kinds := make([]*goredis.StringCmd, len(itemKeys))
	for i, key := range itemKeys {
		kinds[i] = pipe.HGet(ctx, key, "kind")
	}
	// Exec's error is the first failed command's; each command is judged on its own below.
	_, _ = pipe.Exec(ctx)
	var items int64
	for i, cmd := range kinds {
		kind, err := cmd.Result()
		switch {
		case err == nil && kind == itemKind:
			doomed = append(doomed, itemKeys[i])
			items++
		case err == nil, errors.Is(err, goredis.Nil), isServerReply(err) && strings.HasPrefix(err.Error(), "WRONGTYPE"):
			// Another program's record at an item identity: not ours to delete.
		default:
			return nil, 0, classify("purge: read item kind", err)
		}
	}
	return doomed, items, nil
}
