package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// ServiceKnobs change what the fake service does. A correct adapter stays conformant over
// any combination as long as its manifest is TruthfulManifest's.
type ServiceKnobs struct {
	// EventualIndex keeps new writes out of search until MakeSearchIndexVisible.
	EventualIndex bool
	// DropSearchTags makes search hits carry no tags (retrieve still has them).
	DropSearchTags bool
	// DropMetadata makes the service discard metadata on write.
	DropMetadata bool
	// AlterMetadata stores metadata values through float64, as a JSON-as-double service
	// does: integers above 2^53 change.
	AlterMetadata bool
	// SearchDropsMetadata makes search hits carry no metadata (retrieve still has it).
	SearchDropsMetadata bool
	// NormalizeTimestamps truncates created_at to whole seconds.
	NormalizeTimestamps bool
	// MicrosecondTimestamps keeps created_at to the nearest microsecond, as a timestamptz or
	// an integer-microsecond column does: lionagi's time.time() values come back altered.
	MicrosecondTimestamps bool
	// DropCreatedAt makes the service ignore created_at and report the Unix epoch.
	DropCreatedAt bool
	// FilterableKeys, when not nil, is the closed set of metadata keys the service can
	// filter on; a search on another key fails with a service error.
	FilterableKeys []string
	// MidCallOutage makes an outage cut connections mid-call: a write is applied by the
	// service but its response is lost. Without it, an outage refuses connections.
	MidCallOutage bool
}

// Native service errors, as a real client library would return them.
var (
	errNotFound     = errors.New("fake service: 404 record not found")
	errRefused      = errors.New("fake transport: connect: connection refused")
	errReset        = errors.New("fake transport: read: connection reset by peer")
	errRejected     = errors.New("fake service: 409 write rejected by service policy")
	errBadFilter    = errors.New("fake service: 400 field is not filterable")
	errHarnessClose = errors.New("fake harness: closed")
)

// record is the service's native record. Kind "memory" is a memory item; the service also
// holds other kinds under the same key space.
type record struct {
	Kind    string                     `json:"kind"`
	Key     string                     `json:"key"`
	Body    json.RawMessage            `json:"body"`
	Labels  []string                   `json:"labels,omitempty"`
	Attrs   map[string]json.RawMessage `json:"attrs,omitempty"`
	Ts      float64                    `json:"ts"`
	NoIndex bool                       `json:"noindex,omitempty"`
}

// nativeQuery is the service's search request.
type nativeQuery struct {
	Text   *string           `json:"text,omitempty"`
	Labels []string          `json:"labels,omitempty"`
	Where  map[string]string `json:"where,omitempty"`
	Max    int               `json:"max"`
}

// searchResponse is the service's search envelope; Stats is a native object that must never
// escape the adapter as an item.
type searchResponse struct {
	Hits  []json.RawMessage `json:"hits"`
	Stats json.RawMessage   `json:"stats"`
}

// service is the fake backend: one key space, an index, counters and fault switches.
type service struct {
	knobs ServiceKnobs

	mu           sync.Mutex
	records      map[string]record
	order        []string
	indexed      map[string]bool
	down         bool
	malformed    bool
	identityless bool
	rejectKeys   map[string]bool
	requests     int64
	filters      []string
}

func newService(k ServiceKnobs) *service {
	s := &service{knobs: k}
	s.reset()
	return s
}

// reset empties the key space and restores the transport, in place, so that stores made
// earlier see the emptied namespace as a real disposable scope would.
func (s *service) reset() {
	s.records = map[string]record{}
	s.order = nil
	s.indexed = map[string]bool{}
	s.down, s.malformed, s.identityless = false, false, false
	s.rejectKeys = map[string]bool{}
	s.filters = nil
}

// attrKey is the documented native attribute name of a metadata key.
func attrKey(key string) string { return "md:" + key }

// documentedFilter is the textual form of a native filter, as recorded.
func documentedFilter(nativeKey, nativeValue string) string { return nativeKey + "=" + nativeValue }

// float64JSON re-encodes a JSON value through float64, as a JSON-as-double service does.
func float64JSON(v json.RawMessage) json.RawMessage {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return v
	}
	out, err := json.Marshal(x)
	if err != nil {
		return v
	}
	return out
}

// call accounts one request and applies the outage; it returns the error a client sees.
func (s *service) call(ctx context.Context, dialErr error) error {
	s.requests++
	if err := ctx.Err(); err != nil {
		return err
	}
	if dialErr != nil {
		return dialErr
	}
	if s.down && !s.knobs.MidCallOutage {
		return errRefused
	}
	return nil
}

