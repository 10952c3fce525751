package relstore

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// The record the harnesses plant behind the adapter's back for the wrong-native-kind case:
// same table, same scope, another kind. Both dialects store these exact values.
const (
	// WrongKind is the planted record's kind.
	WrongKind = "session_checkpoint"
	// WrongKindContent is its content, as JSON.
	WrongKindContent = `"not a memory item"`
	// WrongKindSearchText is its search text.
	WrongKindSearchText = "not a memory item"
)

// RandomHex returns 2n random hex digits, for disposable scopes, schemas and trigger names.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// DisposableScope is a fresh scope for one harness.
func DisposableScope() string { return "conformance-" + RandomHex(8) }

// RejectedWrite returns the item a harness makes the database itself refuse, and a fresh
// name for the trigger that refuses it. Its id is a UUID generated here, so a harness may
// inline it into the trigger's SQL without risk of injection.
func RejectedWrite() (memory.Item, string) {
	return memory.NewItem(json.RawMessage(`"rejected by the service"`), "rejected-write"), "mao_reject_" + RandomHex(6)
}
