// Command wireload measures store, retrieve and search throughput with N concurrent clients,
// in-process (direct) or through remote → server over loopback (wire), with the server and
// its clients in separate processes so that each can be pinned to a core of its own
// (hack/perf/wire-concurrency.sh runs it under taskset). It measures, it does not assert.
//
//	wireload serve  -backend B            serve B on 127.0.0.1; print the URL; stop at EOF on stdin
//	wireload load   -url U -op O -clients N -calls M   seed, then time M calls of O through the wire
//	wireload direct -backend B -op O -clients N -calls M   the same on B in this process
//
// Each of load and direct prints one line: "op clients ops/s".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/adapters/sqlite"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// token is the bearer token between this tool's own server and clients on loopback.
const token = "wireload"

// Bounds, whatever the flags say: a measurement on a shared machine, not a load test.
const (
	maxClients = 256
	maxCalls   = 1_000_000
	seeded     = 200
	searchHits = 20
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wireload serve|load|direct [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	backend := fs.String("backend", "inmemory", "inmemory or sqlite")
	url := fs.String("url", "", "the server's URL (load)")
	op := fs.String("op", "retrieve", "store, retrieve or search")
	clients := fs.Int("clients", 1, "concurrent clients")
	calls := fs.Int("calls", 10000, "calls shared among the clients")
	_ = fs.Parse(os.Args[2:])
	if *clients < 1 || *clients > maxClients || *calls < *clients || *calls > maxCalls {
		fmt.Fprintf(os.Stderr, "wireload: clients must be 1..%d and calls %d..%d\n", maxClients, *clients, maxCalls)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(*backend)
	case "load":
		err = measure(*url, "", *op, *clients, *calls)
	case "direct":
		err = measure("", *backend, *op, *clients, *calls)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wireload:", err)
		os.Exit(1)
	}
}

// openStore opens a fresh store of the backend; cleanup removes what it created.
func openStore(ctx context.Context, backend string) (memory.ExternalStore, func(), error) {
	switch backend {
	case "inmemory":
		return inmemory.New(inmemory.Options{}), func() {}, nil
	case "sqlite":
		dir, err := os.MkdirTemp("", "wireload-")
		if err != nil {
			return nil, nil, err
		}
		s, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "db.sqlite"), Scope: "wireload"})
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, nil, err
		}
		return s, func() { _ = s.Close(); _ = os.RemoveAll(dir) }, nil
	}
	return nil, nil, fmt.Errorf("unknown backend %q", backend)
}

// serve publishes a fresh store until stdin reaches EOF, so that the script that started it
// ends it by closing the pipe.
func serve(backend string) error {
	ctx := context.Background()
	store, cleanup, err := openStore(ctx, backend)
	if err != nil {
		return err
	}
	defer cleanup()
	srv, err := server.New(server.Config{Store: store, Token: []byte(token)})
	if err != nil {
		return err
	}
	srv.Refresh(ctx, true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("http://%s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return hs.Close()
}

// measure seeds its own items, then times calls of op shared among clients goroutines,
// through the wire at url or, with url empty, on a fresh store of backend in this process.
func measure(url, backend, op string, clients, calls int) error {
	ctx := context.Background()
	var s memory.Store
	if url != "" {
		rs, err := remote.New(ctx, remote.Options{BaseURL: url, Token: token})
		if err != nil {
			return err
		}
		defer func() { _ = rs.Close() }()
		s = rs
	} else {
		store, cleanup, err := openStore(ctx, backend)
		if err != nil {
			return err
		}
		defer cleanup()
		s = store
	}
	// Seeded items carry a tag of this run, so the search finds exactly these whatever a
	// shared server already holds, and returns a full page.
	run := fmt.Sprintf("run-%d", time.Now().UnixNano())
	seed := make([]memory.Item, seeded)
	for i := range seed {
		seed[i] = storetest.BenchItem(i)
		seed[i].Tags = append(seed[i].Tags, run)
		if _, err := s.Store(ctx, seed[i]); err != nil {
			return fmt.Errorf("seeding: %w", err)
		}
	}
	q := memory.Query{Tags: []string{run}, Limit: searchHits}
	call := func(i int) error {
		switch op {
		case "store":
			it := storetest.BenchItem(seeded + i)
			it.Tags = []string{"written"}
			_, err := s.Store(ctx, it)
			return err
		case "retrieve":
			it, err := s.Retrieve(ctx, seed[i%seeded].ID)
			if err == nil && it == nil {
				err = errors.New("a seeded item is missing")
			}
			return err
		case "search":
			hits, err := s.Search(ctx, q)
			if err == nil && len(hits) != searchHits {
				err = fmt.Errorf("search found %d items, want %d", len(hits), searchHits)
			}
			return err
		}
		return fmt.Errorf("unknown op %q", op)
	}
	// A tenth of the calls untimed first, as many at once as will be timed, so that
	// connections, caches and the heap are warm before the clock starts.
	if _, err := concurrently(clients, max(calls/10, clients), call); err != nil {
		return err
	}
	elapsed, err := concurrently(clients, calls, call)
	if err != nil {
		return err
	}
	fmt.Printf("%s %d %.0f\n", op, clients, float64(calls)/elapsed.Seconds())
	return nil
}

// concurrently shares calls calls of call among clients goroutines and returns how long
// they took.
func concurrently(clients, calls int, call func(i int) error) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= calls {
					return
				}
				if err := call(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	return elapsed, <-errs
}
