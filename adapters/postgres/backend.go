package postgres

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	"github.com/agentmem/memory-adapter-operator/adapters/postgres/postgresdeploy"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// sslModes are the sslmode values --postgres-sslmode accepts (the CRD's enum).
var sslModes = []string{"disable", "require", "verify-ca", "verify-full"}

// ConnOptions are spec.backend.postgres as command-line flags: they override the matching
// parameters of the connection string, so the user's Secret stays the one source of the
// address and credentials while the spec states the policy where a reviewer can see it.
type ConnOptions struct {
	// SSLMode overrides the connection's sslmode ("" keeps it).
	SSLMode string
	// MaxConns overrides the pool's maximum connections (0 keeps the connection's).
	MaxConns int
}

func (o *ConnOptions) addFlags(fs *pflag.FlagSet) backend.Options {
	fs.StringVar(&o.SSLMode, "postgres-sslmode", "", "postgres: override the connection's sslmode ("+strings.Join(sslModes, ", ")+")")
	fs.IntVar(&o.MaxConns, "postgres-max-conns", 0, "postgres: override the pool's maximum connections (1-256; 0 keeps the connection's)")
	return o
}

// Validate refuses values the CRD would refuse.
func (o *ConnOptions) Validate() error {
	switch {
	case o.SSLMode != "" && !slices.Contains(sslModes, o.SSLMode):
		return backend.Usagef("--postgres-sslmode %q is not one of %s", o.SSLMode, strings.Join(sslModes, ", "))
	case o.MaxConns < 0 || o.MaxConns > 256:
		return backend.Usagef("--postgres-max-conns %d is outside 1-256", o.MaxConns)
	}
	return nil
}

// ApplyConnection sets sslmode and pool_max_conns (pgxpool's own parameter) on a URL or a
// keyword/value connection string. Its errors never quote conn: it may hold a password.
func (o *ConnOptions) ApplyConnection(conn string) (string, error) {
	if o.SSLMode == "" && o.MaxConns == 0 {
		return conn, nil
	}
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			return "", backend.Usagef("postgres: the connection is not a valid postgres:// URL")
		}
		q := u.Query()
		if o.SSLMode != "" {
			q.Set("sslmode", o.SSLMode)
		}
		if o.MaxConns != 0 {
			q.Set("pool_max_conns", strconv.Itoa(o.MaxConns))
		}
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// Keyword/value form: a later keyword overrides an earlier one.
	out := strings.TrimSpace(conn)
	if o.SSLMode != "" {
		out += " sslmode=" + o.SSLMode
	}
	if o.MaxConns != 0 {
		out += fmt.Sprintf(" pool_max_conns=%d", o.MaxConns)
	}
	return out, nil
}

func needConnection(c backend.Config) error {
	if c.Connection == "" {
		return backend.Usagef("postgres: no connection (--connection-file or $MEMORY_ADAPTER_CONNECTION: a postgres:// URL)")
	}
	return nil
}

func init() {
	backend.Provide(postgresdeploy.Name, backend.Runtime{
		Flags: func(fs *pflag.FlagSet) backend.Options { return new(ConnOptions).addFlags(fs) },
		Open: func(ctx context.Context, c backend.Config) (memory.ExternalStore, error) {
			if err := needConnection(c); err != nil {
				return nil, err
			}
			return Open(ctx, Options{URL: c.Connection, Scope: c.ScopeOrDefault(), SupportedFilters: c.Filters, AdapterID: c.AdapterID,
				RequestTimeout: c.RequestTimeout, StoreRetry: c.Retry[0], RetrieveRetry: c.Retry[1], SearchRetry: c.Retry[2]})
		},
		// The matrix runs in a disposable schema on the same server, dropped at the end.
		Harness: func(ctx context.Context, c backend.Config) (conformance.Harness, error) {
			if err := needConnection(c); err != nil {
				return nil, err
			}
			return NewHarness(ctx, HarnessOptions{URL: c.Connection, SupportedFilters: c.Filters, AdapterID: c.AdapterID})
		},
		Purge: func(ctx context.Context, c backend.Config) (backend.PurgeResult, error) {
			if err := needConnection(c); err != nil {
				return backend.PurgeResult{}, err
			}
			n, err := PurgeScope(ctx, Options{URL: c.Connection, Scope: c.Scope})
			return backend.PurgeResult{Items: n}, err
		},
	})
}
