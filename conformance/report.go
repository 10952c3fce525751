package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Outcome is the result of one case, or of a whole run.
type Outcome string

// Outcome values. A run is Passed only if no case Failed and every case executed.
const (
	// Passed: the case executed and every observation held.
	Passed Outcome = "Passed"
	// Failed: an observation did not hold, the case panicked, timed out or did not run.
	Failed Outcome = "Failed"
	// NotApplicable: the manifest or the harness makes the case inapplicable; the message
	// says why. It never stands for "could not run".
	NotApplicable Outcome = "NotApplicable"
)

// Valid reports whether o is one of the three outcomes.
func (o Outcome) Valid() bool { return o == Passed || o == Failed || o == NotApplicable }

// MaxTerminationMessage is the Kubernetes limit on a container termination message; the
// compact report always fits in it.
const MaxTerminationMessage = 4096

// maxReportBytes bounds what ParseReport accepts: a full report of every case with generous
// messages is far smaller, so anything larger is hostile or corrupt.
const maxReportBytes = 1 << 20

// maxMessageBytes bounds one case message in a full report, so that a backend echoing huge
// payloads into its errors cannot bloat the report.
const maxMessageBytes = 4096

// CaseResult is the result of one case.
type CaseResult struct {
	// ID is the case id.
	ID CaseID `json:"id"`
	// Outcome is Passed, Failed or NotApplicable.
	Outcome Outcome `json:"outcome"`
	// Message explains the outcome: what failed, why the case does not apply, or a short
	// note on what a pass observed.
	Message string `json:"message,omitempty"`
	// Hint names the likely adapter bug; set only for Failed.
	Hint string `json:"hint,omitempty"`
	// DurationMillis is the case's wall time.
	DurationMillis int64 `json:"duration_ms"`
	// MissingCapabilities names the harness capabilities the case lacked: it was
	// NotApplicable for them, or its message says what it could not observe.
	MissingCapabilities []string `json:"missing_capabilities,omitempty"`

	// failedChecks names the checks that found problems (not serialized).
	failedChecks []string
}

// Counts tallies case outcomes.
type Counts struct {
	// Passed is the number of cases that passed.
	Passed int `json:"passed"`
	// Failed is the number of cases that failed.
	Failed int `json:"failed"`
	// NotApplicable is the number of cases that did not apply.
	NotApplicable int `json:"not_applicable"`
}

// Report is the result of one conformance run. It round-trips through JSON.
type Report struct {
	// AdapterID is the manifest's adapter id ("" if the harness could not make a store).
	AdapterID string `json:"adapter_id"`
	// Manifest is the manifest the store published, if any.
	Manifest *memory.Manifest `json:"manifest,omitempty"`
	// ManifestHash is Manifest.Hash(), the key the operator records a run under.
	ManifestHash string `json:"manifest_hash,omitempty"`
	// SuiteVersion is the SuiteVersion of the suite that ran.
	SuiteVersion string `json:"suite_version"`
	// ServiceVersion is the backend service version reported by the harness, if it can.
	ServiceVersion string `json:"service_version,omitempty"`
	// AdapterVersion is the adapter build version supplied by the caller, if any.
	AdapterVersion string `json:"adapter_version,omitempty"`
	// StartTime is when the run started (UTC).
	StartTime time.Time `json:"start_time"`
	// DurationMillis is the run's wall time.
	DurationMillis int64 `json:"duration_ms"`
	// Result is Passed or Failed for the run as a whole.
	Result Outcome `json:"result"`
	// Claim is ClaimFull when no case lacked a harness capability, ClaimPartial otherwise: a
	// Passed run with a partial claim does not establish the full ADR-0093 claim.
	Claim string `json:"claim"`
	// MissingCapabilities is the sorted union of the cases' missing capabilities.
	MissingCapabilities []string `json:"missing_capabilities,omitempty"`
	// Target is the data URL of the server a wire run judged (conformance --target); empty
	// for in-process runs. A wire report also holds the wire-rule cases.
	Target string `json:"target,omitempty"`
	// Error is a run-level failure (no store could be made, the context ended), if any.
	Error string `json:"error,omitempty"`
	// Counts tallies the case outcomes.
	Counts Counts `json:"counts"`
	// Cases holds one result per case, in matrix order.
	Cases []CaseResult `json:"cases"`
	// Profiles holds one result per governance profile (profiles.go), in report order; a
	// profile the manifest does not claim is NotApplicable. Absent from a run that never
	// reached the matrix.
	Profiles []CaseResult `json:"profiles,omitempty"`
}

