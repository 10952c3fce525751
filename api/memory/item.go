package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// DefaultLimit is lionagi's MemoryQuery default limit; a decoded query without "limit" gets it.
const DefaultLimit = 20

// Item is lionagi's MemoryItem. Content and metadata values are raw JSON so that they keep
// exact numbers and nested structure; use JSONEqual or Item.Equal to compare them.
type Item struct {
	// ID is the item's identity, chosen by the client.
	ID uuid.UUID
	// CreatedAt is Unix seconds as lionagi makes it (time.time()): an IEEE-754 double whose
	// every bit is part of the value (contract.md §3). TimeOf and Timestamp convert.
	CreatedAt float64
	// Metadata maps keys to JSON values; nil means empty.
	Metadata map[string]json.RawMessage
	// Content is any JSON value; nil means JSON null.
	Content json.RawMessage
	// Tags is ordered; order and duplicates are part of the value.
	Tags []string
}

// NewItem returns an item with a fresh UUIDv4 and the current time as a double of Unix
// seconds, as lionagi's defaults (uuid4(), time.time()) do.
func NewItem(content json.RawMessage, tags ...string) Item {
	return Item{
		ID:        uuid.New(),
		CreatedAt: Now(),
		Metadata:  map[string]json.RawMessage{},
		Content:   content,
		Tags:      append([]string{}, tags...),
	}
}

// Clone returns a deep copy, so stores never share mutable state with callers.
func (it Item) Clone() Item {
	out := it
	if it.Metadata != nil {
		out.Metadata = make(map[string]json.RawMessage, len(it.Metadata))
		for k, v := range it.Metadata {
			out.Metadata[k] = slices.Clone(v)
		}
	}
	out.Content = slices.Clone(it.Content)
	out.Tags = slices.Clone(it.Tags)
	return out
}

// ContentJSON returns the content as JSON, with nil meaning null.
func (it Item) ContentJSON() json.RawMessage {
	if len(it.Content) == 0 {
		return json.RawMessage("null")
	}
	return it.Content
}

// Equal reports whether two items are equal under the contract's exactness rules: same id,
// bit-identical created_at, JSON-equal content and metadata, identical tag lists.
func (it Item) Equal(o Item) bool {
	return it.ID == o.ID &&
		SameTimestamp(it.CreatedAt, o.CreatedAt) &&
		MetadataEqual(it.Metadata, o.Metadata) &&
		JSONEqual(it.ContentJSON(), o.ContentJSON()) &&
		slices.Equal(nonNil(it.Tags), nonNil(o.Tags))
}

