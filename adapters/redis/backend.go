package redis

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	"github.com/agentmem/memory-adapter-operator/adapters/redis/redisdeploy"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// ConnOptions are spec.backend.redis as command-line flags: they override the matching
// parts of the connection string, which stays the one source of the address and credentials.
type ConnOptions struct {
	// DB overrides the logical database (-1 keeps the connection's).
	DB int
	// TLS is "disabled" (redis://), "required" (rediss://) or "" (keep the connection's).
	TLS string
	// PoolSize overrides the pool size (0 keeps the connection's).
	PoolSize int
}

func (o *ConnOptions) addFlags(fs *pflag.FlagSet) backend.Options {
	fs.IntVar(&o.DB, "redis-db", -1, "redis: override the logical database (0-15; -1 keeps the connection's)")
	fs.StringVar(&o.TLS, "redis-tls", "", "redis: override TLS: disabled (redis://) or required (rediss://)")
	fs.IntVar(&o.PoolSize, "redis-pool-size", 0, "redis: override the pool size (1-256; 0 keeps the connection's)")
	return o
}

// Validate refuses values the CRD would refuse.
func (o *ConnOptions) Validate() error {
	switch {
	case o.DB > 15 || o.DB < -1:
		return backend.Usagef("--redis-db %d is outside 0-15", o.DB)
	case o.TLS != "" && o.TLS != "disabled" && o.TLS != "required":
		return backend.Usagef("--redis-tls %q is not disabled or required", o.TLS)
	case o.PoolSize < 0 || o.PoolSize > 256:
		return backend.Usagef("--redis-pool-size %d is outside 1-256", o.PoolSize)
	}
	return nil
}

// ApplyConnection sets the database (the URL path), TLS (the scheme) and pool_size
// (go-redis's URL parameter) on a redis:// URL or a bare host:port, and the database and
// pool_size on a redis-sentinel:// URL. Its errors never quote conn: it may hold a password.
func (o *ConnOptions) ApplyConnection(conn string) (string, error) {
	if o.DB < 0 && o.TLS == "" && o.PoolSize == 0 {
		return conn, nil
	}
	if isSentinelURL(conn) {
		return o.applySentinel(conn)
	}
	if !strings.Contains(conn, "://") {
		conn = "redis://" + conn
	}
	u, err := url.Parse(conn)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return "", backend.Usagef("redis: the connection is not a valid redis:// URL")
	}
	switch o.TLS {
	case "required":
		u.Scheme = "rediss"
	case "disabled":
		u.Scheme = "redis"
	}
	if o.DB >= 0 {
		u.Path = "/" + strconv.Itoa(o.DB)
	}
	if o.PoolSize != 0 {
		q := u.Query()
		q.Set("pool_size", strconv.Itoa(o.PoolSize))
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

func (o *ConnOptions) applySentinel(conn string) (string, error) {
	if o.TLS == "required" {
		return "", backend.Usagef("redis: TLS through Sentinel (" + SentinelScheme + "://) is not supported yet")
	}
	u, err := splitSentinelURL(conn)
	if err != nil {
		return "", backend.Usagef("redis: the connection is not a valid %s:// URL: %v", SentinelScheme, err)
	}
	if o.DB >= 0 {
		u.path = "/" + strconv.Itoa(o.DB)
	}
	if o.PoolSize != 0 {
		q, err := url.ParseQuery(u.query)
		if err != nil {
			return "", backend.Usagef("redis: the connection's query is not valid")
		}
		q.Set("pool_size", strconv.Itoa(o.PoolSize))
		u.query = q.Encode()
	}
	return u.join(), nil
}

// target splits the connection string, a redis:// URL, a redis-sentinel:// URL or a bare
// host:port, into what the store and the harness take. Parse errors never echo the string:
// it may hold a password.
func target(conn string) (addr, username, password, rawURL string, err error) {
	if conn == "" {
		return "", "", "", "", backend.Usagef("redis: no connection (--connection-file or $MEMORY_ADAPTER_CONNECTION: a redis:// or %s:// URL, or host:port)", SentinelScheme)
	}
	if isSentinelURL(conn) {
		// Validated whole here, so a bad one is a usage error at start, not at first use.
		if _, _, err := sentinelTarget(conn); err != nil {
			return "", "", "", "", err
		}
		return "", "", "", conn, nil
	}
	if !strings.Contains(conn, "://") {
		return conn, "", "", "", nil
	}
	u, perr := url.Parse(conn)
	if perr != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return "", "", "", "", backend.Usagef("redis: the connection is not a valid redis:// URL")
	}
	if u.User != nil {
		username = u.User.Username()
		password, _ = u.User.Password()
	}
	return u.Host, username, password, conn, nil
}

