package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestRejectsWhatPostgresCannotStore is the declared U+0000 behavior: PostgreSQL text and
// jsonb cannot hold U+0000, so such items are refused before the write with
// MemoryAdapterError, and nothing is written.
func TestRejectsWhatPostgresCannotStore(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	cases := map[string]memory.Item{
		"escaped NUL in content":    {Content: json.RawMessage(`{"s":"a\u0000b"}`)},
		"escaped NUL in object key": {Content: json.RawMessage(`{"a\u0000":1}`)},
		"escaped NUL in metadata":   {Metadata: map[string]json.RawMessage{"source": json.RawMessage(`"x\u0000"`)}},
		"NUL in metadata key":       {Metadata: map[string]json.RawMessage{"k\x00": json.RawMessage(`1`)}},
		"NUL in tag":                {Tags: []string{"t\x00"}},
		"unpaired high surrogate":   {Content: json.RawMessage(`"\ud800x"`)},
		"unpaired low surrogate":    {Content: json.RawMessage(`"\udc00"`)},
		"uppercase escaped NUL":     {Content: json.RawMessage(`["\U0000"]`)},
	}
	for name, it := range cases {
		t.Run(name, func(t *testing.T) {
			it.ID = uuid.New()
			it.CreatedAt = memory.Now()
			id, err := s.Store(context.Background(), it)
			// An invalid JSON escape (\U) is also rejected, by the JSON check.
			if !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) || id != uuid.Nil {
				t.Fatalf("got %v, %v; want uuid.Nil and MemoryAdapterError", id, err)
			}
			if got, err := s.Retrieve(context.Background(), it.ID); err != nil || got != nil {
				t.Fatalf("rejected item was written: %v, %v", got, err)
			}
		})
	}
	// A query predicate containing U+0000 can match nothing storable: empty, not an error.
	for name, q := range map[string]memory.Query{
		"text":   {Text: ptr("a\x00"), Limit: 5},
		"tag":    {Tags: []string{"\x00"}, Limit: 5},
		"filter": {Filters: map[string]json.RawMessage{"source": json.RawMessage(`"\u0000"`)}, Limit: 5},
	} {
		hits, err := s.Search(context.Background(), q)
		if err != nil || hits == nil || len(hits) != 0 {
			t.Errorf("search %s with U+0000: got %v, %v; want [] and no error", name, hits, err)
		}
	}
}

// TestServerKillAndRestart kills a real server mid-run: explicit calls must fail with
// MemoryAdapterUnavailable (never nil or empty results) and, once the server is back, the
// same adapter instance must recover without being reopened.
func TestServerKillAndRestart(t *testing.T) {
	srv, err := startServer()
	if err != nil {
		t.Fatalf("start a dedicated server: %v", err)
	}
	defer srv.stop()
	ctx := context.Background()
	s, err := Open(ctx, Options{URL: srv.url, Scope: "kill-restart", RequestTimeout: 3 * time.Second, ConnectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	it := memory.NewItem(json.RawMessage(`"survives the restart"`), "k")
	mustStore(t, s, it)

	if err := srv.crash(); err != nil {
		t.Fatalf("crash: %v", err)
	}
	if id, err := s.Store(ctx, memory.NewItem(json.RawMessage(`1`))); !errors.Is(err, memory.ErrUnavailable) || id != uuid.Nil {
		t.Errorf("store while down: got %v, %v; want MemoryAdapterUnavailable", id, err)
	}
	if got, err := s.Retrieve(ctx, it.ID); !errors.Is(err, memory.ErrUnavailable) || got != nil {
		t.Errorf("retrieve while down: got %v, %v; want MemoryAdapterUnavailable", got, err)
	}
	if hits, err := s.Search(ctx, memory.Query{Tags: []string{"k"}, Limit: 5}); !errors.Is(err, memory.ErrUnavailable) || hits != nil {
		t.Errorf("search while down: got %v, %v; want MemoryAdapterUnavailable", hits, err)
	}
	if _, err := s.Probe(ctx); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("probe while down: got %v; want MemoryAdapterUnavailable", err)
	}

	if err := srv.resume(); err != nil {
		t.Fatalf("resume: %v", err)
	}
	// The pool discards dead connections on its own; poll to a deadline for the first success.
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var got *memory.Item
	for {
		got, err = s.Retrieve(ctx, it.ID)
		if err == nil || time.Now().After(deadline) {
			break
		}
		if !errors.Is(err, memory.ErrUnavailable) {
			t.Fatalf("retrieve after restart: unexpected error class: %v", err)
		}
		<-tick.C
	}
	if err != nil || got == nil || !got.Equal(it) {
		t.Fatalf("after restart: got %v, %v; want the stored item", got, err)
	}
	it2 := memory.NewItem(json.RawMessage(`"after"`), "k")
	mustStore(t, s, it2)
	hits, err := s.Search(ctx, memory.Query{Tags: []string{"k"}, Limit: 5})
	if err != nil || len(hits) != 2 {
		t.Fatalf("search after restart: %d hits, %v; want 2", len(hits), err)
	}
}
