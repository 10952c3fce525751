package conformance

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentmem/memory-adapter-operator/conformance/fake"
)

func TestReportRoundTripsThroughJSON(t *testing.T) {
	r := Execute(t.Context(), fake.New(fake.Config{Service: fake.ServiceKnobs{EventualIndex: true}}), fastOptions())
	r.AdapterVersion = "v1.2.3"
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseReport(b)
	if err != nil {
		t.Fatalf("ParseReport: %v\n%s", err, b)
	}
	b2, err := back.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatalf("report changed in a JSON round trip:\n%s\n---\n%s", b, b2)
	}
	if !back.StartTime.Equal(r.StartTime) || back.Manifest == nil || !back.Manifest.Equal(*r.Manifest) || back.ManifestHash != r.Manifest.Hash() {
		t.Errorf("round trip lost identity fields")
	}
	for _, field := range []string{`"adapter_id"`, `"manifest_hash"`, `"suite_version"`, `"service_version"`, `"start_time"`, `"duration_ms"`, `"result"`, `"cases"`, `"not_applicable"`} {
		if !bytes.Contains(b, []byte(field)) {
			t.Errorf("report JSON lacks %s", field)
		}
	}
}

func TestParseReportRejectsHostileInput(t *testing.T) {
	for name, in := range map[string]string{
		"unknown field":   `{"result":"Passed","cases":[],"extra":1}`,
		"unknown result":  `{"result":"Maybe","cases":[]}`,
		"unknown outcome": `{"result":"Passed","cases":[{"id":"limit","outcome":"Skipped","duration_ms":0}]}`,
		"trailing data":   `{"result":"Passed","cases":[]} {}`,
		"oversized":       `{"error":"` + strings.Repeat("x", maxReportBytes) + `"}`,
		"not json":        `nope`,
	} {
		if _, err := ParseReport([]byte(in)); err == nil {
			t.Errorf("%s: ParseReport accepted it", name)
		}
	}
	for name, in := range map[string]string{
		"unknown outcome": `{"result":"Passed","cases":[{"id":"limit","outcome":"Skipped"}]}`,
		"oversized":       `{"error":"` + strings.Repeat("x", MaxTerminationMessage) + `"}`,
	} {
		if _, err := ParseCompact([]byte(in)); err == nil {
			t.Errorf("compact %s: ParseCompact accepted it", name)
		}
	}
}

// TestCompactFitsTerminationMessage builds the worst report: 17 failed cases with long
// messages full of characters JSON must escape, long identity strings and a run error.
func TestCompactFitsTerminationMessage(t *testing.T) {
	long := strings.Repeat(`<ünïcødé "quoted" & \ 𝄞 `+"\x01\n", 400)
	r := &Report{
		AdapterID: strings.Repeat("a", 300), ManifestHash: "sha256:" + strings.Repeat("f", 64),
		SuiteVersion: SuiteVersion, ServiceVersion: strings.Repeat("v", 500), AdapterVersion: strings.Repeat("b", 500),
		StartTime: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), DurationMillis: 123456, Error: long,
	}
	for _, c := range cases {
		r.Cases = append(r.Cases, CaseResult{ID: c.ID, Outcome: Failed, Message: long, Hint: c.Hint})
	}
	r.finish()
	b, err := r.Compact()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxTerminationMessage {
		t.Fatalf("compact report is %d bytes, limit %d", len(b), MaxTerminationMessage)
	}
	t.Logf("compact report with 17 long failures: %d bytes", len(b))
	c, err := ParseCompact(b)
	if err != nil {
		t.Fatalf("ParseCompact: %v", err)
	}
	if len(c.Cases) != len(cases) || c.Result != Failed || c.Counts.Failed != len(cases) || c.SuiteVersion != SuiteVersion || c.ManifestHash != r.ManifestHash {
		t.Fatalf("compact report lost data: %+v", c)
	}
	for i, cc := range c.Cases {
		if cc.ID != cases[i].ID || cc.Outcome != Failed {
			t.Errorf("case %d: %s %s", i, cc.ID, cc.Outcome)
		}
		if cc.Message == "" || !strings.HasSuffix(cc.Message, "…") || !utf8.ValidString(cc.Message) {
			t.Errorf("case %s: message %q is not a truncated prefix", cc.ID, cc.Message)
		}
	}
	// A real passing run's compact form keeps messages whole when they fit.
	pr := Execute(t.Context(), fake.New(fake.Config{}), fastOptions())
	pb, err := pr.Compact()
	if err != nil || len(pb) > MaxTerminationMessage {
		t.Fatalf("passing run compact: %d bytes, %v", len(pb), err)
	}
	var pc CompactReport
	if err := json.Unmarshal(pb, &pc); err != nil || pc.Result != Passed || pc.AdapterID != fake.AdapterID {
		t.Fatalf("passing compact report: %+v %v", pc, err)
	}
}

func TestTableNamesCasesAndHints(t *testing.T) {
	h := fake.New(fake.Config{Adapter: fake.AdapterKnobs{UnknownAsEmptyItem: true}})
	r := Execute(t.Context(), h, fastOptions())
	table := r.Table()
	for _, c := range cases {
		if !strings.Contains(table, string(c.ID)) {
			t.Errorf("table lacks %s", c.ID)
		}
	}
	hint := cases[3].Hint
	if !strings.Contains(table, "hint: "+hint) || !strings.Contains(table, "result Failed") {
		t.Errorf("table lacks the failed case's hint or the result:\n%s", table)
	}
}

func TestTruncateString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 6, "abc…"},
		{"ééééé", 7, "éé…"},
		{"abc", 2, ""},
		{"\xff\xfeab", 100, "\uFFFDab"},
	} {
		if got := truncateString(tc.in, tc.n); got != tc.want {
			t.Errorf("truncateString(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
