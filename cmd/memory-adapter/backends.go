package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
	_ "github.com/agentmem/memory-adapter-operator/internal/backends"
)

// connectionEnv is the environment variable that may carry the backend connection string.
const connectionEnv = "MEMORY_ADAPTER_CONNECTION"

// maxSecretFileBytes bounds token and connection files: they are a few hundred bytes.
const maxSecretFileBytes = 64 << 10

// backendConfig is the backend part of the command line, shared by serve, conformance and
// purge. Each backend's own flags are its table entry's (adapters/backend).
type backendConfig struct {
	Backend          string
	AdapterID        string
	SupportedFilters []string
	filtersSet       bool
	Scope            string
	ConnectionFile   string
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
	// backend's overrides applied; never logged.
	connection string
	// options holds each backend's own flags by backend name, and owner the backend each of
	// those flags belongs to.
	options map[string]backend.Options
	owner   map[string]string
}

func (c *backendConfig) addFlags(fs *pflag.FlagSet, scopeHelp string) {
	fs.StringVar(&c.Backend, "backend", "inmemory", "backend: "+backendNames())
	fs.StringVar(&c.AdapterID, "adapter-id", "", "the manifest's adapter id (default: the backend's own id)")
	fs.StringSliceVar(&c.SupportedFilters, "supported-filters", nil, "the exact filter key set the manifest publishes (default: the backend's default, branch_id,source)")
	fs.StringVar(&c.Scope, "scope", "", scopeHelp)
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 0, "sqlite, postgres, redis: bound on one backend call (0: the backend's default; see docs/adapters)")
	for i, op := range backend.Calls {
		fs.StringVar(&c.retryText[i], "retry-"+op, "", "postgres, redis: the "+op+" retry policy, attempts=N[,backoff=D][,max-backoff=D][,jitter=none|full|equal] (default: the backend's; see docs/adapters)")
	}
	fs.StringVar(&c.ConnectionFile, "connection-file", "", "file holding the backend connection string (postgres DSN, redis URL); else $"+connectionEnv)
	c.options, c.owner = map[string]backend.Options{}, map[string]string{}
	for _, b := range backend.Runnable() {
		if b.Flags == nil {
			continue
		}
		own := pflag.NewFlagSet(b.Name, pflag.ContinueOnError)
		c.options[b.Name] = b.Flags(own)
		own.VisitAll(func(f *pflag.Flag) { c.owner[f.Name] = b.Name })
		fs.AddFlagSet(own)
	}
}

// resolve validates the flags and loads the connection string from its file or the
// environment.
func (c *backendConfig) resolve(fs *pflag.FlagSet) error {
	c.filtersSet = fs.Changed("supported-filters")
	if c.RequestTimeout < 0 {
		return usageError("--request-timeout must not be negative")
	}
	if err := c.checkOptions(fs); err != nil {
		return err
	}
	b, _ := backend.Lookup(c.Backend)
	for i, op := range backend.Calls {
		if c.retryText[i] == "" {
			continue
		}
		p, err := memory.ParseRetryPolicy(c.retryText[i])
		if err != nil {
			return usageError("--retry-%s: %v", op, err)
		}
		if p.MaxAttempts > 1 && !b.Repeats(op) {
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
	if c.connection != "" {
		conn, err := c.applyConnection(c.connection)
		if err != nil {
			return err
		}
		c.connection = conn
	}
	return nil
}

// checkOptions refuses an unknown --backend, another backend's flag, and a bad value of the
// chosen backend's own flags.
func (c *backendConfig) checkOptions(fs *pflag.FlagSet) error {
	if b, ok := backend.Lookup(c.Backend); !ok || b.Open == nil {
		return usageError("unknown --backend %q (have %s)", c.Backend, backendNames())
	}
	var misplaced error
	fs.Visit(func(f *pflag.Flag) {
		if o, ok := c.owner[f.Name]; ok && o != c.Backend && misplaced == nil {
			misplaced = usageError("--%s is a flag of the %s backend: it needs --backend %s", f.Name, o, o)
		}
	})
	if misplaced != nil {
		return misplaced
	}
	if o := c.options[c.Backend]; o != nil {
		return asUsage(o.Validate())
	}
	return nil
}

// applyConnection applies the chosen backend's overrides to conn.
func (c *backendConfig) applyConnection(conn string) (string, error) {
	o := c.options[c.Backend]
	if o == nil {
		return conn, nil
	}
	out, err := o.ApplyConnection(conn)
	return out, asUsage(err)
}

// config is what the chosen backend is handed.
func (c *backendConfig) config() backend.Config {
	return backend.Config{
		Scope: c.Scope, AdapterID: c.AdapterID, Filters: c.filters(), Connection: c.connection,
		RequestTimeout: c.RequestTimeout, Retry: c.Retry, PodName: os.Getenv("POD_NAME"), Options: c.options[c.Backend],
	}
}

// chosen is the --backend entry; resolve has checked that it exists.
func (c *backendConfig) chosen() *backend.Backend {
	b, _ := backend.Lookup(c.Backend)
	return b
}

// asUsage makes a backend's refusal of its configuration a usage error (exit status 2).
func asUsage(err error) error {
	if err != nil && backend.IsUsage(err) {
		return &exitError{code: 2, err: err}
	}
	return err
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

func backendNames() string {
	var names []string
	for _, b := range backend.Runnable() {
		names = append(names, b.Name)
	}
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

// The in-memory reference store is the command's own backend: the operator never deploys
// it, and only commands and test harnesses may use it (hack/layers).
func init() {
	backend.Register(backend.Backend{
		Name:        "inmemory",
		DuplicateID: conformance.DuplicateOverwrite,
		Runtime: backend.Runtime{Open: func(_ context.Context, c backend.Config) (memory.ExternalStore, error) {
			if c.AdapterID != "" && c.AdapterID != inmemory.AdapterID {
				return nil, backend.Usagef("inmemory: --adapter-id cannot be changed")
			}
			return inmemory.New(inmemory.Options{SupportedFilters: c.Filters}), nil
		},
			Harness: func(_ context.Context, c backend.Config) (conformance.Harness, error) {
				if c.AdapterID != "" && c.AdapterID != inmemory.AdapterID {
					return nil, backend.Usagef("inmemory: --adapter-id cannot be changed")
				}
				return newInMemoryHarness(c.Filters), nil
			}},
	})
}
