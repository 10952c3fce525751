package main

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// connOptions are the backend connection settings a MemoryAdapter's spec.backend.postgres
// and spec.backend.redis carry. They override the matching parameters of the connection
// string, so the user's Secret stays the one source of the address and credentials while
// the spec states the policy (TLS, pool sizes) where a reviewer can see it.
type connOptions struct {
	PostgresSSLMode  string
	PostgresMaxConns int
	RedisDB          int
	RedisTLS         string
	RedisPoolSize    int
}

// postgresSSLModes are the sslmode values --postgres-sslmode accepts (the CRD's enum).
var postgresSSLModes = []string{"disable", "require", "verify-ca", "verify-full"}

func (o *connOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PostgresSSLMode, "postgres-sslmode", "", "postgres: override the connection's sslmode ("+strings.Join(postgresSSLModes, ", ")+")")
	fs.IntVar(&o.PostgresMaxConns, "postgres-max-conns", 0, "postgres: override the pool's maximum connections (1-256; 0 keeps the connection's)")
	fs.IntVar(&o.RedisDB, "redis-db", -1, "redis: override the logical database (0-15; -1 keeps the connection's)")
	fs.StringVar(&o.RedisTLS, "redis-tls", "", "redis: override TLS: disabled (redis://) or required (rediss://)")
	fs.IntVar(&o.RedisPoolSize, "redis-pool-size", 0, "redis: override the pool size (1-256; 0 keeps the connection's)")
}

// apply returns the connection string with the overrides set. Its errors never quote the
// connection string: it may hold a password.
func (o connOptions) apply(backend, conn string) (string, error) {
	switch backend {
	case "postgres":
		if o.PostgresSSLMode == "" && o.PostgresMaxConns == 0 {
			return conn, nil
		}
		return o.applyPostgres(conn)
	case "redis":
		if o.RedisDB < 0 && o.RedisTLS == "" && o.RedisPoolSize == 0 {
			return conn, nil
		}
		return o.applyRedis(conn)
	}
	return conn, nil
}

func (o connOptions) validate(backend string) error {
	pg := o.PostgresSSLMode != "" || o.PostgresMaxConns != 0
	rd := o.RedisDB >= 0 || o.RedisTLS != "" || o.RedisPoolSize != 0
	switch {
	case pg && backend != "postgres":
		return usageError("--postgres-* flags need --backend postgres")
	case rd && backend != "redis":
		return usageError("--redis-* flags need --backend redis")
	case o.PostgresSSLMode != "" && !slices.Contains(postgresSSLModes, o.PostgresSSLMode):
		return usageError("--postgres-sslmode %q is not one of %s", o.PostgresSSLMode, strings.Join(postgresSSLModes, ", "))
	case o.PostgresMaxConns < 0 || o.PostgresMaxConns > 256:
		return usageError("--postgres-max-conns %d is outside 1-256", o.PostgresMaxConns)
	case o.RedisDB > 15 || o.RedisDB < -1:
		return usageError("--redis-db %d is outside 0-15", o.RedisDB)
	case o.RedisTLS != "" && o.RedisTLS != "disabled" && o.RedisTLS != "required":
		return usageError("--redis-tls %q is not disabled or required", o.RedisTLS)
	case o.RedisPoolSize < 0 || o.RedisPoolSize > 256:
		return usageError("--redis-pool-size %d is outside 1-256", o.RedisPoolSize)
	}
	return nil
}

// applyPostgres sets sslmode and pool_max_conns (pgxpool's own parameter) on a URL or a
// keyword/value connection string.
func (o connOptions) applyPostgres(conn string) (string, error) {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			return "", usageError("postgres: the connection is not a valid postgres:// URL")
		}
		q := u.Query()
		if o.PostgresSSLMode != "" {
			q.Set("sslmode", o.PostgresSSLMode)
		}
		if o.PostgresMaxConns != 0 {
			q.Set("pool_max_conns", strconv.Itoa(o.PostgresMaxConns))
		}
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// Keyword/value form: a later keyword overrides an earlier one.
	out := strings.TrimSpace(conn)
	if o.PostgresSSLMode != "" {
		out += " sslmode=" + o.PostgresSSLMode
	}
	if o.PostgresMaxConns != 0 {
		out += fmt.Sprintf(" pool_max_conns=%d", o.PostgresMaxConns)
	}
	return out, nil
}

// applyRedis sets the database (the URL path), TLS (the scheme) and pool_size (go-redis's
// URL parameter) on a redis:// URL or a bare host:port.
func (o connOptions) applyRedis(conn string) (string, error) {
	if !strings.Contains(conn, "://") {
		conn = "redis://" + conn
	}
	u, err := url.Parse(conn)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return "", usageError("redis: the connection is not a valid redis:// URL")
	}
	switch o.RedisTLS {
	case "required":
		u.Scheme = "rediss"
	case "disabled":
		u.Scheme = "redis"
	}
	if o.RedisDB >= 0 {
		u.Path = "/" + strconv.Itoa(o.RedisDB)
	}
	if o.RedisPoolSize != 0 {
		q := u.Query()
		q.Set("pool_size", strconv.Itoa(o.RedisPoolSize))
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}
