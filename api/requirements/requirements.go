package requirements

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// AnnotationRequires is the pod annotation that holds a requirement list.
const AnnotationRequires = "memory.agentmem.io/requires"

// Bounds on a requirement list. An annotation is hostile input: these keep parsing and the
// messages it produces small whatever a pod carries.
const (
	// MaxLength bounds the whole list, in bytes.
	MaxLength = 4096
	// MaxClauses bounds the number of comma-separated clauses.
	MaxClauses = 32
	// MaxListValues bounds the keys or fields of one list clause; it matches the manifest's own
	// bound on supported filters.
	MaxListValues = memory.MaxSupportedFilters
)

// The clause names: each is the MemoryAdapter spelling of the manifest field it constrains.
const (
	NameSearchConsistency = "searchConsistency"
	NameRetrieveFidelity  = "retrieveFidelity"
	NameSearchFidelity    = "searchFidelity"
	NameSearchReturnsTags = "searchReturnsTags"
	NamePreservesMetadata = "preservesMetadata"
	NameSupportedFilters  = "supportedFilters"
	NameNativeItemFields  = "nativeItemFields"
	// The governance/v1 clauses (issue 46): what the adapter must claim, and so prove by
	// the conformance profile of the same name, before the workload is released.
	NameReadOnlyBindings = "readOnlyBindings"
	NameIsolated         = "isolated"
	NameRetention        = "retention"
	NameQuota            = "quota"
)

// clauseNames lists the clause names in canonical order, the order String writes them in.
var clauseNames = []string{
	NameSearchConsistency, NameRetrieveFidelity, NameSearchFidelity,
	NameSearchReturnsTags, NamePreservesMetadata, NameSupportedFilters, NameNativeItemFields,
	NameReadOnlyBindings, NameIsolated, NameRetention, NameQuota,
}

// Requirements is a parsed requirement list. The zero value requires nothing.
type Requirements struct {
	// SearchConsistency is the consistency the workload needs: immediate is met only by an
	// immediate adapter; eventual (the workload tolerates either) by any. Empty: no clause.
	SearchConsistency memory.SearchConsistency
	// RetrieveFidelity is the least retrieve fidelity the workload accepts. Empty: no clause.
	RetrieveFidelity memory.Fidelity
	// SearchFidelity is the least search fidelity the workload accepts. Empty: no clause.
	SearchFidelity memory.Fidelity
	// SearchReturnsTags requires search hits to carry the stored tags.
	SearchReturnsTags bool
	// PreservesMetadata requires metadata to round-trip exactly.
	PreservesMetadata bool
	// SupportedFilters are filter keys the adapter must accept, sorted and unique.
	SupportedFilters []string
	// NativeItemFields are item fields the adapter must store natively, sorted and unique.
	NativeItemFields []memory.ItemField
	// ReadOnlyBindings requires the governance/v1 read_only claim.
	ReadOnlyBindings bool
	// Isolated requires the governance/v1 isolation claim.
	Isolated bool
	// RetentionAtMost requires a retention max age claimed and at most this long (a
	// workload whose data must not outlive a policy); zero: no clause.
	RetentionAtMost time.Duration
	// Quota requires a governance/v1 quota claim (a runaway writer is refused, not billed).
	Quota bool
}

// fidelityRank orders the fidelities: lossy < native_fields < full.
var fidelityRank = map[memory.Fidelity]int{memory.FidelityLossy: 1, memory.FidelityNativeFields: 2, memory.FidelityFull: 3}

// SyntaxError is a requirement list that does not parse. Its message names the clause, where
// it starts and what is wrong, so an admission rejection is actionable on its own.
type SyntaxError struct {
	// Clause is the 1-based number of the offending clause; 0 when the whole list is at fault.
	Clause int
	// Offset is the 0-based byte offset of the offending token in the list.
	Offset int
	// Token is the offending token as written, cut to 64 bytes.
	Token string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	if e.Clause == 0 {
		return fmt.Sprintf("%s: %s", AnnotationRequires, e.Reason)
	}
	return fmt.Sprintf("%s: clause %d, token %q at byte %d: %s", AnnotationRequires, e.Clause, e.Token, e.Offset, e.Reason)
}

