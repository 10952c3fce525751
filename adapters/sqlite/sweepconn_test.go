package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// walIndexState reads the WAL index of the database at path: the WAL's valid frames
// (mxFrame, walFrames) and how many of them have been checkpointed (nBackfill, the first
// field after the two headers; https://www.sqlite.org/walformat.html, 2.1).
func walIndexState(t *testing.T, path string) (frames, backfilled uint32) {
	t.Helper()
	frames, ok := walFrames(path)
	if !ok {
		t.Fatal("walFrames: the WAL index cannot be read")
	}
	b, err := os.ReadFile(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	return frames, binary.NativeEndian.Uint32(b[96:100])
}

// openSweepFile opens a store on a new file with one pooled connection, so that a sweep's
// batch and every later statement share it, and a handle of its own that never checkpoints.
func openSweepFile(t *testing.T) (*Store, *sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sweep.db")
	s, err := Open(context.Background(), Options{Path: path, Scope: "bench", MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	raw, err := sql.Open("sqlite", dsn(path, "rw", DefaultRequestTimeout)+"&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = raw.Close() })
	return s, raw, path
}

// TestWALFramesReadsTheWALIndex: walFrames reads the same frame count as SQLite's own
// checkpoint reports for the WAL.
func TestWALFramesReadsTheWALIndex(t *testing.T) {
	_, raw, path := openSweepFile(t)
	if err := bulkInsert(context.Background(), raw, "bench", 500, nil); err != nil {
		t.Fatal(err)
	}
	got, ok := walFrames(path)
	var busy, log, done int
	if err := raw.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
		t.Fatal(err)
	}
	if !ok || got == 0 || int(got) != log {
		t.Fatalf("walFrames = %d, %v; SQLite's checkpoint reports %d frames in the WAL", got, ok, log)
	}
	if _, ok := walFrames(filepath.Join(t.TempDir(), "absent.db")); ok {
		t.Error("walFrames of a database with no WAL index: got a count")
	}
}

// TestSweepCheckpointsAfterItsBatch: a sweep batch's commit leaves the checkpoint to
// checkpointAfterSweep, which checkpoints as SQLite's wal_autocheckpoint would have (the
// whole WAL once it holds walAutocheckpoint frames, nothing before), and the connection
// goes back to the pool with the settings every other one has.
func TestSweepCheckpointsAfterItsBatch(t *testing.T) {
	ctx := context.Background()
	s, raw, path := openSweepFile(t)
	t0 := time.Now().Add(-time.Hour)
	if err := bulkInsertAt(ctx, raw, "bench", 20, nil, func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	policy := memory.RetentionPolicy{MaxAge: time.Hour}
	// A small WAL: the batch's commit adds a few frames, and nothing is checkpointed.
	if n, err := s.Sweep(ctx, policy, t0.Add(policy.MaxAge+5*time.Second)); err != nil || n != 6 {
		t.Fatalf("sweep: %d, %v; want 6 removed", n, err)
	}
	frames, backfilled := walIndexState(t, path)
	if frames == 0 || frames >= walAutocheckpoint || backfilled != 0 {
		t.Fatalf("after a batch into an empty WAL: %d frames, %d checkpointed; want a few, none checkpointed", frames, backfilled)
	}
	// A WAL past the threshold (written by a handle that never checkpoints): the batch's
	// checkpoint writes all of it back.
	if err := bulkInsertAt(ctx, raw, "bench", 6000, nil, func(int) time.Time { return time.Now() }); err != nil {
		t.Fatal(err)
	}
	if frames, _ := walIndexState(t, path); frames < walAutocheckpoint {
		t.Fatalf("the load left %d frames in the WAL, want at least %d for this test", frames, walAutocheckpoint)
	}
	c, err := s.sweepConn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cutoff := t0.Add(10 * time.Second).UnixMicro()
	if n, err := s.deleteOldestOn(ctx, c.Conn, cutoff, 250); err != nil || n != 5 {
		t.Fatalf("batch: %d, %v; want 5 removed", n, err)
	}
	frames, backfilled = walIndexState(t, path)
	if backfilled != 0 {
		t.Fatalf("the batch's commit checkpointed %d of %d frames behind the gate; want none", backfilled, frames)
	}
	s.checkpointAfterSweep(ctx, c.Conn)
	c.release()
	frames, backfilled = walIndexState(t, path)
	if frames < walAutocheckpoint || backfilled != frames {
		t.Fatalf("after the batch's checkpoint: %d frames, %d checkpointed; want all checkpointed", frames, backfilled)
	}
	// The pool's one connection, the batch's, is back to the defaults.
	for _, c := range []struct {
		pragma string
		want   int
	}{{"wal_autocheckpoint", walAutocheckpoint}, {"temp_store", 0}} {
		var got int
		if err := s.db.QueryRow(`PRAGMA ` + c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("PRAGMA %s after a sweep = %d, want %d", c.pragma, got, c.want)
		}
	}
}
