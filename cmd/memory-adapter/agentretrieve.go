package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// maxRetrieveIDs bounds --retrieve-ids: a watch at 200 ms for an hour acknowledges 18,000
// items, and a pod's arguments must stay far below the object size limit.
const maxRetrieveIDs = 20000

// errItemsNotIntact is runRetrieveIDs' failure: some acknowledged item is gone, different or
// unreadable. The lines before it say which.
var errItemsNotIntact = errors.New("not every item came back intact")

// parseRetrieveIDs checks --retrieve-ids: each a UUID (an item id), none repeated, at most
// maxRetrieveIDs, so a typo is a usage error rather than a "missing" item.
func parseRetrieveIDs(raw []string) ([]uuid.UUID, error) {
	if len(raw) > maxRetrieveIDs {
		return nil, usageError("--retrieve-ids: %d ids, more than %d", len(raw), maxRetrieveIDs)
	}
	ids := make([]uuid.UUID, 0, len(raw))
	seen := make(map[uuid.UUID]bool, len(raw))
	for i, s := range raw {
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, usageError("--retrieve-ids: id %d (%.40q) is not an item id: %v", i+1, s, err)
		}
		if seen[id] {
			return nil, usageError("--retrieve-ids: id %s appears twice", id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids, nil
}

// runRetrieveIDs is agent-check --retrieve-ids: after a fault, it reads back every item an
// earlier --watch acknowledged, through the same binding, and counts what the fault lost. An
// item is intact when it comes back with the watch's content; a call that fails is an error,
// not a loss, and the run still fails, since it proves nothing about that item.
func runRetrieveIDs(ctx context.Context, out io.Writer, root, adapter string, ids []uuid.UUID) error {
	st, _, err := boundStore(ctx, root, adapter)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	var found, missing, mismatched, failed int
	for _, id := range ids {
		got, err := st.Retrieve(ctx, id)
		var verdict string
		switch {
		case err != nil:
			failed++
			verdict = "error: " + truncateDetail(err.Error())
		case got == nil:
			missing++
			verdict = "missing"
		case !memory.JSONEqual(got.Content, []byte(watchContent)):
			mismatched++
			verdict = "mismatch"
		default:
			found++
			verdict = "found"
		}
		if _, err := fmt.Fprintf(out, "agent-check retrieve: %s %s\n", id, verdict); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(out, "agent-check retrieve: %d ids, %d found, %d missing, %d mismatched, %d errors\n",
		len(ids), found, missing, mismatched, failed); err != nil {
		return err
	}
	if found != len(ids) {
		return errItemsNotIntact
	}
	return nil
}
