package khive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// memoryKind is the note kind of a memory (khive-storage/src/note.rs).
const memoryKind = "memory"

// Store is a memory.ExternalStore over one khive MCP child process. It is safe for
// concurrent use: calls share the child through one MCP client session. The child is
// started on the first call and again on the first call after it died; no call is retried.
type Store struct {
	opts     Options
	manifest memory.Manifest

	mu     sync.Mutex
	c      *session
	closed bool
}

// serverInfo is what the handshake learned about the server: the evidence the manifest
// was verified against.
type serverInfo struct {
	Name     string
	Version  string
	Protocol string
	// RequestHash is the sha256 of the request tool's input schema as encoding/json writes
	// it back (sorted keys): stable across servers that order or space it differently.
	RequestHash string
}

var (
	_ memory.ExternalStore = (*Store)(nil)
	_ memory.Prober        = (*Store)(nil)
)

// New returns a store; it does not start the child (the first call does, so a store made
// while khive cannot start fails that call with MemoryAdapterUnavailable).
func New(opts Options) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, memory.NewAdapterError("", err)
	}
	return &Store{opts: o, manifest: Manifest(o.AdapterID)}, nil
}

// Manifest returns the store's immutable manifest.
func (s *Store) Manifest() memory.Manifest {
	m := s.manifest
	m.NativeItemFields = slices.Clone(m.NativeItemFields)
	m.DroppedItemFields = slices.Clone(m.DroppedItemFields)
	m.SupportedFilters = slices.Clone(m.SupportedFilters)
	return m
}

// Close stops the child process. It is idempotent; later calls are MemoryAdapterUnavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	c := s.c
	s.c, s.closed = nil, true
	s.mu.Unlock()
	if c != nil {
		return c.close()
	}
	return nil
}

// session returns the live session, starting the child when there is none.
func (s *Store) session(ctx context.Context) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, memory.NewUnavailable("khive store is closed", nil)
	}
	if s.c != nil && s.c.alive() {
		return s.c, nil
	}
	s.c = nil
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	c, err := dial(ctx, s.opts.Dialer, s.opts.MaxResponseBytes)
	if err != nil {
		return nil, err
	}
	s.c = c
	return c, nil
}

// drop forgets c if it is still the store's session and ends it, so the next call starts
// a new child instead of finding the broken one before its end is noticed.
func (s *Store) drop(c *session) {
	s.mu.Lock()
	if s.c == c {
		s.c = nil
	}
	s.mu.Unlock()
	_ = c.close()
}

