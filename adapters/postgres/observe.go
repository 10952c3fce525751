package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
)

// observer counts the statements the harness's stores send through pgx and records the
// metadata filters among them in a fixed textual form, for the conformance suite's
// TransportObserver and FilterRecorder capabilities.
type observer struct {
	mu      sync.Mutex
	count   int64
	filters []string
}

var pgFilter = regexp.MustCompile(`metadata -> \$(\d+) = \$(\d+)::jsonb`)

func (o *observer) trace(sql string, args []any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.count++
	// Search passes its execution mode as the first argument; the statement's $n count
	// from the one after it.
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			args = args[1:]
		}
	}
	for _, m := range pgFilter.FindAllStringSubmatch(sql, -1) {
		k, _ := strconv.Atoi(m[1])
		v, _ := strconv.Atoi(m[2])
		if k < 1 || v < 1 || k > len(args) || v > len(args) {
			continue
		}
		key, _ := args[k-1].(string)
		val, _ := args[v-1].(string)
		// The value is recorded as sent, so a mapping that did not compact it would not match.
		o.filters = append(o.filters, filterText(key, val))
	}
}

func filterText(key, value string) string {
	return fmt.Sprintf("metadata -> %s = %s::jsonb", quoteLiteral(key), quoteLiteral(value))
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// RequestCount implements the conformance suite's TransportObserver: the number of
// statements the harness's stores sent to the server so far.
func (h *Harness) RequestCount() int64 {
	h.obs.mu.Lock()
	defer h.obs.mu.Unlock()
	return h.obs.count
}

// DocumentedFilter implements the suite's FilterRecorder: the documented native form of the
// portable filter key = value is `metadata -> 'key' = 'compact JSON'::jsonb`.
func (h *Harness) DocumentedFilter(key string, value []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, value); err != nil {
		return filterText(key, string(value))
	}
	return filterText(key, b.String())
}

// RecordedFilters implements the suite's FilterRecorder: every filter sent since Reset.
func (h *Harness) RecordedFilters() []string {
	h.obs.mu.Lock()
	defer h.obs.mu.Unlock()
	return append([]string(nil), h.obs.filters...)
}

func (o *observer) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.filters = nil
}

// MakeResponsesMalformed implements the suite's MalformedResponder: a trigger makes the
// server store (and so return) a JSON array as the metadata of every row of the scope, both
// the jsonb and the exact text that reads return, and existing rows are rewritten the same
// way, until Reset drops the trigger and the rows.
func (h *Harness) MakeResponsesMalformed(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	name := "mao_malformed_" + relstore.RandomHex(6)
	fn := pgx.Identifier{h.schema, name}.Sanitize()
	// The scope is our own random hex, so inlining it cannot inject SQL.
	if _, err := h.admin.Exec(ctx, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN IF NEW.scope = '`+h.scope+`' THEN NEW.metadata := '[1]'::jsonb; NEW.metadata_text := '[1]'; END IF; RETURN NEW; END $$`); err != nil {
		return fmt.Errorf("postgres harness: create malformed trigger function: %w", err)
	}
	h.triggers = append(h.triggers, name)
	if _, err := h.admin.Exec(ctx, `CREATE TRIGGER `+pgx.Identifier{name}.Sanitize()+` BEFORE INSERT OR UPDATE ON `+h.table()+
		` FOR EACH ROW EXECUTE FUNCTION `+fn+`()`); err != nil {
		return fmt.Errorf("postgres harness: create malformed trigger: %w", err)
	}
	if _, err := h.admin.Exec(ctx, `UPDATE `+h.table()+` SET metadata = '[1]', metadata_text = '[1]' WHERE scope = $1`, h.scope); err != nil {
		return fmt.Errorf("postgres harness: corrupt rows: %w", err)
	}
	return nil
}

// MakeNextWriteIdentityless implements the suite's IdentitylessWriter: a BEFORE INSERT
// trigger returning NULL makes PostgreSQL acknowledge writes to the scope without performing
// them (INSERT 0 0), until Reset drops it.
func (h *Harness) MakeNextWriteIdentityless(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	name := "mao_ignore_" + relstore.RandomHex(6)
	fn := pgx.Identifier{h.schema, name}.Sanitize()
	if _, err := h.admin.Exec(ctx, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN IF NEW.scope = '`+h.scope+`' THEN RETURN NULL; END IF; RETURN NEW; END $$`); err != nil {
		return fmt.Errorf("postgres harness: create ignore trigger function: %w", err)
	}
	h.triggers = append(h.triggers, name)
	if _, err := h.admin.Exec(ctx, `CREATE TRIGGER `+pgx.Identifier{name}.Sanitize()+` BEFORE INSERT ON `+h.table()+
		` FOR EACH ROW EXECUTE FUNCTION `+fn+`()`); err != nil {
		return fmt.Errorf("postgres harness: create ignore trigger: %w", err)
	}
	return nil
}