// sentinelTarget parses a redis-sentinel:// connection, the adapter's own parameters
// included.
func sentinelTarget(conn string) (*goredis.FailoverOptions, replicaPromise, error) {
	rest, p, err := splitPromise(conn)
	if err != nil {
		return nil, p, backend.Usagef("redis: %v", err)
	}
	fo, err := parseSentinelURL(rest)
	if err != nil {
		return nil, p, backend.Usagef("redis: %v", err)
	}
	return fo, p, nil
}

// harnessTarget is the server the conformance harness talks to: the connection's own, or
// for a redis-sentinel:// connection the primary the sentinels name now (the harness cuts
// one address's transport, so it cannot follow a failover; a run during one fails and is
// repeated by the operator).
func harnessTarget(ctx context.Context, conn string) (addr, username, password string, err error) {
	if !isSentinelURL(conn) {
		addr, username, password, _, err = target(conn)
		return addr, username, password, err
	}
	fo, _, err := sentinelTarget(conn)
	if err != nil {
		return "", "", "", err
	}
	addr, err = resolveMaster(ctx, fo)
	if err != nil {
		return "", "", "", fmt.Errorf("redis: conformance harness: %w", err)
	}
	return addr, fo.Username, fo.Password, nil
}

// storeOptions addresses the server of c, by URL when the connection is one.
func storeOptions(c backend.Config) (Options, error) {
	addr, _, _, rawURL, err := target(c.Connection)
	if err != nil {
		return Options{}, err
	}
	opts := Options{Scope: c.Scope}
	if rawURL != "" {
		opts.URL = rawURL
	} else {
		opts.Addr = addr
	}
	return opts, nil
}

func init() {
	backend.Provide(redisdeploy.Name, backend.Runtime{
		Flags: func(fs *pflag.FlagSet) backend.Options { return new(ConnOptions).addFlags(fs) },
		Open: func(ctx context.Context, c backend.Config) (memory.ExternalStore, error) {
			opts, err := storeOptions(c)
			if err != nil {
				return nil, err
			}
			opts.Scope = c.ScopeOrDefault()
			opts.SupportedFilters, opts.AdapterID, opts.RequestTimeout = c.Filters, c.AdapterID, c.RequestTimeout
			opts.StoreRetry, opts.RetrieveRetry, opts.SearchRetry = c.Retry[0], c.Retry[1], c.Retry[2]
			// A stable consumer name lets a restarted container re-read its own pending index
			// entries at once instead of waiting for another instance to claim them.
			opts.ConsumerName = c.PodName
			return Open(ctx, opts)
		},
		// The matrix runs in a disposable scope on the same server (an empty scope means a
		// fresh random "conformance-…" scope, dropped at the end).
		Harness: func(ctx context.Context, c backend.Config) (conformance.Harness, error) {
			if strings.HasPrefix(c.Connection, "rediss://") {
				// The harness reaches the server through a plain TCP proxy to cut the
				// transport; saying so beats a handshake error in the first case.
				return nil, backend.Usagef("redis: the conformance harness does not speak TLS yet (rediss://, --redis-tls required)")
			}
			addr, user, pass, err := harnessTarget(ctx, c.Connection)
			if err != nil {
				return nil, err
			}
			// The logical database and pool size do not matter to the matrix: it runs in a
			// disposable scope of its own.
			return NewHarness(ctx, HarnessOptions{
				Addr: addr, Username: user, Password: pass, Scope: c.Scope,
				SupportedFilters: c.Filters, AdapterID: c.AdapterID,
			})
		},
		Purge: func(ctx context.Context, c backend.Config) (backend.PurgeResult, error) {
			opts, err := storeOptions(c)
			if err != nil {
				return backend.PurgeResult{}, err
			}
			r, err := PurgeScope(ctx, opts)
			return backend.PurgeResult{Items: r.Items, Keys: r.Keys}, err
		},
	})
}