// Diff names the fields where it and o differ, in the seed's field order.
func (it Item) Diff(o Item) []ItemField {
	var out []ItemField
	if it.ID != o.ID {
		out = append(out, FieldID)
	}
	if !SameTimestamp(it.CreatedAt, o.CreatedAt) {
		out = append(out, FieldCreatedAt)
	}
	if !MetadataEqual(it.Metadata, o.Metadata) {
		out = append(out, FieldMetadata)
	}
	if !JSONEqual(it.ContentJSON(), o.ContentJSON()) {
		out = append(out, FieldContent)
	}
	if !slices.Equal(nonNil(it.Tags), nonNil(o.Tags)) {
		out = append(out, FieldTags)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// MetadataEqual compares two metadata maps by key set and JSON equality of values; nil and
// empty are equal.
func MetadataEqual(a, b map[string]json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || !JSONEqual(av, bv) {
			return false
		}
	}
	return true
}

// itemWire keeps created_at raw: a json.Number field would also accept a quoted string
// ("1.5"), silently coercing a wrong type.
type itemWire struct {
	ID        *string                    `json:"id"`
	CreatedAt json.RawMessage            `json:"created_at"`
	Metadata  map[string]json.RawMessage `json:"metadata"`
	Content   json.RawMessage            `json:"content"`
	Tags      stringList                 `json:"tags"`
}

// stringList decodes a JSON array of strings strictly: encoding/json would turn a null
// element into "" without complaint, which would store a tag the client never sent.
type stringList []string

// UnmarshalJSON implements json.Unmarshaler.
func (l *stringList) UnmarshalJSON(data []byte) error {
	if out, ok := plainStrings(data, ""); ok {
		*l = out
		return nil
	}
	var raw []*string
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw == nil {
		*l = nil
		return nil
	}
	out := make([]string, len(raw))
	for i, s := range raw {
		if s == nil {
			return fmt.Errorf("element %d: null is not a string", i)
		}
		out[i] = *s
	}
	*l = out
	return nil
}

// plainStrings decodes the common shape of a tag list, an array of strings none of which
// holds an escape, a control character or a byte outside ASCII, in one pass: the tags are
// slices of text, which holds data's bytes, or when text is empty of one copy of data made
// here, so the list costs two allocations at most; anything else (null, escapes, other types,
// Unicode, malformed input) reports false and takes encoding/json's path, so results and
// errors stay encoding/json's.
func plainStrings(data []byte, text string) ([]string, bool) {
	i := skipWS(data, 0)
	if i == len(data) || data[i] != '[' {
		return nil, false
	}
	if text == "" {
		text = string(data)
	}
	out, end, ok := plainStringsAt(data, i, text, nil)
	return out, ok && skipWS(data, end) == len(data)
}

// plainStringsAt is plainStrings for the array opening at data[i], which it returns the
// index just past; text holds data's bytes at the same offsets, or is empty for tags copied
// one by one. With arena the tags are appended to *arena and the list is a capped slice of
// it, so a page of items shares one array.
func plainStringsAt(data []byte, i int, text string, arena *[]string) ([]string, int, bool) {
	if i == len(data) || data[i] != '[' {
		return nil, i, false
	}
	if i = skipWS(data, i+1); i < len(data) && data[i] == ']' {
		return []string{}, i + 1, true
	}
	var own []string
	if arena == nil {
		// Room for a usual list: the first append would otherwise allocate twice.
		own = make([]string, 0, 4)
		arena = &own
	}
	first := len(*arena)
	for {
		if i == len(data) || data[i] != '"' {
			return nil, i, false
		}
		start := i + 1
		for i = start; i < len(data) && data[i] != '"'; i++ {
			if c := data[i]; c < 0x20 || c >= 0x80 || c == '\\' {
				return nil, i, false
			}
		}
		if i == len(data) {
			return nil, i, false
		}
		if text != "" {
			*arena = append(*arena, text[start:i])
		} else {
			*arena = append(*arena, string(data[start:i]))
		}
		switch i = skipWS(data, i+1); {
		case i < len(data) && data[i] == ',':
			i = skipWS(data, i+1)
		case i < len(data) && data[i] == ']':
			last := len(*arena)
			return (*arena)[first:last:last], i + 1, true
		default:
			return nil, i, false
		}
	}
}

// isNull reports whether a raw JSON value is absent or the literal null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// MarshalJSON writes the wire form of contract.md §4: created_at as float seconds in the
// shortest form that parses back to the same double, metadata defaulting to {}, content to null and tags to [].
func (it Item) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(sizeHint(&it))
	if _, err := appendItem(&b, &it); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// appendItem writes MarshalJSON's bytes for it to b and reports whether they hold a
// character json.HTMLEscape changes; on error b holds a partial item. Such characters are
// left as they are, because every caller either goes through json.Marshal or
// json.HTMLEscape, which escapes them in the same pass that re-compacts the whole value, so
// the bytes on the wire are unchanged.
func appendItem(b *bytes.Buffer, it *Item) (html bool, err error) {
	if !TimestampInRange(it.CreatedAt) {
		// The decoder rejects these, so writing one would produce an item nobody can read.
		return false, errors.New("created_at: out of range (years 1 to 9999)")
	}
	// A canonical UUID string is hex digits and dashes, so it needs no JSON escaping.
	b.WriteString(`{"id":"`)
	b.Write(AppendID(b.AvailableBuffer(), it.ID))
	b.WriteString(`","created_at":`)
	b.Write(AppendTimestamp(b.AvailableBuffer(), it.CreatedAt))
	b.WriteString(`,"metadata":`)
	// Members in key order, values compacted, as json.Marshal writes a map, taken in one walk
	// of the map (no look-up by key afterwards); a usual item's fit the array on the stack.
	var small [8]member
	members := small[:0]
	for k, v := range it.Metadata {
		members = append(members, member{k, v})
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	b.WriteByte('{')
	for i, m := range members {
		k, v := m.key, m.value
		// encoding/json would replace invalid bytes in a key with U+FFFD and copy them
		// verbatim in a raw value: either way the reader gets something else than was meant.
		if !utf8.ValidString(k) {
			return false, errors.New("metadata: not valid UTF-8")
		}
		if i > 0 {
			b.WriteByte(',')
		}
		html = appendJSONString(b, k) || html
		b.WriteByte(':')
		h, valid, utf := appendRaw(b, v)
		if !valid {
			return false, fmt.Errorf("metadata %q: invalid JSON value", k)
		}
		if !utf {
			return false, errors.New("metadata: not valid UTF-8")
		}
		html = h || html
	}
	b.WriteByte('}')
	b.WriteString(`,"content":`)
	h, valid, utf := appendRaw(b, it.ContentJSON())
	if !valid {
		return false, errors.New("content: invalid JSON value")
	}
	if !utf {
		return false, errors.New("content: not valid UTF-8")
	}
	html = h || html
	b.WriteString(`,"tags":[`)
	for i, t := range it.Tags {
		if !utf8.ValidString(t) {
			return false, fmt.Errorf("tags: element %d is not valid UTF-8", i)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		html = appendJSONString(b, t) || html
	}
	b.WriteString(`]}`)
	return html, nil
}

// member is one metadata key and its value.
type member struct {
	key   string
	value json.RawMessage
}

// appendRaw writes the raw value v as json.Compact writes it, and reports whether the bytes
// written may hold a character json.HTMLEscape changes (never false when they do; a false
// positive only costs the escaping pass), whether v is valid JSON (json.Compact's verdict, an
// empty v being invalid) and whether it is valid UTF-8. The common value, already compact, is
// checked and copied in one pass (scanValue); anything else takes json.Compact.
func appendRaw(b *bytes.Buffer, v []byte) (html, valid, utf bool) {
	if end, _, flags, ok := scanValue(v, 0); ok && end == len(v) && flags&flagSpace == 0 {
		b.Write(v)
		return flags&flagHTML != 0, true, true
	}
	start := b.Len()
	if err := json.Compact(b, v); err != nil || len(v) == 0 {
		return false, false, false
	}
	return needsHTMLEscape(b.Bytes()[start:]), true, utf8.Valid(v)
}

// sizeHint is room for an item's encoding in the common case: the fixed fields plus the
// raw values.
func sizeHint(it *Item) int {
	return 128 + len(it.Content) + 16*len(it.Tags) + 32*len(it.Metadata)
}

// AppendID appends id's canonical form, as uuid.UUID.String spells it, to dst without
// allocating when dst has room: the encoders write one per item, the server one per store.
func AppendID(dst []byte, id uuid.UUID) []byte {
	const hex = "0123456789abcdef"
	for i, c := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hex[c>>4], hex[c&0x0f])
	}
	return dst
}

// MarshalItem returns exactly the bytes json.Marshal(it) returns, in one pass: MarshalJSON's
// output is already compact and valid, so encoding/json's second pass over it only ever
// changes <, >, &, U+2028 and U+2029 inside strings, which json.HTMLEscape does when one is
// present. An item MarshalJSON refuses takes json.Marshal's path, for the same error.
func MarshalItem(it Item) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(sizeHint(&it))
	if err := AppendItemJSON(&buf, &it); err != nil {
		return json.Marshal(it)
	}
	return buf.Bytes(), nil
}

