package redis

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// itemKind marks a hash as a memory record written by this adapter. A key at an item's
// identity without it is a foreign record and reads as "not found" (never coerced).
const itemKind = "mao.memory-item/v1"

// layoutVersion is stored in the scope's config so that a key layout can refuse to open a
// scope written by another one instead of misreading it. Layout 2 added the text index
// (textindex.go); Open migrates a layout-1 scope to it (scopeScript), and layout-1
// instances refuse a layout-2 scope.
const (
	layoutVersion       = "2"
	legacyLayoutVersion = "1"
)

// groupName is the indexer consumer group; every adapter instance on a scope joins it. It
// is not layout 1's (legacyGroupName): a layout-1 instance must not take entries from this
// group, as it would index them without their trigrams.
const groupName = "indexer2"

// keys computes the key names of one scope.
type keys struct{ prefix string }

func newKeys(scope string) keys { return keys{prefix: "mao:{" + scope + "}:"} }

func (k keys) item(id uuid.UUID) string { return k.prefix + "item:" + id.String() }
func (k keys) stream() string           { return k.prefix + "stream" }
func (k keys) all() string              { return k.prefix + "ix:all" }
func (k keys) seq() string              { return k.prefix + "ix:seq" }
func (k keys) config() string           { return k.prefix + "config" }
func (k keys) doc(id uuid.UUID) string  { return k.prefix + "ix:doc:" + id.String() }
func (k keys) gramCounts() string       { return k.prefix + "ix:gc" }
func (k keys) stored() string           { return k.prefix + "ix:stored" }
func (k keys) usage() string            { return k.prefix + "ix:usage" }

// member keys are stored relative to the prefix in ix:doc, so they stay short.
func (k keys) abs(rel string) string { return k.prefix + rel }

// pattern matches every key of the scope; the scope alphabet has no glob metacharacters.
func (k keys) pattern() string { return k.prefix + "*" }

// subScopesPattern matches every key of the scope's sub-scopes (memory.SubScope), whose
// prefixes are the scope's with the separator and a name before the closing brace.
func (k keys) subScopesPattern() string {
	return strings.TrimSuffix(k.prefix, "}:") + memory.SubScopeSeparator + "*"
}

// keysOfKey is the keys of the scope a key belongs to: its prefix runs to the first "}:",
// since no scope name contains a brace.
func keysOfKey(key string) keys {
	if i := strings.Index(key, "}:"); i >= 0 {
		return keys{prefix: key[:i+2]}
	}
	return keys{prefix: key}
}

func tagRel(tag string) string { return "ix:t:" + digest("t", tag) }

func filterRel(key, canonical string) string { return "ix:f:" + digest("f", key, canonical) }

// digest bounds key length whatever the tag or value size. A collision would only add a
// candidate: search re-checks every predicate on the stored item, so it cannot add a hit.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// maxCanonicalDepth bounds recursion over hostile nested JSON.
const maxCanonicalDepth = 256

var errTooDeep = errors.New("JSON nested too deeply")

// canonicalJSON maps JSON values that memory.JSONEqual considers equal to one string, so
// that the filter index finds every equal value: object keys sorted, numbers by exact
// rational value (huge exponents by their literal, as memory.NumbersEqual compares them).
func canonicalJSON(raw json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	if dec.More() {
		return "", errors.New("trailing data after the value")
	}
	var b strings.Builder
	if err := writeCanonical(&b, v, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeCanonical(b *strings.Builder, v any, depth int) error {
	if depth > maxCanonicalDepth {
		return errTooDeep
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		b.WriteString(strconv.Quote(x))
	case json.Number:
		b.WriteString(canonicalNumber(string(x)))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		ks := make([]string, 0, len(x))
		for k := range x {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		b.WriteByte('{')
		for i, k := range ks {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			if err := writeCanonical(b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return errors.New("unexpected JSON value")
	}
	return nil
}

func canonicalNumber(lit string) string {
	if i := strings.IndexAny(lit, "eE"); i >= 0 && len(strings.TrimLeft(lit[i+1:], "+-0")) > 4 {
		return "lit:" + lit
	}
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		return "lit:" + lit
	}
	return "num:" + r.RatString()
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
