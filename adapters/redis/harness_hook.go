package redis

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// indexerCtxKey marks the indexer's context, so that the harness's transport hook can tell
// background index traffic from the commands an explicit call sends.
type indexerCtxKey struct{}

func isIndexerCtx(ctx context.Context) bool {
	v, _ := ctx.Value(indexerCtxKey{}).(bool)
	return v
}

// transportHook is the harness's view of the real transport: a go-redis hook on every
// store the harness makes. It counts the commands explicit calls send (TransportObserver),
// records the native filter sets searches touch (FilterRecorder), and can corrupt item
// payloads in replies (MalformedResponder) or drop the stream entry id from a store's
// acknowledgement (IdentitylessWriter).
type transportHook struct {
	filterPrefix string

	requests     atomic.Int64
	malformed    atomic.Bool
	identityless atomic.Bool

	mu      sync.Mutex
	filters []string
}

var _ goredis.Hook = (*transportHook)(nil)

func (h *transportHook) reset() {
	h.malformed.Store(false)
	h.identityless.Store(false)
	h.mu.Lock()
	h.filters = nil
	h.mu.Unlock()
}

func (h *transportHook) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (h *transportHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		explicit := !isIndexerCtx(ctx)
		if explicit {
			h.requests.Add(1)
			h.observe(cmd)
		}
		err := next(ctx, cmd)
		if explicit {
			h.tamper(cmd)
		}
		return err
	}
}

func (h *transportHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		explicit := !isIndexerCtx(ctx)
		if explicit {
			h.requests.Add(1)
			for _, c := range cmds {
				h.observe(c)
			}
		}
		err := next(ctx, cmds)
		if explicit {
			for _, c := range cmds {
				h.tamper(c)
			}
		}
		return err
	}
}

// observe records every filter set a command names, relative to the scope prefix.
func (h *transportHook) observe(cmd goredis.Cmder) {
	for _, a := range cmd.Args() {
		s, ok := a.(string)
		if !ok {
			continue
		}
		if rel, ok := strings.CutPrefix(s, h.filterPrefix); ok && strings.HasPrefix(rel, "ix:f:") {
			h.mu.Lock()
			if !slices.Contains(h.filters, rel) {
				h.filters = append(h.filters, rel)
			}
			h.mu.Unlock()
		}
	}
}

// tamper rewrites a reply after the server answered, as a faulty service would.
func (h *transportHook) tamper(cmd goredis.Cmder) {
	switch c := cmd.(type) {
	case *goredis.SliceCmd:
		if !h.malformed.Load() || c.Err() != nil {
			return
		}
		vals := c.Val()
		if len(vals) == 2 && vals[0] == itemKind {
			c.SetVal([]any{itemKind, `{"id": malformed`})
		}
	case *goredis.StringCmd:
		if c.Name() == "xadd" && c.Err() == nil && h.identityless.CompareAndSwap(true, false) {
			c.SetVal("")
		}
	}
}

// RequestCount implements the conformance TransportObserver capability: the number of
// requests (single commands or pipelines) explicit calls sent to Redis. The indexer's
// background traffic is not counted.
func (h *Harness) RequestCount() int64 { return h.hook.requests.Load() }

// DocumentedFilter implements the conformance FilterRecorder capability. The documented
// native form of filter key = value is the sorted set ix:f:<digest of key and the value's
// canonical JSON>, named relative to the scope prefix.
func (h *Harness) DocumentedFilter(key string, value []byte) string {
	c, err := canonicalJSON(json.RawMessage(value))
	if err != nil {
		return "invalid JSON value"
	}
	return filterRel(key, c)
}

// RecordedFilters returns the filter sets explicit calls named since the last Reset.
func (h *Harness) RecordedFilters() []string {
	h.hook.mu.Lock()
	defer h.hook.mu.Unlock()
	return slices.Clone(h.hook.filters)
}

// MakeResponsesMalformed implements the conformance MalformedResponder capability: until
// Reset, every item payload in a reply is replaced by broken JSON.
func (h *Harness) MakeResponsesMalformed(context.Context) error {
	h.hook.malformed.Store(true)
	return nil
}

// MakeNextWriteIdentityless implements the conformance IdentitylessWriter capability: the
// next store's acknowledgement loses its stream entry id.
func (h *Harness) MakeNextWriteIdentityless(context.Context) error {
	h.hook.identityless.Store(true)
	return nil
}
