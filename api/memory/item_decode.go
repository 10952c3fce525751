package memory

import (
	"bytes"
	"encoding/json"
	"unsafe"

	"github.com/google/uuid"
)

// UnmarshalItems returns what json.Unmarshal(data, &items) gives for items of type []Item,
// with the same errors, in one pass over data that checks its syntax while it decodes:
// encoding/json scans the array, skips over each element and only then calls
// Item.UnmarshalJSON, whose own decoder reads the element twice more. The remote client
// decodes a search answer's items with it.
func UnmarshalItems(data []byte) ([]Item, error) {
	if i := skipWS(data, 0); i < len(data) && data[i] == '[' {
		if items, ok := decodeItems(data, i); ok {
			return items, nil
		}
	}
	// Errors are rare: encoding/json's own run gives its exact error and value.
	return unmarshalItemsSlow(data)
}

// decodeItems decodes the array opening at data[i] when all of data is valid JSON in valid
// UTF-8 (decodeItem and scanValue check it as they go), each element through decodeItem, or
// through encoding/json when decodeItem declines its shape; false for anything else.
func decodeItems(data []byte, i int) ([]Item, bool) {
	// No item is shorter than minItemBytes, which bounds a small page's length without
	// walking it; a page longer than the default limit grows by append.
	items := make([]Item, 0, min(len(data)/minItemBytes+1, DefaultLimit))
	// One copy of the array backs every item's raw values, for a page of usual size one
	// string every key and tag, and one array every tag list, instead of a few allocations
	// per item.
	buf := bytes.Clone(data)
	text := shareText(buf)
	// Room for four tags an item; a page with more grows it by append.
	tags := make([]string, 0, 4*cap(items))
	if i = skipWS(data, i+1); i < len(data) && data[i] == ']' {
		return items, skipWS(data, i+1) == len(data)
	}
	for {
		it, end, ok := decodeItem(data, buf, text, i, &tags)
		if !ok {
			if end, _, _, ok = scanValue(data, i); !ok {
				return nil, false
			}
			it = Item{}
			if it.unmarshalSlow(data[i:end]) != nil {
				return nil, false
			}
		}
		items = append(items, it)
		switch i = skipWS(data, end); {
		case i < len(data) && data[i] == ',':
			i = skipWS(data, i+1)
		case i < len(data) && data[i] == ']':
			return items, skipWS(data, i+1) == len(data)
		default:
			return nil, false
		}
	}
}

// minItemBytes is the length of the shortest item: {"id":"<36 characters>","created_at":0}.
const minItemBytes = 60

func unmarshalItemsSlow(data []byte) ([]Item, error) {
	var items []Item
	err := json.Unmarshal(data, &items)
	return items, err
}

// shareLimit bounds the copy whose bytes keys and tags may share: a retained key keeps the
// whole copy alive, so a large item's keys get copies of their own.
const shareLimit = 64 << 10

// shareText returns buf, the decoder's private copy of the input, as a string for keys and
// tags to slice, or "" when it is over shareLimit. The string shares buf's memory instead of
// copying it once more. That is sound because nothing can write those bytes afterwards: the
// decoder hands out buf only as raw values, each a slice capped at its own end (so an append
// reallocates), and the keys and tags lie outside every raw value handed out (a metadata key
// inside the metadata object, whose members are handed out, not the object; a tag inside
// the tags array, which is never a raw value), so no slice a caller holds reaches them.
func shareText(buf []byte) string {
	if len(buf) > shareLimit || len(buf) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}

