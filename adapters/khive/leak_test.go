package khive

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/khive/khivefake"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestNoGoroutineLeaks drives stores through every way a session ends (a call that times
// out, a server that exits mid-call, Close with and without a session) and checks that the
// SDK's and the adapter's goroutines are all gone afterwards, in-process and over a child.
func TestNoGoroutineLeaks(t *testing.T) {
	bin := buildFake(t)
	for _, mode := range []struct {
		name string
		opts func(dir string) (Options, khivefake.Backing)
	}{
		{"in-process", func(string) (Options, khivefake.Backing) {
			b := &khivefake.Memory{}
			return Options{Namespace: "ns", Dialer: func(context.Context) (Transport, error) {
				return khivefake.Pipe(&khivefake.Server{Backing: b, Namespace: "ns"}), nil
			}}, b
		}},
		{"child process", func(dir string) (Options, khivefake.Backing) {
			db := filepath.Join(dir, "state.json")
			return Options{Namespace: "ns", Command: bin, Args: []string{"mcp", "--db", db}}, khivefake.File{Path: db}
		}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			base := runtime.NumGoroutine()
			for range 3 {
				o, b := mode.opts(t.TempDir())
				o.RequestTimeout = 200 * time.Millisecond
				s, err := New(o)
				if err != nil {
					t.Fatal(err)
				}
				it := memory.NewItem(json.RawMessage(`"leak check"`))
				if _, err := s.Store(ctx, it); err != nil {
					t.Fatal(err)
				}
				setKnobs(t, b, khivefake.Knobs{HangOn: "get"})
				if _, err := s.Retrieve(ctx, it.ID); !errors.Is(err, memory.ErrUnavailable) {
					t.Fatalf("retrieve from a hanging server: %v, want MemoryAdapterUnavailable", err)
				}
				setKnobs(t, b, khivefake.Knobs{ExitOn: "get"})
				if _, err := s.Retrieve(ctx, it.ID); !errors.Is(err, memory.ErrUnavailable) {
					t.Fatalf("retrieve from an exiting server: %v, want MemoryAdapterUnavailable", err)
				}
				setKnobs(t, b, khivefake.Knobs{})
				if got, err := s.Retrieve(ctx, it.ID); err != nil || got == nil {
					t.Fatalf("retrieve after the restart: %v, %v", got, err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Retrieve(ctx, uuid.New()); !errors.Is(err, memory.ErrUnavailable) {
					t.Fatalf("retrieve after close: %v", err)
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for runtime.NumGoroutine() > base {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<20)
					t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func setKnobs(t *testing.T, b khivefake.Backing, k khivefake.Knobs) {
	t.Helper()
	if err := b.Update(func(st *khivefake.State) error { st.Knobs = k; return nil }); err != nil {
		t.Fatal(err)
	}
}