// Profile returns the result for a governance profile, if the report has one.
func (r *Report) Profile(id CaseID) (CaseResult, bool) {
	for _, p := range r.Profiles {
		if p.ID == id {
			return p, true
		}
	}
	return CaseResult{}, false
}

// Case returns the result for id, if the report has one.
func (r *Report) Case(id CaseID) (CaseResult, bool) {
	for _, c := range r.Cases {
		if c.ID == id {
			return c, true
		}
	}
	return CaseResult{}, false
}

// FailedIDs returns the ids of failed cases in matrix order.
func (r *Report) FailedIDs() []CaseID {
	var out []CaseID
	for _, c := range r.Cases {
		if c.Outcome == Failed {
			out = append(out, c.ID)
		}
	}
	return out
}

// finish computes Counts and Result. Result is Passed only if there is no run error, every
// case of the matrix has exactly one valid result and none Failed.
func (r *Report) finish() {
	r.Counts = Counts{}
	seen := map[CaseID]bool{}
	complete, failedProfile := true, false
	missing := map[string]bool{}
	for _, c := range r.Cases {
		for _, m := range c.MissingCapabilities {
			missing[m] = true
		}
		switch c.Outcome {
		case Passed:
			r.Counts.Passed++
		case Failed:
			r.Counts.Failed++
		case NotApplicable:
			r.Counts.NotApplicable++
		default:
			complete = false
		}
		if seen[c.ID] {
			complete = false
		}
		seen[c.ID] = true
	}
	expected := cases
	if r.Target != "" {
		expected = append(slices.Clone(cases), wireCases...)
	}
	for _, c := range expected {
		if !seen[c.ID] {
			complete = false
		}
	}
	// The profiles count toward the verdict and the claim, not toward Counts (the
	// matrix's): a failed profile fails the run, and one that lacked a capability for a
	// claim makes the claim partial. When present, each must be there exactly once.
	seenProfile := map[CaseID]bool{}
	for _, p := range r.Profiles {
		for _, m := range p.MissingCapabilities {
			missing[m] = true
		}
		if !p.Outcome.Valid() || seenProfile[p.ID] {
			complete = false
		}
		if p.Outcome == Failed {
			failedProfile = true
		}
		seenProfile[p.ID] = true
	}
	if len(r.Profiles) > 0 {
		for _, p := range profiles {
			if !seenProfile[p.ID] {
				complete = false
			}
		}
	}
	r.MissingCapabilities = nil
	for m := range missing {
		r.MissingCapabilities = append(r.MissingCapabilities, m)
	}
	slices.Sort(r.MissingCapabilities)
	r.Claim = ClaimFull
	if len(r.MissingCapabilities) > 0 || !complete || r.Error != "" {
		r.Claim = ClaimPartial
	}
	r.Result = Passed
	if r.Error != "" || r.Counts.Failed > 0 || failedProfile || !complete {
		r.Result = Failed
	}
}

// Summary is the run's verdict in one phrase: "Passed (full claim)", "Passed (partial claim:
// missing harness capabilities …)" or "Failed". Only the first stands for the full
// ADR-0093 claim.
func (r *Report) Summary() string {
	switch {
	case r.Result != Passed:
		return string(Failed)
	case r.Claim == ClaimFull:
		return "Passed (full claim)"
	case len(r.MissingCapabilities) > 0:
		return "Passed (partial claim: missing harness capabilities " + strings.Join(r.MissingCapabilities, ", ") + "; not the full ADR-0093 claim)"
	default:
		return "Passed (partial claim; not the full ADR-0093 claim)"
	}
}

// FullClaim reports whether the run passed with every capability: the full ADR-0093 claim.
func (r *Report) FullClaim() bool { return r.Result == Passed && r.Claim == ClaimFull }

