package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentmem/memory-adapter-operator/adapters/backend"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// purgeFlags is the purge command line.
type purgeFlags struct {
	backend        backendConfig
	timeout        time.Duration
	terminationLog string
}

// PurgeResult is the one-line JSON the purge command prints, and writes as the pod's
// termination message: the operator reads it to say why a purge failed.
type PurgeResult struct {
	// Backend is the --backend value.
	Backend string `json:"backend"`
	// Scope is the purged scope.
	Scope string `json:"scope"`
	// Deleted is how many memory items were deleted (on failure, none is claimed).
	Deleted int64 `json:"deleted"`
	// Keys is, for Redis, how many keys were unlinked: the items and the scope's index.
	Keys int64 `json:"keys,omitempty"`
	// ErrorType is the contract's error class when the purge failed: MemoryAdapterError,
	// MemoryAdapterUnavailable, or UsageError for a bad command line.
	ErrorType string `json:"error_type,omitempty"`
	// Error says why the purge failed; it never holds the connection string.
	Error string `json:"error,omitempty"`
}

// maxPurgeMessage bounds the termination message; the kubelet keeps at most 4096 bytes.
const maxPurgeMessage = 4096

func newPurgeCommand() *cobra.Command {
	var f purgeFlags
	cmd := &cobra.Command{
		Use:   "purge",
		Short: "Delete every memory item of one scope from a PostgreSQL or Redis backend",
		Long: `Deletes every memory item of --scope, and nothing of any other scope, from the backend the
connection string (--connection-file or $` + connectionEnv + `, as for serve) points at. PostgreSQL: the
scope's memory rows of <schema>.memory_items; Redis: the scope's items and its index, stream and
config keys. Records of another kind in the scope (another program's) are left alone.

Stop every adapter instance on the scope first: an item stored after the purge stays. The purge
is idempotent; run it again after a failure.

Prints one JSON line, {"backend":...,"scope":...,"deleted":N}, to stdout and to --termination-log,
with error_type and error on failure. Exit code 0 on success, 1 when the backend failed, 2 on a
usage error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPurge(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.Flags(), &f)
		},
	}
	fs := cmd.Flags()
	f.backend.addFlags(fs, "the scope whose items to delete (required)")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "bound on the whole purge")
	fs.StringVar(&f.terminationLog, "termination-log", "/dev/termination-log", "where to write the JSON result as well (empty: do not write)")
	return cmd
}

func runPurge(parent context.Context, stdout, stderr io.Writer, fs *pflag.FlagSet, f *purgeFlags) error {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()

	res := PurgeResult{Backend: f.backend.Backend, Scope: f.backend.Scope}
	err := f.backend.resolve(fs)
	if err == nil {
		err = purgeBackend(ctx, &f.backend, &res)
	}
	if err != nil {
		res.Deleted, res.Keys = 0, 0
		res.ErrorType, res.Error = errorType(err), err.Error()
	}
	line, jerr := json.Marshal(res)
	if jerr != nil {
		return errors.Join(err, jerr)
	}
	fmt.Fprintln(stdout, string(line))
	if f.terminationLog != "" {
		if len(line) > maxPurgeMessage {
			line = line[:maxPurgeMessage]
		}
		if werr := os.WriteFile(f.terminationLog, line, 0o644); werr != nil {
			// Outside a pod the default path may not be writable; stdout still has the result.
			fmt.Fprintf(stderr, "memory-adapter: warning: writing the termination message: %v\n", werr)
		}
	}
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return &exitError{code: 1, err: fmt.Errorf("purge of scope %q: %w", res.Scope, err)}
	}
	return nil
}

// purgeBackend runs the backend's own purge of c.Scope and records the counts in res.
func purgeBackend(ctx context.Context, c *backendConfig, res *PurgeResult) error {
	if err := memory.CheckScope(c.Scope); err != nil {
		return usageError("--scope: %v", err)
	}
	b := c.chosen()
	if b.Purge == nil {
		// SQLite's items live in the adapter's own file, deleted with its volume; the
		// in-memory store keeps nothing.
		return usageError("purge: the %s backend has no purge: its items go with the adapter (have %s)", c.Backend, purgeable())
	}
	r, err := b.Purge(ctx, c.config())
	res.Deleted, res.Keys = r.Items, r.Keys
	return asUsage(err)
}

// purgeable names the backends with a purge.
func purgeable() string {
	var names []string
	for _, b := range backend.Runnable() {
		if b.Purge != nil {
			names = append(names, b.Name)
		}
	}
	return strings.Join(names, ", ")
}

// errorType names the class of a purge failure for the JSON result.
func errorType(err error) string {
	var ee *exitError
	switch {
	case errors.As(err, &ee) && ee.code == 2:
		return "UsageError"
	case errors.Is(err, memory.ErrUnavailable):
		return "MemoryAdapterUnavailable"
	default:
		return "MemoryAdapterError"
	}
}
