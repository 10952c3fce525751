package memory

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/google/uuid"
)

// UnmarshalItems returns what json.Unmarshal(data, &items) gives for items of type []Item,
// with the same errors, validating data once: encoding/json scans the array, skips over each
// element and only then calls Item.UnmarshalJSON, whose own decoder reads the element twice
// more. The remote client decodes a search answer's items with it.
func UnmarshalItems(data []byte) ([]Item, error) {
	i := skipWS(data, 0)
	if !utf8.Valid(data) || !json.Valid(data) || data[i] != '[' {
		return unmarshalItemsSlow(data)
	}
	// No item is shorter than minItemBytes, which bounds a small page's length without
	// walking it; a page longer than the default limit grows by append.
	items := make([]Item, 0, min(len(data)/minItemBytes+1, DefaultLimit))
	// One copy of the array backs every item's raw values, and for a page of usual size one
	// string every key and tag, instead of a few allocations per item.
	buf, text := bytes.Clone(data), shareText(data)
	for i = skipWS(data, i+1); data[i] != ']'; {
		it, end, ok := decodeValidItem(data, buf, text, i)
		if !ok {
			end = skipValue(data, i)
			if err := it.unmarshalSlow(data[i:end]); err != nil {
				// Errors are rare: encoding/json's own run gives its exact error and value.
				return unmarshalItemsSlow(data)
			}
		}
		items = append(items, it)
		i = skipWS(data, end)
		if data[i] == ',' {
			i = skipWS(data, i+1)
		}
	}
	return items, nil
}

// minItemBytes is the length of the shortest item: {"id":"<36 characters>","created_at":0}.
const minItemBytes = 60

func unmarshalItemsSlow(data []byte) ([]Item, error) {
	var items []Item
	err := json.Unmarshal(data, &items)
	return items, err
}

// shareLimit bounds the text whose one copy keys and tags may share: a retained key keeps
// the whole copy alive, so a large item's keys get copies of their own.
const shareLimit = 64 << 10

// shareText returns a copy of data as a string for keys and tags to slice, or "" when data
// is over shareLimit.
func shareText(data []byte) string {
	if len(data) > shareLimit {
		return ""
	}
	return string(data)
}

// decodeValidItem decodes an item in one pass from the value at data[start:], data being
// valid JSON in valid UTF-8, and returns the index just past it, when it has the shape every encoder of this contract writes: an object
// whose keys are exactly the wire's lowercase field names, each at most once and without
// escapes, an id in the canonical form, created_at a number ParseTimestamp accepts, metadata
// an object (or null) with unescaped, distinct keys, and tags a list stringList accepts. It
// reports false for anything else, which then takes UnmarshalJSON's encoding/json path, so
// that every error, every case-folded key and every duplicate key is still decided there.
// On success the result is the one that path gives: raw values are the value's exact bytes,
// sliced from buf (a copy of data) and capped so that appending to one cannot overwrite the
// next; keys and tags are slices of text (data as a string) when it is not empty, copies of
// their own otherwise.
func decodeValidItem(data, buf []byte, text string, start int) (Item, int, bool) {
	var it Item
	i := start
	if i == len(data) || data[i] != '{' {
		return it, i, false
	}
	const (
		hasID = 1 << iota
		hasCreatedAt
		hasMetadata
		hasContent
		hasTags
	)
	var seen int
	i = skipWS(data, i+1)
	for i < len(data) && data[i] == '"' {
		end := skipString(data, i)
		key := data[i+1 : end-1]
		i = skipWS(data, end)
		if i == len(data) || data[i] != ':' {
			return it, i, false
		}
		vs := skipWS(data, i+1)
		ve := skipValue(data, vs)
		val := data[vs:ve]
		if len(val) == 0 {
			return it, i, false
		}
		var field int
		switch string(key) {
		case "id":
			field = hasID
			// 36 characters between quotes: any escape would make the literal longer or put
			// a backslash where uuid wants a hex digit or a dash.
			if len(val) != 38 || val[0] != '"' {
				return it, i, false
			}
			id, err := uuid.ParseBytes(val[1:37])
			if err != nil {
				return it, i, false
			}
			it.ID = id
		case "created_at":
			field = hasCreatedAt
			if c := val[0]; c != '-' && (c < '0' || c > '9') {
				return it, i, false
			}
			// The conversion does not escape, so a short literal is not copied to the heap.
			ts, err := ParseTimestamp(string(val))
			if err != nil {
				return it, i, false
			}
			it.CreatedAt = ts
		case "metadata":
			field = hasMetadata
			if val[0] != 'n' {
				m, ok := decodeRawObject(data, buf, text, vs, ve)
				if !ok {
					return it, i, false
				}
				it.Metadata = m
			}
		case "content":
			field = hasContent
			it.Content = buf[vs:ve:ve]
		case "tags":
			field = hasTags
			var sub string
			if text != "" {
				sub = text[vs:ve]
			}
			tags, ok := plainStrings(val, sub)
			if !ok {
				var l stringList
				if l.UnmarshalJSON(val) != nil {
					return it, i, false
				}
				tags = l
			}
			it.Tags = tags
		default:
			return it, i, false
		}
		if seen&field != 0 {
			return it, i, false
		}
		seen |= field
		i = skipWS(data, ve)
		if i < len(data) && data[i] == ',' {
			i = skipWS(data, i+1)
		}
	}
	if i == len(data) || data[i] != '}' || seen&(hasID|hasCreatedAt) != hasID|hasCreatedAt {
		return it, i, false
	}
	// The defaults UnmarshalJSON's slow path gives: {} for metadata, [] for tags, null for
	// content.
	if it.Metadata == nil {
		it.Metadata = map[string]json.RawMessage{}
	}
	if it.Tags == nil {
		it.Tags = []string{}
	}
	if it.Content == nil {
		it.Content = json.RawMessage("null")
	}
	return it, i + 1, true
}

// decodeRawObject decodes the object data[start:end] as a map of raw values, the values
// sliced from buf (a copy of data) and the keys from text when it is not empty; false for
// any key with an escape or seen twice.
func decodeRawObject(data, buf []byte, text string, start, end int) (map[string]json.RawMessage, bool) {
	if data[start] != '{' {
		return nil, false
	}
	m := map[string]json.RawMessage{}
	i := skipWS(data, start+1)
	for i < end && data[i] == '"' {
		ke := skipString(data, i)
		key := data[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, false
		}
		if _, dup := m[string(key)]; dup {
			return nil, false
		}
		// Past the colon, which valid JSON puts right after the key's whitespace.
		vs := skipWS(data, skipWS(data, ke)+1)
		ve := skipValue(data, vs)
		if text != "" {
			m[text[i+1:ke-1]] = buf[vs:ve:ve]
		} else {
			m[string(key)] = buf[vs:ve:ve]
		}
		i = skipWS(data, ve)
		if data[i] == ',' {
			i = skipWS(data, i+1)
		}
	}
	return m, true
}

// skipWS returns the index of the first byte at or after i that is not JSON whitespace.
func skipWS(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string literal opening at data[i].
func skipString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// skipValue returns the index just past the JSON value starting at data[i], for data
// already known to be valid JSON: strings honour their escapes, objects and arrays are
// matched by depth outside strings, and a literal or number ends at the next delimiter.
func skipValue(data []byte, i int) int {
	depth := 0
	for i < len(data) {
		switch data[i] {
		case '"':
			i = skipString(data, i)
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of a literal that closes its container
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}