func (s *service) put(ctx context.Context, dialErr error, payload []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call(ctx, dialErr); err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(payload, &r); err != nil {
		return nil, errors.New("fake service: 400 malformed record")
	}
	if s.rejectKeys[r.Key] {
		return nil, errRejected
	}
	if s.knobs.DropMetadata {
		r.Attrs = nil
	}
	if s.knobs.AlterMetadata {
		for k, v := range r.Attrs {
			r.Attrs[k] = float64JSON(v)
		}
	}
	if s.knobs.MicrosecondTimestamps {
		r.Ts = math.Round(r.Ts*1e6) / 1e6
	}
	if s.knobs.NormalizeTimestamps {
		r.Ts = math.Trunc(r.Ts)
	}
	if s.knobs.DropCreatedAt {
		r.Ts = 0
	}
	if _, exists := s.records[r.Key]; !exists {
		s.order = append(s.order, r.Key)
	}
	s.records[r.Key] = r
	s.indexed[r.Key] = !s.knobs.EventualIndex && !r.NoIndex
	if s.down {
		// Mid-call outage: the write was applied, the response is lost.
		return nil, errReset
	}
	if s.identityless {
		s.identityless = false
		return []byte(`{"ok":true}`), nil
	}
	return json.Marshal(map[string]string{"key": r.Key})
}

func (s *service) get(ctx context.Context, dialErr error, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call(ctx, dialErr); err != nil {
		return nil, err
	}
	if s.down {
		return nil, errReset
	}
	r, ok := s.records[key]
	if !ok {
		return nil, errNotFound
	}
	b, _ := json.Marshal(r)
	if s.malformed {
		return b[:len(b)/2], nil
	}
	return b, nil
}

func (s *service) search(ctx context.Context, dialErr error, payload []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call(ctx, dialErr); err != nil {
		return nil, err
	}
	if s.down {
		return nil, errReset
	}
	var q nativeQuery
	if err := json.Unmarshal(payload, &q); err != nil {
		return nil, errors.New("fake service: 400 malformed query")
	}
	whereKeys := make([]string, 0, len(q.Where))
	for k := range q.Where {
		whereKeys = append(whereKeys, k)
	}
	slices.Sort(whereKeys)
	for _, k := range whereKeys {
		s.filters = append(s.filters, documentedFilter(k, q.Where[k]))
		if s.knobs.FilterableKeys != nil && !slices.Contains(s.knobs.FilterableKeys, strings.TrimPrefix(k, "md:")) {
			return nil, errBadFilter
		}
	}
	var matched []record
	for _, key := range s.order {
		r := s.records[key]
		if !s.indexed[key] || !s.matches(r, q) {
			continue
		}
		matched = append(matched, r)
	}
	// The service's "max" has Python slice semantics, like lionagi's reference store: a
	// negative value drops items from the end. Adapters must not pass negatives on.
	switch {
	case q.Max >= 0 && q.Max < len(matched):
		matched = matched[:q.Max]
	case q.Max < 0:
		matched = matched[:max(0, len(matched)+q.Max)]
	}
	resp := searchResponse{Hits: []json.RawMessage{}, Stats: json.RawMessage(`{"kind":"stats","took_us":17,"shard":"a"}`)}
	for _, r := range matched {
		if s.knobs.DropSearchTags {
			r.Labels = nil
		}
		if s.knobs.SearchDropsMetadata {
			r.Attrs = nil
		}
		b, _ := json.Marshal(r)
		resp.Hits = append(resp.Hits, b)
	}
	b, _ := json.Marshal(resp)
	if s.malformed {
		return b[:len(b)/2], nil
	}
	return b, nil
}

// matches applies the service's predicates: literal case-insensitive substring on the body's
// text, any-of labels, and equality on attributes. Attribute comparison is loose (a number
// equals its decimal string), as in many document stores; only the recorded native filter
// shows whether the adapter sent the documented typed value.
func (s *service) matches(r record, q nativeQuery) bool {
	if q.Text != nil && !strings.Contains(memory.SearchText(r.Body), strings.ToLower(*q.Text)) {
		return false
	}
	if len(q.Labels) > 0 && !slices.ContainsFunc(q.Labels, func(l string) bool { return slices.Contains(r.Labels, l) }) {
		return false
	}
	for k, want := range q.Where {
		got, ok := r.Attrs[k]
		if !ok || !looseEqual(got, json.RawMessage(want)) {
			return false
		}
	}
	return true
}

func looseEqual(a, b json.RawMessage) bool {
	if memory.JSONEqual(a, b) {
		return true
	}
	return textOf(a) == textOf(b)
}

func textOf(v json.RawMessage) string {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return string(v)
	}
	return buf.String()
}
