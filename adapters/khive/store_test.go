package khive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/memory-adapter-operator/adapters/khive/khivefake"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// recorder tees what the adapter writes to the server.
type recorder struct {
	io.ReadWriteCloser
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (r recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.buf.Write(p)
	r.mu.Unlock()
	return r.ReadWriteCloser.Write(p)
}

// fakeStore returns a store over an in-process fake and the backing it shares.
func fakeStore(t *testing.T, ns string) (*Store, *khivefake.Memory, func() string) {
	t.Helper()
	b := &khivefake.Memory{}
	var mu sync.Mutex
	var buf bytes.Buffer
	s, err := New(Options{Namespace: ns, Dialer: func(context.Context) (Transport, error) {
		return recorder{khivefake.Pipe(&khivefake.Server{Backing: b, Namespace: ns}), &mu, &buf}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, b, func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
}

// TestVerbosePresentationAlways is the L11 guard: every tools/call asks for verbose.
func TestVerbosePresentationAlways(t *testing.T) {
	s, _, sent := fakeStore(t, "ns")
	ctx := context.Background()
	it := memory.NewItem(json.RawMessage(`"hello world"`), "t")
	if _, err := s.Store(ctx, it); err != nil {
		t.Fatal(err)
	}
	_, _ = s.Retrieve(ctx, it.ID)
	text := "hello"
	_, _ = s.Search(ctx, memory.Query{Text: &text, Limit: 5})
	_, _ = s.Search(ctx, memory.Query{Limit: 5})
	calls := 0
	for _, line := range strings.Split(strings.TrimSpace(sent()), "\n") {
		if !strings.Contains(line, `"tools/call"`) {
			continue
		}
		calls++
		if !strings.Contains(line, `"presentation":"verbose"`) {
			t.Errorf("tools/call without the verbose presentation: %s", line)
		}
	}
	if calls != 4 {
		t.Fatalf("saw %d tools/call requests, want 4", calls)
	}
}

// TestExactnessFixtures stores storetest's portable fixtures and checks the native fields
// (id, content, tags) on retrieve and content on search; created_at and metadata are dropped
// (L2, L4) and come back as khive's creation time and {}.
func TestExactnessFixtures(t *testing.T) {
	s, _, _ := fakeStore(t, "ns")
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	stored := map[uuid.UUID]memory.Item{}
	for _, fx := range storetest.Fixtures() {
		it := fx.Item
		it.ID = uuid.New()
		it.CreatedAt = 915148800.0000001
		if it.Tags == nil {
			it.Tags = []string{}
		}
		if _, err := s.Store(ctx, it); err != nil {
			t.Fatalf("%s: store: %v", fx.Name, err)
		}
		got, err := s.Retrieve(ctx, it.ID)
		if err != nil || got == nil {
			t.Fatalf("%s: retrieve: %v, %v", fx.Name, got, err)
		}
		if d := got.Diff(it); !slices.Equal(d, []memory.ItemField{memory.FieldCreatedAt}) && !slices.Equal(d, []memory.ItemField{memory.FieldCreatedAt, memory.FieldMetadata}) {
			t.Errorf("%s: retrieve differs in %v, want only the dropped fields", fx.Name, d)
		}
		if len(got.Metadata) != 0 || memory.TimeOf(got.CreatedAt).Before(before.Truncate(time.Microsecond)) {
			t.Errorf("%s: dropped fields: metadata %v, created_at %s; want {} and khive's creation time", fx.Name, got.Metadata, memory.FormatTimestamp(got.CreatedAt))
		}
		stored[it.ID] = it
	}
	hits, err := s.Search(ctx, memory.Query{Limit: 100})
	if err != nil || len(hits) != len(stored) {
		t.Fatalf("search: %d hits, %v", len(hits), err)
	}
	for _, h := range hits {
		if !memory.JSONEqual(h.ContentJSON(), stored[h.ID].ContentJSON()) || len(h.Tags) != 0 {
			t.Errorf("hit %s: content %s tags %q", h.ID, h.ContentJSON(), h.Tags)
		}
	}
}

// TestDroppedFields: L2 and L4 on their own.
func TestDroppedFields(t *testing.T) {
	s, _, _ := fakeStore(t, "ns")
	ctx := context.Background()
	it := memory.NewItem(json.RawMessage(`{"k":1}`), "a", "a")
	it.CreatedAt = 1
	it.Metadata = map[string]json.RawMessage{"branch_id": json.RawMessage(`"b"`)}
	if _, err := s.Store(ctx, it); err != nil {
		t.Fatal(err)
	}
	got, err := s.Retrieve(ctx, it.ID)
	if err != nil || got == nil {
		t.Fatal(got, err)
	}
	if memory.SameTimestamp(got.CreatedAt, it.CreatedAt) || len(got.Metadata) != 0 || !slices.Equal(got.Tags, it.Tags) {
		t.Fatalf("got %+v", got)
	}
}

// TestForeignMemories: L3. A memory another khive client wrote (plain text, no envelope) is
// not an item: search skips it, retrieve by its key is a MemoryAdapterError.
func TestForeignMemories(t *testing.T) {
	s, b, _ := fakeStore(t, "ns")
	ctx := context.Background()
	key := uuid.New()
	if err := b.Update(func(st *khivefake.State) error {
		st.Notes = append(st.Notes, khivefake.Note{ID: uuid.NewString(), Namespace: "ns", Kind: "memory", Key: key.String(),
			Content: "plain text from another client", Properties: map[string]any{"memory_type": "episodic"}, CreatedAtUS: 1, Indexed: true})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mine := memory.NewItem(json.RawMessage(`"mine: plain text"`))
	if _, err := s.Store(ctx, mine); err != nil {
		t.Fatal(err)
	}
	text := "plain text"
	for _, q := range []memory.Query{{Limit: 10}, {Text: &text, Limit: 10}} {
		hits, err := s.Search(ctx, q)
		if err != nil || len(hits) != 1 || hits[0].ID != mine.ID {
			t.Fatalf("search %v: %d hits, %v", q.Text != nil, len(hits), err)
		}
	}
	if got, err := s.Retrieve(ctx, key); !errors.Is(err, memory.ErrAdapter) || got != nil {
		t.Fatalf("retrieve of a foreign memory: %v, %v", got, err)
	}
}

// TestListTagsExact: L7. kg list matches tags case-insensitively; the adapter narrows.
func TestListTagsExact(t *testing.T) {
	s, _, _ := fakeStore(t, "ns")
	ctx := context.Background()
	upper := memory.NewItem(json.RawMessage(`"upper"`), "Foo")
	lower := memory.NewItem(json.RawMessage(`"lower"`), "foo")
	for _, it := range []memory.Item{upper, lower} {
		if _, err := s.Store(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := s.Search(ctx, memory.Query{Tags: []string{"foo"}, Limit: 10})
	if err != nil || len(hits) != 1 || hits[0].ID != lower.ID {
		t.Fatalf("tags [foo]: %d hits, %v", len(hits), err)
	}
}

// TestDuplicateIDs: same content replays, other tags or other content fail.
func TestDuplicateIDs(t *testing.T) {
	s, _, _ := fakeStore(t, "ns")
	ctx := context.Background()
	it := memory.NewItem(json.RawMessage(`"dup"`), "a")
	for range 2 {
		if id, err := s.Store(ctx, it); err != nil || id != it.ID {
			t.Fatalf("store of the same item: %s, %v", id, err)
		}
	}
	other := it
	other.Tags = []string{"b"}
	if _, err := s.Store(ctx, other); !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("same id and content, other tags: %v, want MemoryAdapterError", err)
	}
	other = it
	other.Content = json.RawMessage(`"changed"`)
	if _, err := s.Store(ctx, other); !errors.Is(err, memory.ErrAdapter) || !strings.Contains(err.Error(), "idempotency_key_conflict") {
		t.Fatalf("same id, other content: %v, want the conflict as MemoryAdapterError", err)
	}
}

// TestEnvelopeFailures classifies every failure shape of one request envelope.
func TestEnvelopeFailures(t *testing.T) {
	wrap := func(text string, isError bool) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": isError})
		return b
	}
	for _, tc := range []struct {
		name        string
		raw         json.RawMessage
		notFound    bool
		unavailable bool
	}{
		{"not found", wrap(`{"results":[{"ok":false,"tool":"get","error":{"kind":"not_found","message":"not found: x"}}]}`, true), true, false},
		{"not found by message", wrap(`{"results":[{"ok":false,"tool":"get","error":{"kind":"runtime_error","message":"not found: x"}}]}`, true), true, false},
		{"conflict", wrap(`{"results":[{"ok":false,"tool":"memory.remember","error":{"kind":"conflict","message":"idempotency_key_conflict: k"}}]}`, true), false, false},
		{"freshness", wrap(`{"results":[{"ok":false,"tool":"memory.recall","error":{"kind":"unavailable","message":"freshness_unmet: m","retryable":true}}]}`, true), false, true},
		{"refused verb", wrap(`{"results":[{"ok":false,"tool":"x","reason":"verb_refused","error":{"kind":"verb_refused","message":"unknown verb"}}]}`, true), false, false},
		{"ok under isError", wrap(`{"results":[{"ok":true,"tool":"get","result":{}}]}`, true), false, false},
		{"two results", wrap(`{"results":[{"ok":true,"result":1},{"ok":true,"result":2}]}`, false), false, false},
		{"no ok", wrap(`{"results":[{"result":1}]}`, false), false, false},
		{"not json", wrap(`table output`, false), false, false},
		{"no content", json.RawMessage(`{"content":[],"isError":false}`), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr mcp.CallToolResult
			if err := json.Unmarshal(tc.raw, &tr); err != nil {
				t.Fatalf("the SDK does not decode %s: %v", tc.raw, err)
			}
			_, err := decodeEnvelope(&tr, "get")
			var f *opFailure
			isF := errors.As(err, &f)
			switch {
			case err == nil:
				t.Fatal("no error")
			case tc.notFound:
				if !isF || !f.notFound() {
					t.Fatalf("%v: want not-found", err)
				}
			case tc.unavailable:
				if !isF || !errors.Is(f.typed(), memory.ErrUnavailable) {
					t.Fatalf("%v: want MemoryAdapterUnavailable", err)
				}
			case isF:
				if te := f.typed(); !errors.Is(te, memory.ErrAdapter) || errors.Is(te, memory.ErrUnavailable) || f.notFound() {
					t.Fatalf("%v: want MemoryAdapterError", te)
				}
			default:
				if !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
					t.Fatalf("%v: want MemoryAdapterError", err)
				}
			}
		})
	}
}

// scripted answers the handshake, then every tools/call with reply(id).
func scripted(reply func(id int64) string) Dialer {
	return func(context.Context) (Transport, error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		go func() {
			dec := json.NewDecoder(inR)
			for {
				var req struct {
					ID     *int64 `json:"id"`
					Method string `json:"method"`
				}
				if err := dec.Decode(&req); err != nil {
					_ = outW.Close()
					return
				}
				if req.ID == nil {
					continue
				}
				var line string
				switch req.Method {
				case "initialize":
					line = `{"jsonrpc":"2.0","id":` + itoa(*req.ID) + `,"result":{"protocolVersion":"2025-06-18","serverInfo":{"name":"scripted","version":"1"}}}`
				case "tools/list":
					line = `{"jsonrpc":"2.0","id":` + itoa(*req.ID) + `,"result":{"tools":[{"name":"request","inputSchema":{}}]}}`
				default:
					line = reply(*req.ID)
				}
				if _, err := outW.Write([]byte(line + "\n")); err != nil {
					return
				}
			}
		}()
		return pipeTransport{outR, inW}, nil
	}
}

type pipeTransport struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (p pipeTransport) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipeTransport) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeTransport) Close() error                { _ = p.w.Close(); return p.r.Close() }

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestTransportFailures covers the JSON-RPC error, an oversized response and a server that
// never answers.
func TestTransportFailures(t *testing.T) {
	for _, tc := range []struct {
		name        string
		reply       func(id int64) string
		unavailable bool
	}{
		{"json-rpc error", func(id int64) string {
			return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"error":{"code":-32602,"message":"invalid params","data":{"reason":"parse-error"}}}`
		}, false},
		{"oversized response", func(id int64) string {
			return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"result":"` + strings.Repeat("x", 4096) + `"}`
		}, false},
		{"a line that is not JSON-RPC", func(int64) string { return "panic: something broke" }, true},
		{"oversized response without a readable id", func(int64) string {
			return `{"result":"` + strings.Repeat("x", 4096) + `"}`
		}, true},
		{"no answer", func(id int64) string { return `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}` }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Options{Namespace: "ns", Dialer: scripted(tc.reply), MaxResponseBytes: 1024, RequestTimeout: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			got, err := s.Retrieve(context.Background(), uuid.New())
			if got != nil || err == nil {
				t.Fatalf("retrieve: %v, %v; want an error", got, err)
			}
			if errors.Is(err, memory.ErrUnavailable) != tc.unavailable || !errors.Is(err, memory.ErrAdapter) {
				t.Fatalf("retrieve: %v; unavailable want %v", err, tc.unavailable)
			}
		})
	}
}

// TestClosedStore: Close is idempotent and later calls are unavailable.
func TestClosedStore(t *testing.T) {
	storetest.ClosedStore(t, func(t *testing.T) storetest.ClosableStore {
		s, _, _ := fakeStore(t, "ns")
		return s
	})
}

// TestOneBadAnswerKeepsTheSession: an oversized answer whose id is readable, and a result
// that does not decode as a tools/call result, fail only their own call as
// MemoryAdapterError; the next call is served by the same child.
func TestOneBadAnswerKeepsTheSession(t *testing.T) {
	notFound := `{"content":[{"type":"text","text":"{\"results\":[{\"ok\":false,\"tool\":\"get\",\"error\":{\"kind\":\"not_found\",\"message\":\"not found: k\"}}]}"}],"isError":true}`
	for _, bad := range []struct {
		name  string
		reply func(id int64) string
	}{
		{"oversized", func(id int64) string {
			return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"result":"` + strings.Repeat("x", 4096) + `"}`
		}},
		{"undecodable result", func(id int64) string {
			return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"result":{"content":5}}`
		}},
	} {
		t.Run(bad.name, func(t *testing.T) {
			var mu sync.Mutex
			calls, dials := 0, 0
			script := scripted(func(id int64) string {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls == 1 {
					return bad.reply(id)
				}
				// Later requests (the ping that tells a bad answer from a lost stream, the next
				// call) are answered as khive answers a get of a missing key.
				return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"result":` + notFound + `}`
			})
			s, err := New(Options{Namespace: "ns", MaxResponseBytes: 1024, Dialer: func(ctx context.Context) (Transport, error) {
				mu.Lock()
				dials++
				mu.Unlock()
				return script(ctx)
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			ctx := context.Background()
			if got, err := s.Retrieve(ctx, uuid.New()); got != nil || !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
				t.Fatalf("retrieve with a bad answer: %v, %v; want MemoryAdapterError", got, err)
			}
			if got, err := s.Retrieve(ctx, uuid.New()); got != nil || err != nil {
				t.Fatalf("retrieve after the bad answer: %v, %v; want not found", got, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if dials != 1 {
				t.Fatalf("%d children started, want 1: a bad answer must not cost the session", dials)
			}
		})
	}
}
