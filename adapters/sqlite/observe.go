package sqlite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
)

// observer counts the statements the harness's stores send to the database and records the
// metadata filters among them in a fixed textual form, for the conformance suite's
// TransportObserver and FilterRecorder capabilities.
type observer struct {
	mu      sync.Mutex
	count   int64
	filters []string
}

const keyPredicate = "m.key = ?"

func (o *observer) trace(query string, args []any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.count++
	for off := 0; ; {
		i := strings.Index(query[off:], keyPredicate)
		if i < 0 {
			return
		}
		i += off
		off = i + len(keyPredicate)
		argIdx := strings.Count(query[:i], "?")
		// The EXISTS clause closes at the first ")" not followed by another ")" (the type
		// list "IN ('integer', 'real')" closes right before it).
		end := -1
		for j := off; j < len(query); j++ {
			if query[j] == ')' && (j+1 == len(query) || query[j+1] != ')') {
				end = j - off
				break
			}
		}
		if end < 0 || argIdx >= len(args) {
			continue
		}
		key, _ := args[argIdx].(string)
		cond := strings.TrimSpace(strings.TrimPrefix(query[off:off+end], " AND "))
		var native string
		switch cond {
		case "m.type = 'null'":
			native = "type=null"
		case "m.type = 'true'":
			native = "type=true"
		case "m.type = 'false'":
			native = "type=false"
		case "m.type = 'text' AND m.atom = ?":
			atom := ""
			if argIdx+1 < len(args) {
				atom, _ = args[argIdx+1].(string)
			}
			native = fmt.Sprintf("type=text atom=%q", atom)
		case "m.type = 'object'":
			native = "type=object, then JSON equality"
		case "m.type = 'array'":
			native = "type=array, then JSON equality"
		case "m.type IN ('integer', 'real')":
			native = "type=integer|real, then JSON equality"
		default:
			native = "unrecognized: " + cond
		}
		o.filters = append(o.filters, fmt.Sprintf("json_each(metadata) key=%q %s", key, native))
	}
}

func (o *observer) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.filters = nil
}

// RequestCount implements the conformance suite's TransportObserver: the number of
// statements the harness's stores sent to the database so far.
func (h *Harness) RequestCount() int64 {
	h.obs.mu.Lock()
	defer h.obs.mu.Unlock()
	return h.obs.count
}

// DocumentedFilter implements the suite's FilterRecorder with the mapping documented in
// docs/adapters/sqlite.md: a json_each row with the key, selected by JSON type, with the
// string itself for strings; numbers, objects and arrays are then decided by JSON equality.
func (h *Harness) DocumentedFilter(key string, value []byte) string {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	native := "never"
	if err := dec.Decode(&v); err == nil {
		switch x := v.(type) {
		case nil:
			native = "type=null"
		case bool:
			native = fmt.Sprintf("type=%t", x)
		case string:
			native = fmt.Sprintf("type=text atom=%q", x)
		case json.Number:
			native = "type=integer|real, then JSON equality"
		case map[string]any:
			native = "type=object, then JSON equality"
		case []any:
			native = "type=array, then JSON equality"
		}
	}
	return fmt.Sprintf("json_each(metadata) key=%q %s", key, native)
}

// RecordedFilters implements the suite's FilterRecorder: every filter sent since Reset.
func (h *Harness) RecordedFilters() []string {
	h.obs.mu.Lock()
	defer h.obs.mu.Unlock()
	return append([]string(nil), h.obs.filters...)
}

// MakeResponsesMalformed implements the suite's MalformedResponder: triggers make SQLite
// store (and so return) a JSON array as the metadata of every row of the scope written from
// now on, and existing rows are rewritten the same way, until Reset drops the triggers and
// the rows.
func (h *Harness) MakeResponsesMalformed(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, event := range []string{"INSERT", "UPDATE"} {
		name := "mao_malformed_" + relstore.RandomHex(6)
		// The scope is our own random hex, so inlining it cannot inject SQL.
		if _, err := h.admin.ExecContext(ctx, `CREATE TRIGGER `+name+` AFTER `+event+` ON memory_items
			WHEN NEW.scope = '`+h.scope+`'
			BEGIN UPDATE memory_items SET metadata = '[1]' WHERE seq = NEW.seq; END`); err != nil {
			return fmt.Errorf("sqlite harness: install malformed trigger: %w", err)
		}
		h.triggers = append(h.triggers, name)
	}
	if _, err := h.admin.ExecContext(ctx, `UPDATE memory_items SET metadata = '[1]' WHERE scope = ?`, h.scope); err != nil {
		return fmt.Errorf("sqlite harness: corrupt rows: %w", err)
	}
	return nil
}

// MakeNextWriteIdentityless implements the suite's IdentitylessWriter: a trigger makes
// SQLite acknowledge writes to the scope without performing them (RAISE(IGNORE)), so the
// statement succeeds with no row written, until Reset drops it.
func (h *Harness) MakeNextWriteIdentityless(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	name := "mao_ignore_" + relstore.RandomHex(6)
	if _, err := h.admin.ExecContext(ctx, `CREATE TRIGGER `+name+` BEFORE INSERT ON memory_items
		WHEN NEW.scope = '`+h.scope+`' BEGIN SELECT RAISE(IGNORE); END`); err != nil {
		return fmt.Errorf("sqlite harness: install ignore trigger: %w", err)
	}
	h.triggers = append(h.triggers, name)
	return nil
}
