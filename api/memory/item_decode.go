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
	n := 0
	for j := skipWS(data, i+1); data[j] != ']'; n++ {
		j = skipWS(data, skipValue(data, j))
		if data[j] == ',' {
			j = skipWS(data, j+1)
		}
	}
	items := make([]Item, n)
	i = skipWS(data, i+1)
	for k := range items {
		end := skipValue(data, i)
		it, ok := decodeValidItem(data[i:end])
		if !ok {
			if err := it.unmarshalSlow(data[i:end]); err != nil {
				// Errors are rare: encoding/json's own run gives its exact error and value.
				return unmarshalItemsSlow(data)
			}
		}
		items[k] = it
		i = skipWS(data, end)
		if data[i] == ',' {
			i = skipWS(data, i+1)
		}
	}
	return items, nil
}

func unmarshalItemsSlow(data []byte) ([]Item, error) {
	var items []Item
	err := json.Unmarshal(data, &items)
	return items, err
}

// decodeValidItem decodes an item in one pass from data, which must be one valid JSON value
// in valid UTF-8, when it has the shape every encoder of this contract writes: an object
// whose keys are exactly the wire's lowercase field names, each at most once and without
// escapes, an id in the canonical form, created_at a number ParseTimestamp accepts, metadata
// an object (or null) with unescaped, distinct keys, and tags a list stringList accepts. It
// reports false for anything else, which then takes UnmarshalJSON's encoding/json path, so
// that every error, every case-folded key and every duplicate key is still decided there.
// On success the result is the one that path gives: raw values are the value's exact bytes,
// copied once into one buffer of the item's own and capped so that appending to one cannot
// overwrite the next.
func decodeValidItem(data []byte) (Item, bool) {
	var it Item
	i := skipWS(data, 0)
	if i == len(data) || data[i] != '{' {
		return it, false
	}
	buf := bytes.Clone(data)
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
			return it, false
		}
		vs := skipWS(data, i+1)
		ve := skipValue(data, vs)
		val := data[vs:ve]
		if len(val) == 0 {
			return it, false
		}
		var field int
		switch string(key) {
		case "id":
			field = hasID
			// 36 characters between quotes: any escape would make the literal longer or put
			// a backslash where uuid wants a hex digit or a dash.
			if len(val) != 38 || val[0] != '"' {
				return it, false
			}
			id, err := uuid.ParseBytes(val[1:37])
			if err != nil {
				return it, false
			}
			it.ID = id
		case "created_at":
			field = hasCreatedAt
			if c := val[0]; c != '-' && (c < '0' || c > '9') {
				return it, false
			}
			// val is a valid number literal, for which ParseTimestamp takes this path first;
			// the conversion does not escape, so a short literal is not copied to the heap.
			ts, ok := parsePlainTimestamp(string(val))
			if !ok {
				var err error
				if ts, err = ParseTimestamp(string(val)); err != nil {
					return it, false
				}
			}
			it.CreatedAt = ts
		case "metadata":
			field = hasMetadata
			if val[0] != 'n' {
				m, ok := decodeRawObject(data, buf, vs, ve)
				if !ok {
					return it, false
				}
				it.Metadata = m
			}
		case "content":
			field = hasContent
			it.Content = buf[vs:ve:ve]
		case "tags":
			field = hasTags
			var l stringList
			if l.UnmarshalJSON(val) != nil {
				return it, false
			}
			it.Tags = l
		default:
			return it, false
		}
		if seen&field != 0 {
			return it, false
		}
		seen |= field
		i = skipWS(data, ve)
		if i < len(data) && data[i] == ',' {
			i = skipWS(data, i+1)
		}
	}
	if i == len(data) || data[i] != '}' || skipWS(data, i+1) != len(data) || seen&(hasID|hasCreatedAt) != hasID|hasCreatedAt {
		return it, false
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
	return it, true
}

// decodeRawObject decodes the object data[start:end] as a map of raw values, the values
// sliced from buf (a copy of data); false for any key with an escape or seen twice.
func decodeRawObject(data, buf []byte, start, end int) (map[string]json.RawMessage, bool) {
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
		m[string(key)] = buf[vs:ve:ve]
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
