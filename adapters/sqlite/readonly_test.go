package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestWriteProbeOnAReadOnlyVolume is the fault of issue 29 for real: the database's volume
// stops taking writes, under a running store and under one opened afresh on it, and the write
// probe must fail naming the write while the read-only probes still pass. The volume is a
// small tmpfs, filled up under the running store and remounted read-only under a fresh one,
// so the test needs root (make test runs as root; it fails, never
// skips, without the privilege).
func TestWriteProbeOnAReadOnlyVolume(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatalf("mount a tmpfs for the volume (this test needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(dir, "memory.db")
	running, err := Open(ctx, Options{Path: path, Scope: "agents"})
	if err != nil {
		t.Fatal(err)
	}
	item := memory.NewItem([]byte(`"kept"`))
	if _, err := running.Store(ctx, item); err != nil {
		t.Fatal(err)
	}
	if ev, err := running.Probe(ctx); err != nil || !ev.AllOK() {
		t.Fatalf("before the fault: %+v, %v", ev, err)
	}

	checkWriteFails := func(name, want string, s *Store) {
		t.Helper()
		ev, err := s.Probe(ctx)
		if err != nil {
			t.Fatalf("%s: the probe must report a failed write, not an unreachable database: %v", name, err)
		}
		var write *memory.ProbeResult
		for i, p := range ev.Probes {
			if p.Name == "write" {
				write = &ev.Probes[i]
			} else if !p.OK {
				t.Errorf("%s: probe %s failed too: %s", name, p.Name, p.Detail)
			}
		}
		if write == nil || write.OK || !strings.Contains(write.Detail, want) {
			t.Fatalf("%s: want a failed write probe naming %q, got %+v", name, want, ev.Probes)
		}
		if _, err := s.Retrieve(ctx, item.ID); err != nil {
			t.Errorf("%s: reads still work: %v", name, err)
		}
	}

	// Under the running store: a volume cannot be remounted read-only while a writer holds a
	// file open (the kernel says EBUSY), so the running store's fault is the other way a volume
	// stops taking writes: it fills up.
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break // ENOSPC: the volume is full
		}
	}
	_ = filler.Close()
	checkWriteFails("the running store on a full volume", "full", running)
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	if ev, err := running.Probe(ctx); err != nil || !ev.AllOK() {
		t.Fatalf("once there is room again the write probe passes: %+v, %v", ev, err)
	}

	// A fresh instance on a read-only volume, as a pod killed and restarted onto one starts:
	// the volume holds the database with the -wal and -shm files the killed writer left.
	crashed := t.TempDir()
	if err := unix.Mount("tmpfs", crashed, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(crashed, unix.MNT_DETACH) })
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatalf("the running store's %q file: %v", "memory.db"+suffix, err)
		}
		if err := os.WriteFile(filepath.Join(crashed, "memory.db"+suffix), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := running.Close(); err != nil {
		t.Fatal(err)
	}
	// openReadOnly remounts the volume at dir read-only and opens a store afresh on it, which
	// must succeed: the store must then say it cannot write, not fail to start.
	openReadOnly := func(dir, leftBy string) *Store {
		t.Helper()
		if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			t.Fatalf("remount the volume read-only: %v", err)
		}
		s, err := Open(ctx, Options{Path: filepath.Join(dir, "memory.db"), Scope: "agents"})
		if err != nil {
			t.Fatalf("a store on a read-only volume left by %s opens (and must then say it cannot write): %v", leftBy, err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	checkWriteFails("a store opened afresh on a read-only volume", "readonly", openReadOnly(crashed, "a killed writer"))

	// The same after a clean shutdown, as a pod deleted normally leaves its volume: the last
	// close checkpointed the WAL and removed -wal and -shm, without which SQLite cannot read a
	// WAL database on a read-only filesystem at all. The store still opens (as an immutable
	// file) so that it can say why it cannot write, rather than fail to start.
	clean := t.TempDir()
	if err := unix.Mount("tmpfs", clean, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(clean, unix.MNT_DETACH) })
	closed, err := Open(ctx, Options{Path: filepath.Join(clean, "memory.db"), Scope: "agents"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := closed.Store(ctx, item); err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(filepath.Join(clean, "memory.db"+suffix)); !os.IsNotExist(err) {
			t.Fatalf("a clean close leaves no memory.db%s (stat: %v)", suffix, err)
		}
	}
	reopened := openReadOnly(clean, "a clean shutdown")
	checkWriteFails("a store opened afresh on a read-only volume after a clean shutdown", "readonly", reopened)
	if _, err := reopened.Store(ctx, memory.NewItem([]byte(`"refused"`))); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("a store on the read-only volume: want MemoryAdapterUnavailable, got %v", err)
	}
}