// decodeItem decodes an item in one pass from the object at data[start:] and returns the
// index just past it, when the object is valid JSON in valid UTF-8 (checked as it goes, by
// scanValue and scanString) and has the shape every encoder of this contract writes: keys
// that are exactly the wire's lowercase field names, each at most once and without escapes,
// an id in the canonical form, created_at a number ParseTimestamp accepts, metadata an object
// (or null) with unescaped, distinct keys, and tags a list stringList accepts. It reports
// false for anything else, which then takes UnmarshalJSON's encoding/json path, so that every
// error, every case-folded key and every duplicate key is still decided there. On success the
// result is the one that path gives: raw values are the value's exact bytes, sliced from buf
// (a copy of data) and capped so that appending to one cannot overwrite the next; keys and
// tags are slices of text (data as a string) when it is not empty, copies of their own
// otherwise; the tag list is a capped slice of *arena, appended to, when arena is not nil.
func decodeItem(data, buf []byte, text string, start int, arena *[]string) (Item, int, bool) {
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
	for {
		if i == len(data) || data[i] != '"' {
			return it, i, false
		}
		end, _, ok := scanString(data, i)
		if !ok {
			return it, i, false
		}
		key := data[i+1 : end-1]
		if i = skipWS(data, end); i == len(data) || data[i] != ':' {
			return it, i, false
		}
		vs := skipWS(data, i+1)
		if vs == len(data) {
			return it, vs, false
		}
		var ve, field int
		switch string(key) {
		case "id":
			field = hasID
			// A quote, 36 characters that uuid reads as hex digits and dashes (so no escape
			// or quote among them) and a quote.
			ve = vs + 38
			if ve > len(data) || data[vs] != '"' || data[ve-1] != '"' {
				return it, vs, false
			}
			id, err := uuid.ParseBytes(data[vs+1 : ve-1])
			if err != nil {
				return it, vs, false
			}
			it.ID = id
		case "created_at":
			field = hasCreatedAt
			if ve, ok = scanNumber(data, vs); !ok {
				return it, vs, false
			}
			if it.CreatedAt, ok = parseTimestampLiteral(data[vs:ve]); !ok {
				return it, vs, false
			}
		case "metadata":
			field = hasMetadata
			if data[vs] == 'n' {
				if ve, ok = scanLiteral(data, vs, "null"); !ok {
					return it, vs, false
				}
			} else if it.Metadata, ve, ok = decodeRawObject(data, buf, text, vs); !ok {
				return it, vs, false
			}
		case "content":
			field = hasContent
			if ve, _, _, ok = scanValue(data, vs); !ok {
				return it, vs, false
			}
			it.Content = buf[vs:ve:ve]
		case "tags":
			field = hasTags
			if it.Tags, ve, ok = plainStringsAt(data, vs, text, arena); !ok {
				// Any other spelling (escapes, null, Unicode) of a valid list: stringList's
				// own decoder, which gives encoding/json's result.
				if ve, _, _, ok = scanValue(data, vs); !ok {
					return it, vs, false
				}
				var l stringList
				if l.UnmarshalJSON(data[vs:ve]) != nil {
					return it, vs, false
				}
				it.Tags = l
			}
		default:
			return it, i, false
		}
		if seen&field != 0 {
			return it, i, false
		}
		seen |= field
		switch i = skipWS(data, ve); {
		case i < len(data) && data[i] == ',':
			i = skipWS(data, i+1)
			continue
		case i < len(data) && data[i] == '}':
			i++
		default:
			return it, i, false
		}
		break
	}
	if seen&(hasID|hasCreatedAt) != hasID|hasCreatedAt {
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
	return it, i, true
}

// decodeRawObject decodes the object opening at data[start] as a map of raw values, the
// values sliced from buf (a copy of data) and the keys from text when it is not empty, and
// returns the index just past it; false for invalid JSON or UTF-8, and for any key with an
// escape or seen twice.
func decodeRawObject(data, buf []byte, text string, start int) (map[string]json.RawMessage, int, bool) {
	if data[start] != '{' {
		return nil, start, false
	}
	m := map[string]json.RawMessage{}
	i := skipWS(data, start+1)
	if i < len(data) && data[i] == '}' {
		return m, i + 1, true
	}
	for {
		if i == len(data) || data[i] != '"' {
			return nil, i, false
		}
		ks := i + 1
		ke, _, ok := scanString(data, i)
		if !ok {
			return nil, i, false
		}
		key := data[ks : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, i, false
		}
		if i = skipWS(data, ke); i == len(data) || data[i] != ':' {
			return nil, i, false
		}
		vs := skipWS(data, i+1)
		ve, _, _, ok := scanValue(data, vs)
		if !ok {
			return nil, vs, false
		}
		// A duplicate key leaves the length as it was: one hash of the key, not two.
		n := len(m)
		if text != "" {
			m[text[ks:ke-1]] = buf[vs:ve:ve]
		} else {
			m[string(key)] = buf[vs:ve:ve]
		}
		if len(m) == n {
			return nil, i, false
		}
		switch i = skipWS(data, ve); {
		case i < len(data) && data[i] == ',':
			i = skipWS(data, i+1)
		case i < len(data) && data[i] == '}':
			return m, i + 1, true
		default:
			return nil, i, false
		}
	}
}

// skipWS returns the index of the first byte at or after i that is not JSON whitespace.
func skipWS(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}