// UnmarshalItem returns what json.Unmarshal(data, &it) gives, with the same errors, in
// fewer passes: json.Unmarshal checks the syntax, skips over the value and only then calls
// UnmarshalJSON, which reads it twice more. A body that is not valid JSON takes
// json.Unmarshal's path, for its syntax error.
func UnmarshalItem(data []byte) (Item, error) {
	return unmarshalOnePass(data, decodeOneItem, (*Item).unmarshalSlow)
}

// unmarshalOnePass is json.Unmarshal(data, &v) for a type whose UnmarshalJSON is onePass,
// then slow for what onePass declines: onePass checks the syntax as it decodes, so valid
// input is read once; invalid input takes json.Unmarshal, for its syntax error.
func unmarshalOnePass[T any](data []byte, onePass func([]byte) (T, bool), slow func(*T, []byte) error) (T, error) {
	if v, ok := onePass(data); ok {
		return v, nil
	}
	var v T
	if !json.Valid(data) {
		err := json.Unmarshal(data, &v)
		return v, err
	}
	err := slow(&v, data)
	return v, err
}

// AppendItemJSON appends MarshalItem's bytes for it to buf; on error buf is unchanged.
func AppendItemJSON(buf *bytes.Buffer, it *Item) error {
	start := buf.Len()
	html, err := appendItem(buf, it)
	if err != nil {
		buf.Truncate(start)
		return err
	}
	if html {
		b := bytes.Clone(buf.Bytes()[start:])
		buf.Truncate(start)
		json.HTMLEscape(buf, b)
	}
	return nil
}

