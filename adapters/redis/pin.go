package redis

import (
	"context"
	"fmt"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// versionPin keeps a store's data calls on the server version the instance opened against,
// which its first probe reported and the operator's conformance run verified. Every new
// connection reports its server's version (INFO server, in go-redis' OnConnect), and so does
// every probe; while the last version seen is another one (an upgrade in place, a Sentinel
// failover onto a replica of another version), a data call answers the typed unavailable
// error instead of running, and the probe, which alone may still run, reports the new
// version, which invalidates the manifest until a run has verified that version and the
// instance restarted on it. Without it, the calls between a server's restart on a new version
// and the next probe were acknowledged by a version no run had verified (issue 45 item 4).
type versionPin struct {
	pinned, seen atomic.Pointer[string]
}

// probeKey marks a probe's context: its commands run whatever version the server reports.
type probeKey struct{}

// probing marks ctx as the probe's.
func probing(ctx context.Context) context.Context { return context.WithValue(ctx, probeKey{}, true) }

// pin sets the version the instance opened against.
func (p *versionPin) pin(version string) { p.pinned.Store(&version); p.saw(version) }

// saw records the version a connection or a probe just reported.
func (p *versionPin) saw(version string) { p.seen.Store(&version) }

// refusal is the error a data call gets while the server runs another version than the
// pinned one, or nil.
func (p *versionPin) refusal(ctx context.Context) error {
	pinned, seen := p.pinned.Load(), p.seen.Load()
	if pinned == nil || seen == nil || *seen == *pinned || ctx.Value(probeKey{}) != nil {
		return nil
	}
	return memory.NewUnavailable("redis: connection", fmt.Errorf(
		"the server now runs Redis %s, not Redis %s, the version this instance started on and was verified against; "+
			"calls are refused until the instance restarts on a verified version", *seen, *pinned))
}

// onConnect is the store client's OnConnect: it records the new connection's server version.
// go-redis runs a failover client's OnConnect on its connections to the sentinels too, which
// report their own version: those are skipped.
func (p *versionPin) onConnect(ctx context.Context, cn *goredis.Conn) error {
	info, err := cn.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	if mode, _ := infoField(info, "redis_mode"); mode == "sentinel" {
		return nil
	}
	if v, ok := infoField(info, "redis_version"); ok {
		p.saw(v)
	}
	return nil
}

// pinHook refuses the store's data commands while versionPin says so.
type pinHook struct{ p *versionPin }

// DialHook implements goredis.Hook.
func (pinHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

// ProcessHook implements goredis.Hook.
func (h pinHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if err := h.p.refusal(ctx); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements goredis.Hook.
func (h pinHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if err := h.p.refusal(ctx); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}
