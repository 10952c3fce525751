package sqlite

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func TestNumberRange(t *testing.T) {
	tests := []struct {
		lit    string
		ok     bool
		center float64
	}{
		{"4242", true, 4242},
		{"-4.242e3", true, -4242},
		{"0.5", true, 0.5},
		{"1e300", true, 1e300},
		{"0", true, 0},
		{"-0.0e5", true, 0},
		{"1e301", false, 0},                               // exponent beyond ±300: left to Go
		{"1e-5000", false, 0},                             // likewise
		{"1E+400", false, 0},                              // likewise
		{"123e-310", false, 0},                            // exponent beyond ±300 although the value is not tiny
		{"1" + strings.Repeat("0", 310), false, 0},        // beyond 1e300
		{"0." + strings.Repeat("0", 400) + "1", false, 0}, // rounds to 0 but is not zero
		{"0." + strings.Repeat("0", 310) + "1", false, 0}, // below 1e-300
		{"01", false, 0},                                  // not JSON
		{"1.", false, 0},                                  // not JSON
		{"NaN", false, 0},                                 // not JSON
		{`"1"`, false, 0},                                 // not a number
		{"[1]", false, 0},                                 // not a number
	}
	for _, tt := range tests {
		lo, hi, ok := numberRange(tt.lit)
		if ok != tt.ok {
			t.Errorf("numberRange(%.40q) ok = %v, want %v", tt.lit, ok, tt.ok)
			continue
		}
		if ok && (lo > tt.center || hi < tt.center || (tt.center != 0 && (hi-lo) > 1e-8*abs(tt.center))) {
			t.Errorf("numberRange(%q) = [%g, %g], want a narrow range around %g", tt.lit, lo, hi, tt.center)
		}
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestFilterIndexCondition(t *testing.T) {
	tests := []struct {
		key, value string
		want       string // "" for no condition
	}{
		{"source", `"s3"`, ` = ?`},
		{"branch_id", `4242`, ` BETWEEN ? AND ?, 0.000001)`},
		{"branch_id", `-1.5e2`, ` BETWEEN ? AND ?, 0.000001)`},
		{"source", `true`, ""},
		{"source", `null`, ""},
		{"source", `{"a":1}`, ""},
		{"source", `[1]`, ""},
		{"source", `1e999`, ""},
		{"source", `"bad \x"`, ""}, // invalid JSON string
		{`quo"te`, `"s3"`, ""},     // no index for a key that would need escaping
		{"a'b", `"s3"`, ""},
		{"", `"s3"`, ""},
		{strings.Repeat("k", 65), `"s3"`, ""},
	}
	for _, tt := range tests {
		cond, args, ok := filterIndexCondition(tt.key, json.RawMessage(tt.value))
		if ok != (tt.want != "") {
			t.Errorf("filterIndexCondition(%q, %s) ok = %v", tt.key, tt.value, ok)
			continue
		}
		if ok && (!strings.HasSuffix(cond, tt.want) || !strings.Contains(cond, filterExpr(tt.key)) || strings.Count(cond, "?") != len(args)) {
			t.Errorf("filterIndexCondition(%q, %s) = %q %v", tt.key, tt.value, cond, args)
		}
		if _, idx := filterIndex(tt.key); idx != ok && tt.want != "" {
			t.Errorf("filterIndex(%q) = %v, but a condition was made for it", tt.key, idx)
		}
	}
}

// TestFilterIndexKeepsResults: with the per-key filter index and its implied conditions,
// every filter value finds exactly the stored values memory.JSONEqual calls equal, in
// insertion order, across strings that look like numbers or JSON, numbers in every spelling
// of one value, near misses, zeros, big integers and values the index leaves to Go; and a
// string filter's plan uses the index.
func TestFilterIndexKeepsResults(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	s, err := h.MakeStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	values := []string{
		`"4242"`, `4242`, `4242.0`, `4.242e3`, `424200e-2`, `4242.0000000000000000001`, `4243`,
		`"s3"`, `"S3"`, `"s3 "`, `"\u0073\u0033"`, `1`, `true`, `false`, `null`, `{"a":1}`, `"{\"a\":1}"`,
		`[1]`, `0`, `-0`, `0.0e7`, `1e-320`, `1e400`, `12345678901234567890123`, `12345678901234567890124`,
		`1.2345678901234567890123e22`, `-7.5`, `-75e-1`, `9007199254740993`, `9007199254740992`,
	}
	var ids []uuid.UUID
	for _, v := range values {
		it := memory.NewItem(json.RawMessage(`{"v":1}`))
		it.Metadata["source"] = json.RawMessage(v)
		if _, err := s.Store(ctx, it); err != nil {
			t.Fatalf("store %s: %v", v, err)
		}
		ids = append(ids, it.ID)
	}
	for _, f := range values {
		var want []uuid.UUID
		for i, v := range values {
			if memory.JSONEqual(json.RawMessage(v), json.RawMessage(f)) {
				want = append(want, ids[i])
			}
		}
		hits, err := s.Search(ctx, memory.Query{Filters: map[string]json.RawMessage{"source": json.RawMessage(f)}, Limit: 100})
		if err != nil {
			t.Fatalf("search %s: %v", f, err)
		}
		got := make([]uuid.UUID, 0, len(hits))
		for _, it := range hits {
			got = append(got, it.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("filter source=%s: got %v, want %v", f, got, want)
		}
	}
	// One stored value in the range becomes an equality, read in seq order without a sort;
	// several (4242 is stored as an INTEGER and as REALs) keep the range; no value, too.
	for _, tt := range []struct {
		filter string
		single any // nil: the range
	}{
		{`"s3"`, nil}, {`4243`, int64(4243)}, {`-7.5`, float64(-7.5)}, {`4242`, nil}, {`777`, nil},
	} {
		q := memory.Query{Filters: map[string]json.RawMessage{"source": json.RawMessage(tt.filter)}, Limit: 20}
		single, err := s.(*Store).singleNumbers(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := single["source"]; got != tt.single || ok != (tt.single != nil) {
			t.Errorf("singleNumbers(source=%s) = %#v, want %#v", tt.filter, got, tt.single)
		}
		sqlText, args, _ := buildSearchWith(h.scope, q, searchPlan{single: single})
		plan := queryPlan(t, h, sqlText, args)
		if !strings.Contains(plan, `memory_items_f_`+"736f75726365") {
			t.Errorf("the plan of filter source=%s does not use the source index:\n%s", tt.filter, plan)
		}
		if sorts := strings.Contains(plan, "TEMP B-TREE"); sorts != (tt.single == nil && tt.filter != `"s3"`) {
			t.Errorf("the plan of filter source=%s sorts: %v:\n%s", tt.filter, sorts, plan)
		}
	}
}

// queryPlan returns the EXPLAIN QUERY PLAN details of a statement, one per line.
func queryPlan(t *testing.T, h *Harness, sqlText string, args []any) string {
	t.Helper()
	rows, err := h.admin.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+sqlText, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}