// Store writes item as a khive memory keyed by its id and returns item.ID. created_at and
// metadata are dropped fields (khive sets created_at itself; memory.remember takes no
// metadata); they are accepted and not stored.
func (s *Store) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	if item.ID == uuid.Nil {
		return uuid.Nil, memory.NewAdapterError("store: nil id", nil)
	}
	if err := memory.CheckItemLimits(item); err != nil {
		return uuid.Nil, err
	}
	if err := memory.CheckItemDepth(item); err != nil {
		return uuid.Nil, err
	}
	content := item.ContentJSON()
	if !json.Valid(content) {
		return uuid.Nil, memory.NewAdapterError("store: content is not valid JSON", nil)
	}
	if !utf8.Valid(content) {
		return uuid.Nil, memory.NewAdapterError("store: content must be valid UTF-8", nil)
	}
	for _, t := range item.Tags {
		if !utf8.ValidString(t) {
			return uuid.Nil, memory.NewAdapterError("store: tags must be valid UTF-8", nil)
		}
	}
	text, err := encodeContent(item.ID.String(), content)
	if err != nil {
		return uuid.Nil, memory.NewAdapterError("store: encode content", err)
	}
	size := len(text)
	for _, t := range item.Tags {
		size += len(t) + 3
	}
	if size > s.opts.MaxItemBytes {
		return uuid.Nil, memory.NewAdapterError(fmt.Sprintf("store: item larger than %d bytes", s.opts.MaxItemBytes), nil)
	}
	args := map[string]any{
		"content":     text,
		"memory_type": "semantic",
		"namespace":   s.opts.Namespace,
		"key":         item.ID.String(),
	}
	if len(item.Tags) > 0 {
		// khive stores tags only when non-empty (remember.rs); an empty list reads back as [].
		args["tags"] = item.Tags
	}
	raw, err := s.request(ctx, op{Tool: "memory.remember", Args: args})
	if err != nil {
		var f *opFailure
		if errors.As(err, &f) {
			return uuid.Nil, f.typed()
		}
		return uuid.Nil, err
	}
	var ack struct {
		ID       string `json:"id"`
		Kind     string `json:"kind"`
		Replayed bool   `json:"replayed"`
	}
	if err := json.Unmarshal(raw, &ack); err != nil {
		return uuid.Nil, memory.NewAdapterError("store: malformed memory.remember result", err)
	}
	if _, err := uuid.Parse(ack.ID); err != nil || ack.Kind != memoryKind {
		// ADR-0093 D3: a success without a usable identity is a failed write.
		return uuid.Nil, memory.NewAdapterError(fmt.Sprintf("store: memory.remember acknowledged without a usable identity (id %q, kind %q)", truncate(ack.ID, 40), truncate(ack.Kind, 40)), nil)
	}
	if ack.Replayed {
		// The key already held this content: khive returned the first write unchanged. Its
		// tags may differ from this item's, which would be a silent loss.
		got, err := s.Retrieve(ctx, item.ID)
		if err != nil {
			return uuid.Nil, err
		}
		if got == nil || !slices.Equal(got.Tags, nonNil(item.Tags)) {
			return uuid.Nil, memory.NewAdapterError("store: id already stored with the same content but other tags; khive keeps the first write", nil)
		}
	}
	return item.ID, nil
}

// Retrieve reads the memory keyed by id through kg get. No note, or a note of another kind
// under that key, is (nil, nil).
func (s *Store) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	raw, err := s.request(ctx, op{Tool: "get", Args: map[string]any{"key": id.String()}})
	if err != nil {
		var f *opFailure
		if errors.As(err, &f) {
			if f.notFound() {
				return nil, nil
			}
			return nil, f.typed()
		}
		return nil, err
	}
	n, err := decodeNote(raw)
	if err != nil {
		return nil, memory.NewAdapterError("retrieve: malformed kg get result", err)
	}
	if !n.isMemory() {
		// ADR-0093 D3: a record of another native kind is absent, never coerced.
		return nil, nil
	}
	it, err := n.item(true)
	if errors.Is(err, errForeign) {
		return nil, memory.NewAdapterError("retrieve: the memory under this key was not written by the memory adapter", nil)
	}
	if err != nil {
		return nil, memory.NewAdapterError("retrieve: malformed memory", err)
	}
	if it.ID != id || (n.Key != nil && *n.Key != id.String()) {
		return nil, memory.NewAdapterError("retrieve: kg get returned a memory with another identity", nil)
	}
	return &it, nil
}

// Search answers a query with text through memory.recall (ranked) and one without text
// through kg list (the first page, insertion order). Hits never carry tags.
func (s *Store) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	if err := memory.CheckQuery(s.manifest, q); err != nil {
		return nil, err
	}
	if err := memory.CheckQueryLimits(q); err != nil {
		return nil, err
	}
	if err := memory.CheckQueryDepth(q); err != nil {
		return nil, err
	}
	if q.Limit == 0 {
		return []memory.Item{}, nil
	}
	for _, t := range q.Tags {
		if !utf8.ValidString(t) {
			return nil, memory.NewAdapterError("search: tags must be valid UTF-8", nil)
		}
	}
	if q.Text != nil && *q.Text != "" {
		return s.recall(ctx, q)
	}
	return s.list(ctx, q)
}