// JSON returns the full report as indented JSON.
func (r *Report) JSON() ([]byte, error) {
	return json.MarshalIndent(r, "", "  ")
}

// ParseReport decodes a full report strictly (unknown fields are errors) and checks that its
// outcomes are known values.
func ParseReport(data []byte) (*Report, error) {
	var r Report
	if err := decodeBounded(data, maxReportBytes, "parse report", &r); err != nil {
		return nil, err
	}
	if !r.Result.Valid() {
		return nil, fmt.Errorf("parse report: unknown result %q", truncateString(string(r.Result), 32))
	}
	for _, c := range r.Cases {
		if !c.Outcome.Valid() {
			return nil, fmt.Errorf("parse report: case %q: unknown outcome %q", truncateString(string(c.ID), 64), truncateString(string(c.Outcome), 32))
		}
	}
	return &r, nil
}

// CompactCase is one case in the compact report.
type CompactCase struct {
	// ID is the case id.
	ID CaseID `json:"id"`
	// Outcome is Passed, Failed or NotApplicable.
	Outcome Outcome `json:"outcome"`
	// Message is the case message, truncated to fit the termination message limit.
	Message string `json:"message,omitempty"`
}

// CompactReport is the report form a conformance Job writes as its termination message: ids,
// outcomes, truncated messages and counts, always under MaxTerminationMessage bytes.
type CompactReport struct {
	// SuiteVersion is the suite version that ran.
	SuiteVersion string `json:"suite_version"`
	// AdapterID is the manifest's adapter id.
	AdapterID string `json:"adapter_id"`
	// ManifestHash is the hash of the manifest that was tested.
	ManifestHash string `json:"manifest_hash,omitempty"`
	// ServiceVersion is the backend service version the run exercised.
	ServiceVersion string `json:"service_version,omitempty"`
	// AdapterVersion is the adapter build version.
	AdapterVersion string `json:"adapter_version,omitempty"`
	// StartTime is when the run started.
	StartTime time.Time `json:"start_time"`
	// DurationMillis is the run's wall time.
	DurationMillis int64 `json:"duration_ms"`
	// Result is Passed or Failed.
	Result Outcome `json:"result"`
	// Claim is the report's Claim (full or partial).
	Claim string `json:"claim,omitempty"`
	// MissingCapabilities is the report's list, bounded.
	MissingCapabilities []string `json:"missing_capabilities,omitempty"`
	// Target is the judged server's URL, truncated; empty for in-process runs.
	Target string `json:"target,omitempty"`
	// Error is the run-level failure, truncated.
	Error string `json:"error,omitempty"`
	// Counts tallies the case outcomes.
	Counts Counts `json:"counts"`
	// Cases holds one entry per case in matrix order.
	Cases []CompactCase `json:"cases"`
	// Profiles holds one entry per governance profile, in report order.
	Profiles []CompactCase `json:"profiles,omitempty"`
}

// Compact returns the compact JSON form, guaranteed to be at most MaxTerminationMessage
// bytes: identifying strings are bounded and case messages are truncated (on rune
// boundaries, marked with "…") as much as needed, shortest budget last.
func (r *Report) Compact() ([]byte, error) {
	// Budgets tried in order; the last one drops messages entirely. The matrix's cases with ids,
	// outcomes and counts fit in well under 2 KiB, so the last step always fits.
	for _, limit := range []int{400, 200, 120, 80, 48, 24, 0} {
		c := CompactReport{
			SuiteVersion:   truncateString(r.SuiteVersion, 32),
			AdapterID:      truncateString(r.AdapterID, 64),
			ManifestHash:   truncateString(r.ManifestHash, 80),
			ServiceVersion: truncateString(r.ServiceVersion, 64),
			AdapterVersion: truncateString(r.AdapterVersion, 64),
			StartTime:      r.StartTime,
			DurationMillis: r.DurationMillis,
			Result:         r.Result,
			Claim:          truncateString(r.Claim, 16),
			Target:         truncateString(r.Target, 128),
			Error:          truncateString(r.Error, max(limit, 64)),
			Counts:         r.Counts,
		}
		for i, m := range r.MissingCapabilities {
			if i == 16 {
				break
			}
			c.MissingCapabilities = append(c.MissingCapabilities, truncateString(m, 40))
		}
		for _, cr := range r.Cases {
			c.Cases = append(c.Cases, CompactCase{
				ID:      CaseID(truncateString(string(cr.ID), 40)),
				Outcome: cr.Outcome,
				Message: truncateString(cr.Message, limit),
			})
		}
		for _, pr := range r.Profiles {
			c.Profiles = append(c.Profiles, CompactCase{
				ID:      CaseID(truncateString(string(pr.ID), 40)),
				Outcome: pr.Outcome,
				Message: truncateString(pr.Message, limit),
			})
		}
		b, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("compact report: %w", err)
		}
		if len(b) <= MaxTerminationMessage {
			return b, nil
		}
	}
	return nil, fmt.Errorf("compact report: does not fit in %d bytes even without messages (%d cases)", MaxTerminationMessage, len(r.Cases))
}

