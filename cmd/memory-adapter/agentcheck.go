package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/api/requirements"
)

// adapterNamePattern is a MemoryAdapter's name rule; it also keeps --adapter from naming a
// path outside $SERVICE_BINDING_ROOT.
var adapterNamePattern = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

type agentCheckFlags struct {
	adapter  string
	requires string
	timeout  time.Duration
	// watch and interval: keep storing every interval until timeout and print each answer
	// (runAgentWatch) instead of one check.
	watch    bool
	interval time.Duration
	// readBack and keepAlive shape the watch: retrieve each stored item at once, and keep
	// connections between calls as a pooled client does.
	readBack  bool
	keepAlive bool
	// retrieveIDs: read back these items, which an earlier watch stored (runRetrieveIDs),
	// instead of one check.
	retrieveIDs []string
}

// newAgentCheckCommand is the sample agent workload (docs/gating.md): it reaches its adapter
// through the Service Binding projected into the pod, and nothing else.
func newAgentCheckCommand() *cobra.Command {
	var f agentCheckFlags
	cmd := &cobra.Command{
		Use:   "agent-check",
		Short: "Act as an agent workload: read the projected binding, check requirements, store and retrieve one item",
		Long: `Reads the binding of --adapter from $SERVICE_BINDING_ROOT/<adapter> (files type, provider,
url and token, as the operator's pod webhook projects them), checks the adapter's published
manifest against --requires (the memory.agentmem.io/requires language), then stores one item and
retrieves it through the adapter's Service. Exit code 0 when the item came back equal, 1 on any
failure, 2 on a usage error.

With --watch it instead stores an item every --interval until --timeout and prints one line per
call: "agent-check watch: <time the call was made> store <status> <media type> <problem type>", or
"... store error: <error>" when no answer came (a refused connection); it exits 0 at the end.
--read-back adds a "retrieve" line per stored item; --keep-alive reuses connections between calls.
A 201 store line ends in " | id=<id>".

With --retrieve-ids=ID,ID,... it instead retrieves each of those items (ids an earlier --watch
acknowledged) once and prints "agent-check retrieve: <id> found|missing|mismatch|error: ..." per
id and "agent-check retrieve: N ids, F found, M missing, X mismatched, E errors"; it exits 1 when
any item is missing, mismatched or could not be read: the lost-write count of a failover.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.adapter == "" {
				return usageError("--adapter is required")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			if !f.watch && (f.readBack || f.keepAlive) {
				return usageError("--read-back and --keep-alive shape --watch; pass --watch too")
			}
			if len(f.retrieveIDs) > 0 {
				if f.watch {
					return usageError("--retrieve-ids and --watch are two modes; pass one")
				}
				ids, err := parseRetrieveIDs(f.retrieveIDs)
				if err != nil {
					return err
				}
				return runRetrieveIDs(ctx, cmd.OutOrStdout(), os.Getenv("SERVICE_BINDING_ROOT"), f.adapter, ids)
			}
			if f.watch {
				if f.interval <= 0 {
					return usageError("--interval must be positive")
				}
				return runAgentWatch(ctx, cmd.OutOrStdout(), os.Getenv("SERVICE_BINDING_ROOT"), &f)
			}
			return runAgentCheck(ctx, cmd.OutOrStdout(), os.Getenv("SERVICE_BINDING_ROOT"), &f)
		},
	}
	cmd.Flags().StringVar(&f.adapter, "adapter", "", "the MemoryAdapter whose binding to use (the binding directory's name)")
	cmd.Flags().StringVar(&f.requires, "requires", "", "requirements the adapter's manifest must meet, in the memory.agentmem.io/requires language")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 2*time.Minute, "give up after this long (with --watch: stop watching after this long, exit 0)")
	cmd.Flags().BoolVar(&f.watch, "watch", false, "store an item every --interval until --timeout and print each answer's status, media type and problem type, one line each")
	cmd.Flags().DurationVar(&f.interval, "interval", 2*time.Second, "with --watch, the time between calls")
	cmd.Flags().BoolVar(&f.readBack, "read-back", false, "with --watch, retrieve each stored item at once and print a retrieve line (\"mismatch\" when it came back different)")
	cmd.Flags().StringSliceVar(&f.retrieveIDs, "retrieve-ids", nil, "retrieve each of these item ids (comma-separated, at most 20000) once, print found/missing per id and a summary, exit 1 if any is not found intact")
	cmd.Flags().BoolVar(&f.keepAlive, "keep-alive", false, "with --watch, keep connections between calls as a pooled client does (by default every call dials afresh)")
	return cmd
}

// bindingPath is the directory of the adapter's binding under root, checked the way a user
// gets it wrong: no root in the environment, or an --adapter that is not a MemoryAdapter's
// name (which also keeps it from naming a path outside root). The directory's own rules are
// remote.OpenBinding's.
func bindingPath(root, adapter string) (string, error) {
	if root == "" {
		return "", errors.New("SERVICE_BINDING_ROOT is not set: is the pod bound to an adapter?")
	}
	if len(adapter) > 40 || !adapterNamePattern.MatchString(adapter) {
		return "", usageError("--adapter %q is not a MemoryAdapter name (a DNS label of at most 40 characters starting with a letter)", adapter)
	}
	return filepath.Join(root, adapter), nil
}

// boundStore opens the Go client on the adapter's binding under root, and says where that is.
func boundStore(ctx context.Context, root, adapter string) (*remote.Store, string, error) {
	dir, err := bindingPath(root, adapter)
	if err != nil {
		return nil, "", err
	}
	st, err := remote.FromBinding(ctx, dir)
	return st, dir, err
}

func runAgentCheck(ctx context.Context, out io.Writer, root string, f *agentCheckFlags) error {
	reqs, err := requirements.Parse(f.requires)
	if err != nil {
		return usageError("--requires: %w", err)
	}
	st, dir, err := boundStore(ctx, root, f.adapter)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	if unmet := reqs.Unmet(st.Manifest()); len(unmet) > 0 {
		return fmt.Errorf("adapter %q does not meet: %s", st.Manifest().Adapter, strings.Join(unmet, "; "))
	}
	item := memory.Item{
		ID:        uuid.New(),
		CreatedAt: memory.Now(),
		Content:   json.RawMessage(`{"note":"stored by agent-check"}`),
		Metadata:  map[string]json.RawMessage{"source": json.RawMessage(`"agent-check"`)},
		Tags:      []string{"agent-check"},
	}
	if _, err := st.Store(ctx, item); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	got, err := st.Retrieve(ctx, item.ID)
	if err != nil {
		return fmt.Errorf("retrieve: %w", err)
	}
	if got == nil {
		return fmt.Errorf("retrieve: item %s not found right after it was stored", item.ID)
	}
	if st.Manifest().RetrieveFidelity == memory.FidelityFull && !got.Equal(item) {
		return fmt.Errorf("retrieve: item %s came back different from what was stored", item.ID)
	}
	if !memory.JSONEqual(got.Content, item.Content) {
		return fmt.Errorf("retrieve: item %s content came back different", item.ID)
	}
	_, err = fmt.Fprintf(out, "agent-check: adapter %q (binding %s): stored and retrieved item %s\n", st.Manifest().Adapter, dir, item.ID)
	return err
}
