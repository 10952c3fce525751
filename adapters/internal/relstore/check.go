package relstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Prepared is an item in the exact form the relational adapters write.
type Prepared struct {
	// ID is the item's id.
	ID uuid.UUID
	// CreatedAt is created_at, the client's double of Unix seconds, to be stored bit for bit.
	CreatedAt float64
	// Metadata is the metadata object as compact JSON ({} when empty).
	Metadata []byte
	// Content is the content as compact JSON (null when absent).
	Content []byte
	// Tags is the ordered tag list, never nil.
	Tags []string
	// SearchText is the lower-cased text a text query looks at.
	SearchText string
	// Size is memory.ItemSize of the item as given, what a quota counts for it.
	Size int64
}

// Rules select the backend-specific rejections on top of the common ones.
type Rules struct {
	// MaxItemBytes bounds the item's encoded size; 0 means memory.MaxItemBytes.
	MaxItemBytes int
	// RejectNUL rejects U+0000 anywhere (JSON strings, escaped or not, metadata keys and
	// tags) and lone UTF-16 surrogate escapes, for backends whose text types cannot hold them.
	RejectNUL bool
}

// Prepare validates item and returns its storable form. Every failure is a
// *memory.MemoryAdapterError raised before any I/O.
func Prepare(item memory.Item, r Rules) (Prepared, error) {
	max := r.MaxItemBytes
	if max <= 0 {
		max = memory.MaxItemBytes
	}
	if err := memory.CheckItemLimits(item); err != nil {
		return Prepared{}, err
	}
	if item.ID == uuid.Nil {
		return Prepared{}, memory.NewAdapterError("store: item id must not be the nil UUID", nil)
	}
	// SQLite's json_each fails on a column nested deeper than its own limit (1000), which
	// would make every filtered search of the scope fail; the contract's limit is far below.
	if err := memory.CheckItemDepth(item); err != nil {
		return Prepared{}, err
	}
	if !memory.TimestampInRange(item.CreatedAt) {
		return Prepared{}, memory.NewAdapterError("store: created_at outside years 1 to 9999", nil)
	}
	content, err := compactJSON("content", item.ContentJSON(), r)
	if err != nil {
		return Prepared{}, err
	}
	size := len(content)
	// A fresh map: the caller's item is never modified.
	meta := make(map[string]json.RawMessage, len(item.Metadata))
	for k, v := range item.Metadata {
		if err := checkString("metadata key", k, r); err != nil {
			return Prepared{}, err
		}
		c, err := compactJSON("metadata value", v, r)
		if err != nil {
			return Prepared{}, err
		}
		meta[k] = c
		size += len(k) + len(c)
		if size > max {
			return Prepared{}, tooLarge(max)
		}
	}
	// Marshal keeps each compacted value's literals verbatim (numbers are not re-encoded).
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return Prepared{}, memory.NewAdapterError("store: metadata is not encodable", err)
	}
	tags := item.Tags
	if tags == nil {
		tags = []string{}
	}
	for _, t := range tags {
		if err := checkString("tag", t, r); err != nil {
			return Prepared{}, err
		}
		size += len(t) + 3
	}
	if size > max {
		return Prepared{}, tooLarge(max)
	}
	return Prepared{
		ID:         item.ID,
		CreatedAt:  item.CreatedAt,
		Metadata:   metaJSON,
		Content:    content,
		Tags:       append([]string{}, tags...),
		SearchText: memory.SearchText(content),
		Size:       memory.ItemSize(item),
	}, nil
}

func tooLarge(max int) error { return memory.ItemTooLarge(max) }

func checkString(what, s string, r Rules) error {
	if !utf8.ValidString(s) {
		return memory.NewAdapterError("store: "+what+" is not valid UTF-8", nil)
	}
	if r.RejectNUL && strings.IndexByte(s, 0) >= 0 {
		return memory.NewAdapterError("store: "+what+" contains U+0000, which the backend cannot store", nil)
	}
	return nil
}

func compactJSON(what string, raw []byte, r Rules) ([]byte, error) {
	if !utf8.Valid(raw) {
		return nil, memory.NewAdapterError("store: "+what+" is not valid UTF-8", nil)
	}
	if !json.Valid(raw) {
		return nil, memory.NewAdapterError("store: "+what+" is not valid JSON", nil)
	}
	if r.RejectNUL {
		if err := scanEscapes(raw); err != nil {
			return nil, memory.NewAdapterError("store: "+what+" "+err.Error(), nil)
		}
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, memory.NewAdapterError("store: "+what+" is not valid JSON", err)
	}
	return b.Bytes(), nil
}

// scanEscapes finds \u0000 and lone surrogate escapes inside the strings of valid JSON. Raw
// control bytes cannot occur there (json.Valid rejects them), so escapes are the only way in.
func scanEscapes(raw []byte) error {
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(raw) {
				return nil
			}
			if raw[i+1] != 'u' || i+5 >= len(raw) {
				i++ // skip the escaped character
				continue
			}
			cp := hex4(raw[i+2 : i+6])
			switch {
			case cp == 0:
				return fmt.Errorf("contains U+0000, which the backend cannot store")
			case cp >= 0xD800 && cp <= 0xDBFF:
				// A high surrogate must be followed by an escaped low surrogate.
				if i+11 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					if lo := hex4(raw[i+8 : i+12]); lo >= 0xDC00 && lo <= 0xDFFF {
						i += 11
						continue
					}
				}
				return fmt.Errorf("contains an unpaired UTF-16 surrogate escape")
			case cp >= 0xDC00 && cp <= 0xDFFF:
				return fmt.Errorf("contains an unpaired UTF-16 surrogate escape")
			}
			i += 5
		}
	}
	return nil
}

func hex4(b []byte) int {
	v := 0
	for _, c := range b {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= int(c - '0')
		case c >= 'a' && c <= 'f':
			v |= int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v |= int(c-'A') + 10
		default:
			return -1
		}
	}
	return v
}
