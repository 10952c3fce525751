package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

// connectionEnv is the environment variable that may carry the backend connection string.
const connectionEnv = "MEMORY_ADAPTER_CONNECTION"

// maxSecretFileBytes bounds token and connection files: they are a few hundred bytes.
const maxSecretFileBytes = 64 << 10

// retryOps names the operations of backendConfig.Retry, in its order.
var retryOps = [3]string{"store", "retrieve", "search"}

// backendConfig is the backend part of the command line, shared by serve and conformance.
type backendConfig struct {
	Backend          string
	AdapterID        string
	SupportedFilters []string
	filtersSet       bool
	Scope            string
	SQLitePath       string
	ConnectionFile   string
	// KhiveCommand and KhiveArgs start the khive backend's MCP child (kkernel mcp).
	KhiveCommand string
	KhiveArgs    []string
	// RequestTimeout bounds one backend call (SQLite, PostgreSQL: the call and its retry;
	// Redis: one command); 0 means the backend's documented default. The operator passes its
	// status.lifecycle.requestTimeout here, so the lifecycle it reports is the one that applies.
	RequestTimeout time.Duration
	// Retry holds the store, retrieve and search retry policies (--retry-store, ...); a zero
	// policy means the backend's documented one. The operator passes status.lifecycle.retry
	// here for the backends that retry, for the same reason.
	Retry     [3]memory.RetryPolicy
	retryText [3]string
	// connection is the secret connection string (PostgreSQL DSN, Redis URL), with the
	// conn overrides applied; never logged.
	connection string
	conn       connOptions
}

func (c *backendConfig) addFlags(fs *pflag.FlagSet, scopeHelp string) {
	fs.StringVar(&c.Backend, "backend", "inmemory", "backend: "+backendNames())
	fs.StringVar(&c.AdapterID, "adapter-id", "", "the manifest's adapter id (default: the backend's own id)")
	fs.StringSliceVar(&c.SupportedFilters, "supported-filters", nil, "the exact filter key set the manifest publishes (default: the backend's default, branch_id,source)")
	fs.StringVar(&c.Scope, "scope", "", scopeHelp)
	fs.StringVar(&c.SQLitePath, "sqlite-path", "/var/lib/memory-adapter/memory.db", "sqlite: the database file")
	fs.StringVar(&c.KhiveCommand, "khive-command", "kkernel", "khive: the MCP server binary the adapter starts as its child (not in the operator's image: supply an image with kkernel)")
	fs.StringArrayVar(&c.KhiveArgs, "khive-arg", []string{"mcp"}, "khive: one argument of the child, repeatable (the adapter appends --namespace <scope>)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 0, "sqlite, postgres, redis: bound on one backend call (0: the backend's default; see docs/adapters)")
	for i, op := range retryOps {
		fs.StringVar(&c.retryText[i], "retry-"+op, "", "postgres, redis: the "+op+" retry policy, attempts=N[,backoff=D][,max-backoff=D][,jitter=none|full|equal] (default: the backend's; see docs/adapters)")
	}
	fs.StringVar(&c.ConnectionFile, "connection-file", "", "file holding the backend connection string (postgres DSN, redis URL); else $"+connectionEnv)
	c.conn.addFlags(fs)
}

// resolve validates the flags and loads the connection string from its file or the
// environment.
func (c *backendConfig) resolve(fs *pflag.FlagSet) error {
	c.filtersSet = fs.Changed("supported-filters")
	if c.RequestTimeout < 0 {
		return usageError("--request-timeout must not be negative")
	}
	if _, ok := backends[c.Backend]; !ok {
		return usageError("unknown --backend %q (have %s)", c.Backend, backendNames())
	}
	for i, op := range retryOps {
		if c.retryText[i] == "" {
			continue
		}
		p, err := memory.ParseRetryPolicy(c.retryText[i])
		if err != nil {
			return usageError("--retry-%s: %v", op, err)
		}
		if p.MaxAttempts > 1 && c.Backend != "postgres" && (c.Backend != "redis" || op == "store") {
			// Refused rather than ignored: the operator's status.lifecycle must say what applies.
			return usageError("--retry-%s: the %s backend does not repeat %s calls (see docs/adapters/%s.md)", op, c.Backend, op, c.Backend)
		}
		c.Retry[i] = p
	}
	for _, k := range c.SupportedFilters {
		if strings.TrimSpace(k) == "" {
			return usageError("--supported-filters: empty key")
		}
	}
	if c.ConnectionFile != "" {
		s, err := readSecretFile(c.ConnectionFile)
		if err != nil {
			return usageError("--connection-file: %v", err)
		}
		c.connection = s
	} else {
		c.connection = strings.TrimSpace(os.Getenv(connectionEnv))
	}
	if err := c.conn.validate(c.Backend); err != nil {
		return err
	}
	if c.connection != "" {
		conn, err := c.conn.apply(c.Backend, c.connection)
		if err != nil {
			return err
		}
		c.connection = conn
	}
	return nil
}

// filters returns the configured filter set, or nil for the backend's default.
func (c *backendConfig) filters() []string {
	if !c.filtersSet {
		return nil
	}
	if c.SupportedFilters == nil {
		return []string{}
	}
	return c.SupportedFilters
}

// backend opens stores and conformance harnesses of one kind.
type backend struct {
	// open returns the store serve publishes.
	open func(ctx context.Context, c *backendConfig) (memory.ExternalStore, error)
	// harness returns a live harness over a disposable scope with the same configuration.
	harness func(ctx context.Context, c *backendConfig) (conformance.Harness, error)
}

// backends is filled by one file per backend package.
var backends = map[string]backend{}

func backendNames() string {
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func closeStore(s memory.ExternalStore) error {
	if c, ok := s.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// readSecretFile reads a mounted secret: bounded, trailing whitespace trimmed, non-empty.
// Its content never appears in errors.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxSecretFileBytes {
		return "", fmt.Errorf("%s: larger than %d bytes", path, maxSecretFileBytes)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", errors.New(path + ": empty")
	}
	return s, nil
}

func init() {
	backends["inmemory"] = backend{
		open: func(_ context.Context, c *backendConfig) (memory.ExternalStore, error) {
			if c.AdapterID != "" && c.AdapterID != inmemory.AdapterID {
				return nil, usageError("inmemory: --adapter-id cannot be changed")
			}
			return inmemory.New(inmemory.Options{SupportedFilters: c.filters()}), nil
		},
		harness: func(_ context.Context, c *backendConfig) (conformance.Harness, error) {
			if c.AdapterID != "" && c.AdapterID != inmemory.AdapterID {
				return nil, usageError("inmemory: --adapter-id cannot be changed")
			}
			return newInMemoryHarness(c.filters()), nil
		},
	}
}
