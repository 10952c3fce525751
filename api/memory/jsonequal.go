package memory

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
)

// maxJSONDepth bounds recursion when comparing untrusted JSON.
const maxJSONDepth = 256

// JSONEqual reports whether a and b are equal JSON values under the contract's rules: object
// key order does not matter, numbers compare by exact decimal value (1 == 1.0 == 1e0, and
// integers above 2^53 are exact), strings compare by code points. Invalid JSON is never equal
// to anything. Values nested deeper than 256 arrays or objects are never equal either, not
// even to themselves: the bound keeps comparison of untrusted input cheap, and adapters that
// index values for equality (the Redis filter index) rely on the same bound.
func JSONEqual(a, b []byte) bool {
	// Identical bytes are one value, equal to itself unless invalid or nested beyond the
	// bound, and JSONDepth's count of enclosing containers is exactly what valuesEqual's
	// depth reaches. Skipping the decode matters: a store's read-back check (Redis) compares
	// values that are almost always byte for byte the caller's own, and decoding both sides
	// into maps was two thirds of its CPU (docs/perf/adapter-vs-driver.md).
	if bytes.Equal(a, b) && JSONDepth(a) <= maxJSONDepth && json.Valid(a) {
		return true
	}
	return jsonEqualDecoded(a, b)
}

// jsonEqualDecoded is JSONEqual by decoding both values and comparing them.
func jsonEqualDecoded(a, b []byte) bool {
	va, ok := decodeAny(a)
	if !ok {
		return false
	}
	vb, ok := decodeAny(b)
	if !ok {
		return false
	}
	return valuesEqual(va, vb, 0)
}

func decodeAny(data []byte) (any, bool) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	return v, true
}

func valuesEqual(a, b any, depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		return ok && NumbersEqual(string(x), string(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i], y[i], depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !valuesEqual(xv, yv, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// NumbersEqual compares two JSON number literals by exact decimal value. Literals with
// exponents beyond ±9999 are compared textually rather than expanded.
func NumbersEqual(a, b string) bool {
	if a == b {
		return true
	}
	if hugeExponent(a) || hugeExponent(b) {
		return false
	}
	ra, ok := new(big.Rat).SetString(a)
	if !ok {
		return false
	}
	rb, ok := new(big.Rat).SetString(b)
	if !ok {
		return false
	}
	return ra.Cmp(rb) == 0
}

func hugeExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return false
	}
	return len(strings.TrimLeft(s[i+1:], "+-0")) > 4
}