func (s *Store) recall(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	args := map[string]any{
		"query":        *q.Text,
		"limit":        min(q.Limit, MaxRecallLimit),
		"namespace":    s.opts.Namespace,
		"full_content": true,
	}
	if len(q.Tags) > 0 {
		args["tags"], args["tag_mode"] = q.Tags, "any"
	}
	raw, err := s.request(ctx, op{Tool: "memory.recall", Args: args})
	if err != nil {
		var f *opFailure
		if errors.As(err, &f) {
			return nil, f.typed()
		}
		return nil, err
	}
	hits, err := decodeRecall(raw)
	if err != nil {
		return nil, memory.NewAdapterError("search: malformed memory.recall result", err)
	}
	out := make([]memory.Item, 0, len(hits))
	for _, h := range hits {
		if h.Truncated {
			// Content cut by khive's budget cannot be projected exactly: the hit is left out
			// (L9 ranked_result_shrinkage), never passed on partial.
			continue
		}
		it, err := h.item()
		if errors.Is(err, errForeign) {
			continue
		}
		if err != nil {
			return nil, memory.NewAdapterError("search: malformed recall hit", err)
		}
		out = append(out, it)
		if len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

func (s *Store) list(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	out := []memory.Item{}
	offset := 0
	for range maxListPages {
		args := map[string]any{
			"kind":      "note",
			"note_kind": memoryKind,
			"limit":     MaxListPage,
			"offset":    offset,
		}
		if len(q.Tags) > 0 {
			args["tags"], args["tag_mode"] = q.Tags, "any"
		}
		raw, err := s.request(ctx, op{Tool: "list", Args: args})
		if err != nil {
			var f *opFailure
			if errors.As(err, &f) {
				return nil, f.typed()
			}
			return nil, err
		}
		page, err := decodeList(raw)
		if err != nil {
			return nil, memory.NewAdapterError("search: malformed kg list result", err)
		}
		for _, n := range page.Items {
			if !n.isMemory() {
				continue
			}
			it, err := n.item(false)
			if errors.Is(err, errForeign) {
				continue
			}
			if err != nil {
				return nil, memory.NewAdapterError("search: malformed memory in kg list", err)
			}
			// kg list matches tags case-insensitively; the contract's any-of match is exact
			// (L7 tag_case_semantics), so the page is narrowed here, never widened.
			if len(q.Tags) > 0 && !slices.ContainsFunc(q.Tags, func(t string) bool { return slices.Contains(n.tags(), t) }) {
				continue
			}
			out = append(out, it)
			if len(out) == q.Limit {
				return out, nil
			}
		}
		if !page.HasMore || len(page.Items) == 0 {
			return out, nil
		}
		offset += len(page.Items)
	}
	return out, nil
}

// Probe reports the server's name and version from the MCP handshake and checks the two
// wire features the manifest rests on: the request tool (its input-schema hash is the
// evidence of a verb-schema change) and key lookup through kg get.
func (s *Store) Probe(ctx context.Context) (memory.Evidence, error) {
	c, err := s.session(ctx)
	if err != nil {
		return memory.Evidence{}, err
	}
	info := c.info
	ev := memory.Evidence{
		ServiceVersion: strings.TrimSpace(info.Name + " " + info.Version),
		ObservedAt:     time.Now().UTC(),
		Probes: []memory.ProbeResult{
			{Name: "request_tool", OK: true, Detail: "MCP " + info.Protocol + ", input schema " + info.RequestHash},
		},
	}
	_, err = s.request(ctx, op{Tool: "get", Args: map[string]any{"key": uuid.NewString()}})
	var f *opFailure
	switch {
	case err == nil:
		ev.Probes = append(ev.Probes, memory.ProbeResult{Name: "keyed_get", OK: false, Detail: "get(key=<random uuid>) found a record"})
	case errors.As(err, &f) && f.notFound():
		ev.Probes = append(ev.Probes, memory.ProbeResult{Name: "keyed_get", OK: true})
	case errors.As(err, &f):
		ev.Probes = append(ev.Probes, memory.ProbeResult{Name: "keyed_get", OK: false, Detail: truncate(f.Error(), 300)})
	default:
		return memory.Evidence{}, err
	}
	return ev, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