// needsHTMLEscape reports whether b holds <, >, & or the lead byte of U+2028 or U+2029
// (E2 80 A8/A9): a byte loop, where bytes.ContainsAny with a non-ASCII set decodes every
// rune. A false positive only costs the escaping pass.
func needsHTMLEscape(b []byte) bool {
	for _, c := range b {
		if c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return true
		}
	}
	return false
}

// appendJSONString writes s as a JSON string: printable ASCII other than " and \ as it is,
// anything else through json.Marshal, so the escapes are encoding/json's own. It reports
// whether what it wrote holds <, > or &, which json.Marshal's own output never does.
func appendJSONString(b *bytes.Buffer, s string) (html bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f || c == '"' || c == '\\':
			q, _ := json.Marshal(s)
			b.Write(q)
			return false
		case c == '<' || c == '>' || c == '&':
			html = true
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
	return html
}

// UnmarshalJSON decodes the wire form strictly: unknown fields, wrong types, an invalid UUID,
// a missing id or created_at, or an out-of-range timestamp are errors. Missing metadata,
// content and tags take lionagi's defaults ({}, null, []).
func (it *Item) UnmarshalJSON(data []byte) error {
	if out, ok := decodeOneItem(data); ok {
		*it = out
		return nil
	}
	return it.unmarshalSlow(data)
}

// decodeOneItem decodes data, one item with whitespace around it, in one pass (decodeItem)
// when it is valid and of the common shape; false sends it to encoding/json's path.
func decodeOneItem(data []byte) (Item, bool) {
	start := skipWS(data, 0)
	if start == len(data) || data[start] != '{' {
		return Item{}, false
	}
	buf := bytes.Clone(data)
	it, end, ok := decodeItem(data, buf, shareText(buf), start, nil)
	return it, ok && skipWS(data, end) == len(data)
}

// unmarshalSlow is UnmarshalJSON through encoding/json's strict decoder: the reference the
// one-pass path is tested against, and the path of every error.
func (it *Item) unmarshalSlow(data []byte) error {
	var w itemWire
	if err := decodeStrict(data, &w); err != nil {
		return fmt.Errorf("decode item: %w", err)
	}
	if w.ID == nil {
		return errors.New("decode item: missing required field \"id\"")
	}
	id, err := ParseID(*w.ID)
	if err != nil {
		return fmt.Errorf("decode item: id: %w", err)
	}
	if isNull(w.CreatedAt) {
		return errors.New("decode item: missing required field \"created_at\"")
	}
	ts, err := ParseTimestamp(string(bytes.TrimSpace(w.CreatedAt)))
	if err != nil {
		return fmt.Errorf("decode item: created_at: %w", err)
	}
	out := Item{ID: id, CreatedAt: ts, Metadata: w.Metadata, Tags: w.Tags}
	if out.Metadata == nil {
		out.Metadata = map[string]json.RawMessage{}
	}
	for k, v := range out.Metadata {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			out.Metadata[k] = json.RawMessage("null")
		}
	}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	if len(w.Content) > 0 {
		// json.RawMessage's decoder already copied the bytes out of data.
		out.Content = w.Content
	} else {
		out.Content = json.RawMessage("null")
	}
	*it = out
	return nil
}

