package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// wireOps are the operations the wire benchmarks measure; search returns searchHits items.
var wireOps = []string{"store", "retrieve", "search"}

const (
	seeded     = 200
	searchHits = 20
)

// wireBench holds the three arms of one operation: the in-memory store called in-process
// (direct), the same store through remote → server over loopback (wire), and a bare
// net/http client and server moving the bytes a real wire exchange moved (floor).
type wireBench struct {
	direct memory.Store
	wire   *remote.Store
	ids    []memory.Item
	writes []memory.Item
	q      memory.Query
	floor  map[string]*floorCall
}

// newWireBench seeds the store, captures one real exchange per operation and starts the
// floor server. Every arm is checked once here, so that a setup that no longer does what the
// benchmark claims fails instead of measuring something else.
func newWireBench(b *testing.B) *wireBench {
	b.Helper()
	ctx := context.Background()
	store := inmemory.New(inmemory.Options{})
	hs := serve(b, store, "bench")
	wb := &wireBench{direct: store, ids: make([]memory.Item, seeded), writes: make([]memory.Item, 1000)}
	for i := range wb.ids {
		wb.ids[i] = storetest.BenchItem(i)
		if _, err := store.Store(ctx, wb.ids[i]); err != nil {
			b.Fatal(err)
		}
	}
	// The store arm rewrites 1,000 items of its own, which no search matches, so the store
	// and the search results stay the same size whatever b.N and the order of runs.
	for i := range wb.writes {
		wb.writes[i] = storetest.BenchItem(seeded + i)
		wb.writes[i].Tags = []string{"written"}
		wb.writes[i].Metadata["source"] = json.RawMessage(`"written"`)
	}
	// Every seeded item has the tag "common", so a search with limit 20 returns a full page
	// and the in-memory store stops after the first 20 items it holds: the direct arm stays
	// a few microseconds, not a scan whose garbage would be collected during the other arms.
	wb.q = memory.Query{Tags: []string{"common"}, Limit: searchHits}
	var err error
	if wb.wire, err = remote.New(ctx, remote.Options{BaseURL: hs.URL, Token: "bench"}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = wb.wire.Close() })

	// A second client whose transport records what crosses the wire; the measured client
	// has no recorder in its path.
	rec := &recordingTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
	capture, err := remote.New(ctx, remote.Options{BaseURL: hs.URL, Token: "bench", HTTPClient: &http.Client{Transport: rec}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = capture.Close() }()
	wb.floor = map[string]*floorCall{}
	for _, op := range wireOps {
		rec.last = nil
		if err := wb.call(ctx, capture, op, 0); err != nil {
			b.Fatalf("capturing %s: %v", op, err)
		}
		if rec.last == nil || rec.last.recorded.Len() == 0 {
			b.Fatalf("capturing %s: no exchange recorded", op)
		}
		rec.last.respBody = rec.last.recorded.Bytes()
		wb.floor[op] = rec.last
	}
	startFloor(b, wb.floor)
	for _, op := range wireOps {
		for _, arm := range []string{"direct", "wire", "floor"} {
			if err := wb.run(ctx, op, arm, 0); err != nil {
				b.Fatalf("%s/%s: %v", op, arm, err)
			}
		}
	}
	return wb
}

// call runs op on s, checking that it did what it should.
func (wb *wireBench) call(ctx context.Context, s memory.Store, op string, i int) error {
	switch op {
	case "store":
		want := wb.writes[i%len(wb.writes)]
		id, err := s.Store(ctx, want)
		if err == nil && id != want.ID {
			err = fmt.Errorf("store acknowledged %s, want %s", id, want.ID)
		}
		return err
	case "retrieve":
		it, err := s.Retrieve(ctx, wb.ids[i%seeded].ID)
		if err == nil && it == nil {
			err = fmt.Errorf("seed item %d missing", i%seeded)
		}
		return err
	case "search":
		hits, err := s.Search(ctx, wb.q)
		if err == nil && len(hits) != searchHits {
			err = fmt.Errorf("search found %d items, want %d", len(hits), searchHits)
		}
		return err
	}
	return fmt.Errorf("unknown operation %q", op)
}

// run is one call of op on arm.
func (wb *wireBench) run(ctx context.Context, op, arm string, i int) error {
	switch arm {
	case "direct":
		return wb.call(ctx, wb.direct, op, i)
	case "wire":
		return wb.call(ctx, wb.wire, op, i)
	default:
		return wb.floor[op].do()
	}
}