// ErrSyntax is matched by every *SyntaxError through errors.Is.
var ErrSyntax = errors.New("malformed requirement list")

// Is makes errors.Is(err, ErrSyntax) true for every syntax error.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// Parse reads a requirement list. Whitespace around clauses, names, operators and values is
// ignored; an empty or all-blank list requires nothing. Each clause may appear once.
func Parse(s string) (Requirements, error) {
	var r Requirements
	if len(s) > MaxLength {
		return r, &SyntaxError{Reason: fmt.Sprintf("longer than %d bytes", MaxLength)}
	}
	if strings.TrimSpace(s) == "" {
		return r, nil
	}
	if n := strings.Count(s, ",") + 1; n > MaxClauses {
		return r, &SyntaxError{Reason: fmt.Sprintf("%d clauses, more than %d", n, MaxClauses)}
	}
	seen := map[string]int{}
	offset := 0
	for i, raw := range strings.Split(s, ",") {
		n := i + 1
		start := offset
		offset += len(raw) + 1
		c := trimmed(raw, start)
		if c.text == "" {
			return Requirements{}, &SyntaxError{Clause: n, Offset: c.off, Token: "", Reason: "empty clause (two commas, or a comma at an end)"}
		}
		if err := r.clause(n, c, seen); err != nil {
			return Requirements{}, err
		}
	}
	return r, nil
}

// span is a piece of the input with its byte offset.
type span struct {
	text string
	off  int
}

// trimmed strips surrounding ASCII whitespace and keeps the offset of what remains.
func trimmed(s string, off int) span {
	t := strings.TrimLeft(s, " \t\r\n")
	off += len(s) - len(t)
	return span{text: strings.TrimRight(t, " \t\r\n"), off: off}
}

func (sp span) err(n int, reason string) *SyntaxError {
	tok := sp.text
	if len(tok) > 64 {
		tok = tok[:64]
	}
	return &SyntaxError{Clause: n, Offset: sp.off, Token: tok, Reason: reason}
}

