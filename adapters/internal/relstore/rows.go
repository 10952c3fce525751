package relstore

import (
	"encoding/json"
	"fmt"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// MaxQueryTags bounds a search's tag list: each tag becomes one bound statement parameter,
// and a caller must not be able to build a statement of unbounded size.
const MaxQueryTags = 1000

// CheckSearch is the relational adapters' search preamble, run before any I/O: q must pass
// memory.CheckQuery against m (an UnsupportedMemoryQuery otherwise); a zero limit needs no
// statement (run is false and the result is the empty list); more than MaxQueryTags tags is a
// MemoryAdapterError.
func CheckSearch(m memory.Manifest, q memory.Query) (run bool, err error) {
	if err := memory.CheckQuery(m, q); err != nil {
		return false, err
	}
	if q.Limit == 0 {
		return false, nil
	}
	if len(q.Tags) > MaxQueryTags {
		return false, memory.NewAdapterError(fmt.Sprintf("search: more than %d tags", MaxQueryTags), nil)
	}
	return true, nil
}

// NotWritten is the error for an upsert the database acknowledged without writing a row:
// the conditional update skipped it because the id is held by a record of another kind,
// which the adapters refuse to overwrite.
func NotWritten() error {
	return memory.NewAdapterError("store: the database acknowledged the write without writing the item (is the id held by a record that is not a memory item?)", nil)
}

// DecodeMetadata decodes a stored metadata column; anything but a JSON object is a
// MemoryAdapterError, since the adapters only ever write objects there.
func DecodeMetadata(raw string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return nil, memory.NewAdapterError("decode stored metadata", err)
	}
	return m, nil
}
