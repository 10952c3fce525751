package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// BenchmarkWireArms measures what the wire itself costs per call: each operation runs
// through remote → server → the in-memory reference store over loopback HTTP (op/wire) and
// on the same store in-process (op/direct), one arm at a time. The in-memory store costs a
// few microseconds, so wire − direct is the client, the HTTP round trip and the server (JSON
// both ways, body reads, middleware, metrics). Its allocations per call are exact;
// hack/perf/callgrind.sh counts its instructions per call, which, unlike wall time on a
// shared machine, do not move with load (docs/performance.md).
func BenchmarkWireArms(b *testing.B) {
	ctx := context.Background()
	direct := inmemory.New(inmemory.Options{})
	hs := serve(b, direct, "bench")
	wire, err := remote.New(ctx, remote.Options{BaseURL: hs.URL, Token: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = wire.Close() })
	const seeded = 200
	ids := make([]memory.Item, seeded)
	for i := range ids {
		ids[i] = storetest.BenchItem(i)
		if _, err := direct.Store(ctx, ids[i]); err != nil {
			b.Fatal(err)
		}
	}
	// The store arm rewrites 1,000 items of its own, which no search matches, so the store
	// and the search results stay the same size whatever b.N and the order of runs.
	writes := make([]memory.Item, 1000)
	for i := range writes {
		writes[i] = storetest.BenchItem(seeded + i)
		writes[i].Tags = []string{"written"}
		writes[i].Metadata["source"] = json.RawMessage(`"written"`)
	}
	// Tag t3 with filter source s3: every 100th seeded item, two hits of 200.
	q := memory.Query{Tags: []string{"t3"}, Filters: map[string]json.RawMessage{"source": json.RawMessage(`"s3"`)}, Limit: 10}
	for _, op := range []string{"store", "retrieve", "search"} {
		for _, arm := range []string{"direct", "wire"} {
			var s memory.Store = direct
			if arm == "wire" {
				s = wire
			}
			b.Run(op+"/"+arm, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					var err error
					switch op {
					case "store":
						_, err = s.Store(ctx, writes[i%len(writes)])
					case "retrieve":
						var it *memory.Item
						if it, err = s.Retrieve(ctx, ids[i%seeded].ID); err == nil && it == nil {
							err = fmt.Errorf("seed item %d missing", i%seeded)
						}
					case "search":
						var hits []memory.Item
						if hits, err = s.Search(ctx, q); err == nil && len(hits) != 2 {
							err = fmt.Errorf("search found %d items, want 2", len(hits))
						}
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// serve publishes store through the real server on a loopback listener closed when tb ends.
func serve(tb testing.TB, store memory.ExternalStore, token string) *httptest.Server {
	tb.Helper()
	srv, err := server.New(server.Config{Store: store, Token: []byte(token)})
	if err != nil {
		tb.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	hs := httptest.NewServer(srv.Handler())
	tb.Cleanup(hs.Close)
	return hs
}

// BenchmarkLoopbackFloor is what any HTTP wire costs on this machine before the contract's
// work: http/get is net/http's client and server with a handler that writes a fixed
// 300-byte JSON body (about one item's size), tcp/pingpong a raw 300-byte exchange on one
// loopback TCP connection. docs/performance.md compares BenchmarkWireArms against it.
func BenchmarkLoopbackFloor(b *testing.B) {
	body := []byte(`{"pad":"` + strings.Repeat("x", 290) + `"}`)
	b.Run("http/get", func(b *testing.B) {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}))
		defer hs.Close()
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		defer c.CloseIdleConnections()
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Get(hs.URL + "/v1/items/x")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				b.Fatal(err)
			}
			_ = resp.Body.Close()
		}
	})
	b.Run("tcp/pingpong", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = ln.Close() }()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer func() { _ = c.Close() }()
			buf := make([]byte, len(body))
			for {
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		buf := make([]byte, len(body))
		for b.Loop() {
			if _, err := c.Write(body); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}
