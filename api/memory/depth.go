package memory

import "fmt"

// MaxJSONDepth is the contract's nesting limit for content and for metadata: the number of
// arrays and objects that may enclose the innermost value of content, or of the metadata
// object itself (so a metadata value may nest MaxJSONDepth-1 levels). A search page adds three
// levels around an item's content and around its metadata object ({"items":[{"content": …}]}),
// so every page nests at most MaxJSONDepth+3 = 35 levels. That is below the default limit of every
// common JSON parser a client may use: .NET System.Text.Json and Json.NET (64), Ruby's JSON
// (100), Rust's serde_json (128), Redis's own JSON canonicalisation in this project (256),
// PHP (512), SQLite's JSON functions and Python's recursion limit (about 1000) and Go (10000).
// What one client stores, every other client can therefore read, and no backend's own JSON
// functions can fail on a stored value.
const MaxJSONDepth = 32

// JSONDepth returns the nesting depth of the JSON text raw: 0 for a scalar, 1 for [] or {},
// and so on. It scans without recursion and without allocating, so hostile input costs one
// pass; invalid JSON yields the depth of what it saw, and validity is the caller's check.
func JSONDepth(raw []byte) int {
	depth, deepest := 0, 0
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++ // an escaped quote or backslash never ends the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth--
		}
	}
	return deepest
}

// TooDeepMessage is the one message for a value nested beyond MaxJSONDepth, used by the
// server's 400 invalid_request and by every backend's MemoryAdapterError alike, so that a
// client sees the same words whichever layer refused the value. field is "content",
// "metadata" (the object with its values) or "filters" (likewise).
func TooDeepMessage(field string) string {
	return fmt.Sprintf("%s: nested deeper than %d levels of arrays and objects (the contract's limit)", field, MaxJSONDepth)
}

// CheckItemDepth returns a MemoryAdapterError carrying TooDeepMessage when the item's content
// or its metadata object nests deeper than MaxJSONDepth, and nil otherwise. Stores call it
// before any I/O.
func CheckItemDepth(it Item) error {
	if JSONDepth(it.Content) > MaxJSONDepth {
		return NewAdapterError(TooDeepMessage("content"), nil)
	}
	if len(it.Metadata) > 0 {
		// The metadata object adds one level around its deepest value.
		deepest := 0
		for _, v := range it.Metadata {
			deepest = max(deepest, JSONDepth(v))
		}
		if deepest+1 > MaxJSONDepth {
			return NewAdapterError(TooDeepMessage("metadata"), nil)
		}
	}
	return nil
}

// CheckQueryDepth returns a MemoryAdapterError carrying TooDeepMessage("filters") when the
// filters object nests deeper than MaxJSONDepth, the metadata rule: a filter value deeper than
// any storable metadata value can match nothing, and refusing it keeps hostile values away
// from backend JSON functions.
func CheckQueryDepth(q Query) error {
	for _, v := range q.Filters {
		if JSONDepth(v)+1 > MaxJSONDepth {
			return NewAdapterError(TooDeepMessage("filters"), nil)
		}
	}
	return nil
}