// clause parses one clause into r.
func (r *Requirements) clause(n int, c span, seen map[string]int) error {
	name, op, val := split(c)
	if !slices.Contains(clauseNames, name.text) {
		return name.err(n, fmt.Sprintf("unknown requirement (want one of %s)", strings.Join(clauseNames, ", ")))
	}
	if first, dup := seen[name.text]; dup {
		return name.err(n, fmt.Sprintf("%s is already required by clause %d", name.text, first))
	}
	seen[name.text] = n
	wantOp := map[string]string{
		NameSearchConsistency: "=", NameRetrieveFidelity: ">=", NameSearchFidelity: ">=",
		NameSearchReturnsTags: "", NamePreservesMetadata: "",
		NameSupportedFilters: "=", NameNativeItemFields: "=",
		NameReadOnlyBindings: "", NameIsolated: "", NameRetention: "<=", NameQuota: "",
	}[name.text]
	if op.text != wantOp {
		if wantOp == "" {
			return op.err(n, fmt.Sprintf("%s takes no value: write it alone to require it", name.text))
		}
		return c.err(n, fmt.Sprintf("%s needs the form %s%s<value>", name.text, name.text, wantOp))
	}
	if wantOp != "" && val.text == "" {
		return val.err(n, fmt.Sprintf("%s needs a value after %s", name.text, wantOp))
	}
	switch name.text {
	case NameSearchConsistency:
		v := memory.SearchConsistency(val.text)
		if !v.Valid() {
			return val.err(n, "unknown search consistency (want immediate or eventual)")
		}
		r.SearchConsistency = v
	case NameRetrieveFidelity, NameSearchFidelity:
		v := memory.Fidelity(val.text)
		if !v.Valid() {
			return val.err(n, "unknown fidelity (want lossy, native_fields or full)")
		}
		if name.text == NameRetrieveFidelity {
			r.RetrieveFidelity = v
		} else {
			r.SearchFidelity = v
		}
	case NameReadOnlyBindings:
		r.ReadOnlyBindings = true
	case NameIsolated:
		r.Isolated = true
	case NameQuota:
		r.Quota = true
	case NameRetention:
		d, err := time.ParseDuration(val.text)
		if err != nil || d < time.Second || d%time.Second != 0 {
			return val.err(n, "retention needs a whole number of seconds of at least 1s, as a duration (720h, 90s)")
		}
		r.RetentionAtMost = d
	case NameSearchReturnsTags:
		r.SearchReturnsTags = true
	case NamePreservesMetadata:
		r.PreservesMetadata = true
	case NameSupportedFilters:
		keys, err := list(n, val, func(sp span) error {
			if len(sp.text) > memory.MaxFilterKeyLength {
				return sp.err(n, fmt.Sprintf("filter key longer than %d bytes", memory.MaxFilterKeyLength))
			}
			return nil
		})
		if err != nil {
			return err
		}
		r.SupportedFilters = keys
	case NameNativeItemFields:
		fields, err := list(n, val, func(sp span) error {
			if !memory.ItemField(sp.text).Valid() {
				return sp.err(n, "unknown item field (want id, created_at, metadata, content or tags)")
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, f := range fields {
			r.NativeItemFields = append(r.NativeItemFields, memory.ItemField(f))
		}
	}
	return nil
}

// split cuts a clause into name, operator (">=", "=" or "") and value.
func split(c span) (name, op, val span) {
	i := strings.IndexAny(c.text, "=<>!")
	if i < 0 {
		return trimmed(c.text, c.off), span{off: c.off + len(c.text)}, span{off: c.off + len(c.text)}
	}
	name = trimmed(c.text[:i], c.off)
	j := i
	for j < len(c.text) && strings.IndexByte("=<>!", c.text[j]) >= 0 {
		j++
	}
	op = span{text: c.text[i:j], off: c.off + i}
	val = trimmed(c.text[j:], c.off+j)
	return name, op, val
}

// list reads a '+'-separated value list: each element non-empty, printable ASCII without
// spaces or the language's separators, checked by each; returned sorted and unique.
func list(n int, val span, each func(span) error) ([]string, error) {
	var out []string
	off := val.off
	for _, raw := range strings.Split(val.text, "+") {
		sp := trimmed(raw, off)
		off += len(raw) + 1
		if sp.text == "" {
			return nil, sp.err(n, "empty element in a '+' list")
		}
		for _, b := range []byte(sp.text) {
			if b <= ' ' || b >= 0x7f || strings.IndexByte(",+=<>!", b) >= 0 {
				return nil, sp.err(n, "list elements are printable ASCII without spaces or any of , + = < > !")
			}
		}
		if err := each(sp); err != nil {
			return nil, err
		}
		out = append(out, sp.text)
		if len(out) > MaxListValues {
			return nil, val.err(n, fmt.Sprintf("more than %d elements", MaxListValues))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// String writes the requirements in canonical form: clauses in a fixed order, lists sorted,
// ", " between clauses. Parse(r.String()) returns r.
func (r Requirements) String() string {
	var cs []string
	if r.SearchConsistency != "" {
		cs = append(cs, NameSearchConsistency+"="+string(r.SearchConsistency))
	}
	if r.RetrieveFidelity != "" {
		cs = append(cs, NameRetrieveFidelity+">="+string(r.RetrieveFidelity))
	}
	if r.SearchFidelity != "" {
		cs = append(cs, NameSearchFidelity+">="+string(r.SearchFidelity))
	}
	if r.SearchReturnsTags {
		cs = append(cs, NameSearchReturnsTags)
	}
	if r.PreservesMetadata {
		cs = append(cs, NamePreservesMetadata)
	}
	if len(r.SupportedFilters) > 0 {
		cs = append(cs, NameSupportedFilters+"="+strings.Join(r.SupportedFilters, "+"))
	}
	if len(r.NativeItemFields) > 0 {
		fs := make([]string, len(r.NativeItemFields))
		for i, f := range r.NativeItemFields {
			fs[i] = string(f)
		}
		cs = append(cs, NameNativeItemFields+"="+strings.Join(fs, "+"))
	}
	if r.ReadOnlyBindings {
		cs = append(cs, NameReadOnlyBindings)
	}
	if r.Isolated {
		cs = append(cs, NameIsolated)
	}
	if r.RetentionAtMost > 0 {
		cs = append(cs, NameRetention+"<="+r.RetentionAtMost.String())
	}
	if r.Quota {
		cs = append(cs, NameQuota)
	}
	return strings.Join(cs, ", ")
}

// Unmet names each requirement m does not meet, in canonical clause order, each as its clause
// followed by what the manifest offers instead. An empty result means m meets them all.
func (r Requirements) Unmet(m memory.Manifest) []string {
	var out []string
	if r.SearchConsistency == memory.ConsistencyImmediate && m.SearchConsistency != memory.ConsistencyImmediate {
		out = append(out, fmt.Sprintf("%s=immediate (the manifest says %q)", NameSearchConsistency, m.SearchConsistency))
	}
	if r.RetrieveFidelity != "" && fidelityRank[m.RetrieveFidelity] < fidelityRank[r.RetrieveFidelity] {
		out = append(out, fmt.Sprintf("%s>=%s (the manifest says %q)", NameRetrieveFidelity, r.RetrieveFidelity, m.RetrieveFidelity))
	}
	if r.SearchFidelity != "" && fidelityRank[m.SearchFidelity] < fidelityRank[r.SearchFidelity] {
		out = append(out, fmt.Sprintf("%s>=%s (the manifest says %q)", NameSearchFidelity, r.SearchFidelity, m.SearchFidelity))
	}
	if r.SearchReturnsTags && !m.SearchReturnsTags {
		out = append(out, NameSearchReturnsTags+" (search hits do not carry tags)")
	}
	if r.PreservesMetadata && !m.PreservesMetadata {
		out = append(out, NamePreservesMetadata+" (metadata does not round-trip)")
	}
	var keys []string
	for _, k := range r.SupportedFilters {
		if !m.SupportsFilter(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		out = append(out, fmt.Sprintf("%s=%s (not supported: %s)", NameSupportedFilters, strings.Join(r.SupportedFilters, "+"), strings.Join(keys, ", ")))
	}
	var fields []string
	for _, f := range r.NativeItemFields {
		if !m.Native(f) {
			fields = append(fields, string(f))
		}
	}
	if len(fields) > 0 {
		names := make([]string, len(r.NativeItemFields))
		for i, f := range r.NativeItemFields {
			names[i] = string(f)
		}
		out = append(out, fmt.Sprintf("%s=%s (not native: %s)", NameNativeItemFields, strings.Join(names, "+"), strings.Join(fields, ", ")))
	}
	g := m.Governance()
	if g == nil {
		g = &memory.GovernanceV1{}
	}
	if r.ReadOnlyBindings && !g.ReadOnly {
		out = append(out, NameReadOnlyBindings+" (the manifest does not claim governance/v1 read_only)")
	}
	if r.Isolated && !g.Isolation {
		out = append(out, NameIsolated+" (the manifest does not claim governance/v1 isolation)")
	}
	if r.RetentionAtMost > 0 {
		switch {
		case g.Retention == nil || g.Retention.MaxAgeSeconds == 0:
			out = append(out, fmt.Sprintf("%s<=%s (the manifest claims no retention max age)", NameRetention, r.RetentionAtMost))
		case time.Duration(g.Retention.MaxAgeSeconds)*time.Second > r.RetentionAtMost:
			out = append(out, fmt.Sprintf("%s<=%s (the manifest claims %ds)", NameRetention, r.RetentionAtMost, g.Retention.MaxAgeSeconds))
		}
	}
	if r.Quota && g.Quota == nil {
		out = append(out, NameQuota+" (the manifest claims no governance/v1 quota)")
	}
	return out
}