// ParseID parses a UUID in its canonical 36-character form only, so that one identity has
// one spelling on the wire.
func ParseID(s string) (uuid.UUID, error) {
	if len(s) != 36 {
		return uuid.Nil, fmt.Errorf("invalid UUID %q: want the 36-character form", truncate(s, 64))
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, fmt.Errorf("invalid UUID %q: %w", truncate(s, 64), err)
	}
	return id, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Query is lionagi's MemoryQuery. Text nil means no text predicate; Tags empty means no tag
// predicate; Filters keys are metadata keys compared by JSON equality. The zero Limit asks for
// zero items; use DefaultLimit (or decode from JSON, which defaults it) for lionagi's default.
type Query struct {
	// Text is a case-insensitive substring predicate over the content, or nil.
	Text *string
	// Tags matches items carrying any of these tags; empty means no tag predicate.
	Tags []string
	// Filters requires metadata[key] to equal value, for every key.
	Filters map[string]json.RawMessage
	// Limit is the maximum number of items to return; negative is rejected.
	Limit int
}

// queryWire keeps limit raw for the same reason itemWire keeps created_at raw.
type queryWire struct {
	Text    *string                    `json:"text"`
	Tags    stringList                 `json:"tags"`
	Filters map[string]json.RawMessage `json:"filters"`
	Limit   json.RawMessage            `json:"limit"`
}

// MarshalJSON writes {"text","tags","filters","limit"} with nulls for absent predicates.
func (q Query) MarshalJSON() ([]byte, error) {
	if b, ok := appendQuery(make([]byte, 0, 64+16*len(q.Tags)+32*len(q.Filters)), q); ok {
		return b, nil
	}
	for k, v := range q.Filters {
		if !json.Valid(v) {
			return nil, fmt.Errorf("filters %q: invalid JSON value", k)
		}
	}
	return marshalQuerySlow(q)
}

// MaxWireLimit bounds the limit a decoded query may carry; larger values are rejected as
// invalid rather than allocated for.
const MaxWireLimit = 1_000_000

// UnmarshalJSON decodes a query strictly; a missing limit is DefaultLimit. A negative limit is
// decoded as-is so that the adapter can answer with UnsupportedMemoryQuery naming "limit";
// a non-integer or a limit beyond MaxWireLimit is a decode error.
func (q *Query) UnmarshalJSON(data []byte) error {
	if out, ok := decodeQuery(data); ok {
		*q = out
		return nil
	}
	return q.unmarshalSlow(data)
}

// unmarshalSlow is Query.UnmarshalJSON through encoding/json's strict decoder: the reference
// the one-pass path is tested against, and the path of every error.
func (q *Query) unmarshalSlow(data []byte) error {
	var w queryWire
	if err := decodeStrict(data, &w); err != nil {
		return fmt.Errorf("decode query: %w", err)
	}
	out := Query{Text: w.Text, Tags: w.Tags, Filters: w.Filters, Limit: DefaultLimit}
	if w.Limit != nil {
		lit := string(bytes.TrimSpace(w.Limit))
		if !validNumberLiteral(lit) {
			return fmt.Errorf("decode query: limit: not an integer: %s", truncate(lit, 32))
		}
		n, err := json.Number(lit).Int64()
		if err != nil {
			return fmt.Errorf("decode query: limit: not an integer: %s", truncate(lit, 32))
		}
		if n > MaxWireLimit || n < -MaxWireLimit {
			return fmt.Errorf("decode query: limit: out of range (at most %d)", MaxWireLimit)
		}
		out.Limit = int(n)
	}
	*q = out
	return nil
}

// CheckQuery applies the seed's portable query rules against a manifest before any transport
// is used: every filter key must be supported and the limit must not be negative. All
// rejected keys are reported together, sorted and unique ("limit" for a negative limit).
func CheckQuery(m Manifest, q Query) error {
	var rejected []string
	for k := range q.Filters {
		if !m.SupportsFilter(k) {
			rejected = append(rejected, k)
		}
	}
	if q.Limit < 0 {
		rejected = append(rejected, "limit")
	}
	if len(rejected) > 0 {
		return NewUnsupportedQuery(rejected...)
	}
	return nil
}

func decodeStrict(data []byte, v any) error {
	// JSON text is UTF-8; encoding/json would copy invalid bytes into raw values, which
	// MarshalJSON then refuses, so a decoded value could not be sent on.
	if !utf8.Valid(data) {
		return errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the value")
	}
	return nil
}

// validNumberLiteral reports whether s is exactly a JSON number literal (RFC 8259 §6).
func validNumberLiteral(s string) bool {
	end, ok := scanNumber(s, 0)
	return ok && end == len(s)
}