// ParseCompact decodes a compact report strictly, as the operator reads it from a
// termination message.
func ParseCompact(data []byte) (*CompactReport, error) {
	var c CompactReport
	if err := decodeBounded(data, MaxTerminationMessage, "parse compact report", &c); err != nil {
		return nil, err
	}
	if !c.Result.Valid() {
		return nil, fmt.Errorf("parse compact report: unknown result %q", truncateString(string(c.Result), 32))
	}
	for _, cc := range append(slices.Clone(c.Cases), c.Profiles...) {
		if !cc.Outcome.Valid() {
			return nil, fmt.Errorf("parse compact report: case %q: unknown outcome %q", truncateString(string(cc.ID), 64), truncateString(string(cc.Outcome), 32))
		}
	}
	return &c, nil
}

// decodeBounded decodes one JSON object into v, refusing input over limit bytes, unknown fields
// and trailing data: reports arrive from pods and files, so they are untrusted input.
func decodeBounded(data []byte, limit int, what string, v any) error {
	if len(data) > limit {
		return fmt.Errorf("%s: %d bytes exceeds the %d byte limit", what, len(data), limit)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if dec.More() {
		return fmt.Errorf("%s: trailing data after the object", what)
	}
	return nil
}

// WriteTable writes a human-readable table of the report for terminals.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "adapter %s  suite %s  service %s  result %s  (%d passed, %d failed, %d not applicable, %s)\n",
		orDash(r.AdapterID), r.SuiteVersion, orDash(r.ServiceVersion), r.Result,
		r.Counts.Passed, r.Counts.Failed, r.Counts.NotApplicable, time.Duration(r.DurationMillis)*time.Millisecond)
	if r.Target != "" {
		fmt.Fprintf(&b, "target %s  adapter version %s (as reported)\n", r.Target, orDash(r.AdapterVersion))
	}
	fmt.Fprintf(&b, "claim %s\n", r.Summary())
	if r.ManifestHash != "" {
		fmt.Fprintf(&b, "manifest %s\n", r.ManifestHash)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", oneLine(r.Error))
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tOUTCOME\tMESSAGE")
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.ID, c.Outcome, truncateString(oneLine(c.Message), 160))
		if c.Outcome == Failed && c.Hint != "" {
			fmt.Fprintf(tw, "\t\thint: %s\n", oneLine(c.Hint))
		}
	}
	if len(r.Profiles) > 0 {
		fmt.Fprintln(tw, "PROFILE\tOUTCOME\tMESSAGE")
		for _, p := range r.Profiles {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.ID, p.Outcome, truncateString(oneLine(p.Message), 160))
			if p.Outcome == Failed && p.Hint != "" {
				fmt.Fprintf(tw, "\t\thint: %s\n", oneLine(p.Hint))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Table returns WriteTable's output as a string.
func (r *Report) Table() string {
	var b strings.Builder
	_ = r.WriteTable(&b)
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// truncateString cuts s to at most n bytes on a rune boundary, ending in "…" when cut.
// Invalid UTF-8 is replaced first so that JSON escaping cannot grow the result unexpectedly.
func truncateString(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	if n <= len(ellipsis) {
		return ""
	}
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