// BenchmarkWireArms measures each arm of each operation on its own (op/arm), for exact
// allocations per call, CPU profiles of one arm and hack/perf/callgrind.sh's instruction
// counts: direct is the in-memory store in-process, wire the same store through remote →
// server over loopback, floor a bare net/http client and server moving the same request and
// response bytes as the wire (captured from a real exchange). The in-memory store costs a
// few microseconds, so wire − direct is the client, the round trip and the server.
func BenchmarkWireArms(b *testing.B) {
	wb := newWireBench(b)
	ctx := context.Background()
	for _, op := range wireOps {
		for _, arm := range []string{"direct", "wire", "floor"} {
			b.Run(op+"/"+arm, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if err := wb.run(ctx, op, arm, i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkWireInterleaved runs the three arms of BenchmarkWireArms in one loop, in blocks
// of interleaveBlock calls of one arm after the other (each iteration is one call of one
// arm), so that load from other processes weighs on all three alike, and reports each
// arm's µs per call, the wire's added cost (wire − direct) and its ratio to the floor, the
// figure docs/performance.md's goals are stated in. Blocks rather than single calls keep
// most of a collection of the wire's garbage in the wire's own time: call by call, it
// landed in whichever arm ran next and doubled the floor of a search.
func BenchmarkWireInterleaved(b *testing.B) {
	wb := newWireBench(b)
	ctx := context.Background()
	arms := []string{"direct", "wire", "floor"}
	for _, op := range wireOps {
		b.Run(op, func(b *testing.B) {
			var spent [3]time.Duration
			var calls [3]int
			for i := 0; b.Loop(); i++ {
				a := i / interleaveBlock % len(arms)
				start := time.Now()
				if err := wb.run(ctx, op, arms[a], i); err != nil {
					b.Fatalf("%s: %v", arms[a], err)
				}
				spent[a] += time.Since(start)
				calls[a]++
			}
			if calls[2] == 0 {
				b.Fatalf("%d iterations reach no floor call: use at least %d", b.N, 3*interleaveBlock)
			}
			us := func(a int) float64 { return float64(spent[a].Nanoseconds()) / float64(calls[a]) / 1e3 }
			direct, wire, floor := us(0), us(1), us(2)
			b.ReportMetric(direct, "direct-µs")
			b.ReportMetric(wire, "wire-µs")
			b.ReportMetric(floor, "floor-µs")
			b.ReportMetric(wire-direct, "added-µs")
			b.ReportMetric((wire-direct)/floor, "added/floor")
		})
	}
}

// interleaveBlock is how many calls of one arm BenchmarkWireInterleaved makes in a row.
const interleaveBlock = 25

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

// floorCall is one recorded exchange replayed by a bare net/http client against a bare
// handler: the request's method, path, headers and body, and the response's status,
// content headers and body, byte for byte.
type floorCall struct {
	method, path string
	reqHeader    http.Header
	reqBody      []byte
	status       int
	respHeader   http.Header
	respBody     []byte

	url      string
	client   *http.Client
	buf      bytes.Buffer
	recorded bytes.Buffer
}

// do sends the recorded request and fails unless the recorded response came back.
func (f *floorCall) do() error {
	var body io.Reader
	if f.reqBody != nil {
		body = bytes.NewReader(f.reqBody)
	}
	req, err := http.NewRequest(f.method, f.url, body)
	if err != nil {
		return err
	}
	req.Header = f.reqHeader
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	f.buf.Reset()
	_, err = f.buf.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != f.status || !bytes.Equal(f.buf.Bytes(), f.respBody) {
		return fmt.Errorf("floor answered %d with %d bytes, want %d with the recorded %d", resp.StatusCode, f.buf.Len(), f.status, len(f.respBody))
	}
	return nil
}

// startFloor serves every recorded exchange from one bare handler, which checks that the
// request body is the recorded one and answers with the recorded status, content headers
// and body; each call gets a client like remote's (a cloned default transport).
func startFloor(b *testing.B, calls map[string]*floorCall) {
	b.Helper()
	byPath := map[string]*floorCall{}
	for _, c := range calls {
		byPath[c.method+" "+c.path] = c
	}
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := byPath[r.Method+" "+r.URL.Path]
		buf := bufs.Get().(*bytes.Buffer)
		defer bufs.Put(buf)
		buf.Reset()
		_, err := buf.ReadFrom(r.Body)
		if c == nil || err != nil || !bytes.Equal(buf.Bytes(), c.reqBody) {
			http.Error(w, "not the recorded request", http.StatusTeapot)
			return
		}
		h := w.Header()
		for k, v := range c.respHeader {
			h[k] = v
		}
		w.WriteHeader(c.status)
		_, _ = w.Write(c.respBody)
	}))
	b.Cleanup(hs.Close)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	client := &http.Client{Transport: tr}
	b.Cleanup(client.CloseIdleConnections)
	for _, c := range calls {
		c.url = hs.URL + c.path
		c.client = client
	}
}

// recordingTransport keeps the last exchange that went through it; the response body is
// copied as the caller reads it, which remote does to the end.
type recordingTransport struct {
	base http.RoundTripper
	last *floorCall
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := &floorCall{method: req.Method, path: req.URL.Path, reqHeader: req.Header.Clone()}
	if req.GetBody != nil {
		// A fresh reader of the same bytes; req.Body is left to the transport.
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		if c.reqBody, err = io.ReadAll(rc); err != nil {
			return nil, err
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	c.status = resp.StatusCode
	// The content headers the server chose; Date and Content-Length net/http writes itself.
	c.respHeader = http.Header{}
	for _, k := range []string{"Content-Type", "X-Content-Type-Options"} {
		if v := resp.Header.Values(k); len(v) > 0 {
			c.respHeader[k] = v
		}
	}
	if len(c.respHeader) != 2 {
		return nil, fmt.Errorf("recorded response lacks content headers: %v", resp.Header)
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, &c.recorded), resp.Body}
	t.last = c
	return resp, nil
}

// BenchmarkLoopbackFloor/tcp/pingpong is what any wire costs below HTTP on this machine: a
// raw 300-byte exchange on one loopback TCP connection. The HTTP floor with the wire's own
// bytes is BenchmarkWireArms' floor arm.
func BenchmarkLoopbackFloor(b *testing.B) {
	body := []byte(`{"pad":"` + strings.Repeat("x", 290) + `"}`)
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
