package relstore

import (
	"encoding/json"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// CheckSearch is the relational adapters' search preamble, run before any I/O: q must pass
// memory.CheckQuery against m (an UnsupportedMemoryQuery otherwise); a zero limit needs no
// statement (run is false and the result is the empty list); a filter value nested deeper than
// memory.CheckQueryDepth allows, or a query over memory's limits (memory.CheckQueryLimits), is
// a MemoryAdapterError.
func CheckSearch(m memory.Manifest, q memory.Query) (run bool, err error) {
	if err := memory.CheckQuery(m, q); err != nil {
		return false, err
	}
	if err := memory.CheckQueryDepth(q); err != nil {
		return false, err
	}
	if q.Limit == 0 {
		return false, nil
	}
	if err := memory.CheckQueryLimits(q); err != nil {
		return false, err
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

// FilterValue is a query's filter value in the compact form Prepare writes metadata values
// in, so that a backend comparing stored JSON can compare it directly; a value the backend
// could not have stored under r is an error (and can match nothing).
func FilterValue(raw json.RawMessage, r Rules) ([]byte, error) {
	return compactJSON("filter value", raw, r)
}
