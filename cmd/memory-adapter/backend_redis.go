package main

import (
	"context"
	"net/url"
	"os"
	"strings"

	"github.com/agentmem/memory-adapter-operator/adapters/redis"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// redisTarget splits the connection string, a redis:// URL or a bare host:port, into what
// the store and the harness take. Parse errors never echo the string: it may hold a password.
func redisTarget(conn string) (addr, username, password, rawURL string, err error) {
	if conn == "" {
		return "", "", "", "", usageError("redis: no connection (--connection-file or $%s: a redis:// URL or host:port)", connectionEnv)
	}
	if !strings.Contains(conn, "://") {
		return conn, "", "", "", nil
	}
	u, perr := url.Parse(conn)
	if perr != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return "", "", "", "", usageError("redis: the connection is not a valid redis:// URL")
	}
	if u.User != nil {
		username = u.User.Username()
		password, _ = u.User.Password()
	}
	return u.Host, username, password, conn, nil
}

func init() {
	backends["redis"] = backend{
		open: func(ctx context.Context, c *backendConfig) (memory.ExternalStore, error) {
			addr, _, _, rawURL, err := redisTarget(c.connection)
			if err != nil {
				return nil, err
			}
			opts := redis.Options{Scope: c.Scope, SupportedFilters: c.filters(), AdapterID: c.AdapterID, RequestTimeout: c.RequestTimeout,
				StoreRetry: c.Retry[0], RetrieveRetry: c.Retry[1], SearchRetry: c.Retry[2]}
			if opts.Scope == "" {
				opts.Scope = "default"
			}
			// A stable consumer name lets a restarted container re-read its own pending index
			// entries at once instead of waiting for another instance to claim them. The
			// Deployment sets POD_NAME through the downward API.
			opts.ConsumerName = os.Getenv("POD_NAME")
			if rawURL != "" {
				opts.URL = rawURL
			} else {
				opts.Addr = addr
			}
			return redis.Open(ctx, opts)
		},
		// The matrix runs in a disposable scope on the same server (empty --scope means a
		// fresh random "conformance-…" scope, dropped at the end).
		harness: func(ctx context.Context, c *backendConfig) (conformance.Harness, error) {
			addr, user, pass, rawURL, err := redisTarget(c.connection)
			if err != nil {
				return nil, err
			}
			if strings.HasPrefix(rawURL, "rediss://") {
				// The harness reaches the server through a plain TCP proxy to cut the
				// transport; saying so beats a handshake error in the first case.
				return nil, usageError("redis: the conformance harness does not speak TLS yet (rediss://, --redis-tls required)")
			}
			// The logical database and pool size do not matter to the matrix: it runs in a
			// disposable scope of its own.
			return redis.NewHarness(ctx, redis.HarnessOptions{
				Addr: addr, Username: user, Password: pass, Scope: c.Scope,
				SupportedFilters: c.filters(), AdapterID: c.AdapterID,
			})
		},
	}
}
