package requirements

import (
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Requirements
	}{
		{name: "empty requires nothing", in: "", want: Requirements{}},
		{name: "blank requires nothing", in: " \t ", want: Requirements{}},
		{name: "immediate search", in: "searchConsistency=immediate", want: Requirements{SearchConsistency: memory.ConsistencyImmediate}},
		{name: "every clause, spaced",
			in: " searchConsistency = eventual ,retrieveFidelity >= native_fields, searchFidelity>=full, searchReturnsTags, preservesMetadata," +
				" supportedFilters=source + branch_id+source, nativeItemFields=metadata+created_at",
			want: Requirements{
				SearchConsistency: memory.ConsistencyEventual, RetrieveFidelity: memory.FidelityNativeFields,
				SearchFidelity: memory.FidelityFull, SearchReturnsTags: true, PreservesMetadata: true,
				SupportedFilters: []string{"branch_id", "source"},
				NativeItemFields: []memory.ItemField{memory.FieldCreatedAt, memory.FieldMetadata},
			}},
		{name: "filter keys may hold dots, slashes, colons", in: "supportedFilters=app.kubernetes.io/name+x:y", want: Requirements{SupportedFilters: []string{"app.kubernetes.io/name", "x:y"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Parse(tt.in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			again, err := Parse(got.String())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again).To(Equal(got), "String must round-trip")
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		clause int
		offset int
		token  string
		reason string
	}{
		{"unknown name", "searchConsistency=immediate, retreiveFidelity>=full", 2, 29, "retreiveFidelity", "unknown requirement"},
		{"unknown consistency", "searchConsistency=strong", 1, 18, "strong", "unknown search consistency"},
		{"unknown fidelity", "searchFidelity>=exact", 1, 16, "exact", "unknown fidelity"},
		{"fidelity with =", "retrieveFidelity=full", 1, 0, "retrieveFidelity=full", "needs the form retrieveFidelity>=<value>"},
		{"consistency with >=", "searchConsistency>=immediate", 1, 0, "searchConsistency>=immediate", "needs the form searchConsistency=<value>"},
		{"flag with a value", "searchReturnsTags=true", 1, 17, "=", "takes no value"},
		{"missing value", "supportedFilters=", 1, 17, "", "needs a value after ="},
		{"empty clause", "searchReturnsTags,,preservesMetadata", 2, 18, "", "empty clause"},
		{"trailing comma", "searchReturnsTags, ", 2, 19, "", "empty clause"},
		{"duplicate", "preservesMetadata, searchReturnsTags, preservesMetadata", 3, 38, "preservesMetadata", "already required by clause 1"},
		{"empty list element", "supportedFilters=a++b", 1, 19, "", "empty element"},
		{"space inside a key", "supportedFilters=a b", 1, 17, "a b", "printable ASCII"},
		{"unknown item field", "nativeItemFields=id+body", 1, 20, "body", "unknown item field"},
		{"bad operator", "searchFidelity<=full", 1, 0, "searchFidelity<=full", "needs the form"},
		{"no name", "=immediate", 1, 0, "", "unknown requirement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Parse(tt.in)
			var se *SyntaxError
			g.Expect(errors.As(err, &se)).To(BeTrue(), "want a *SyntaxError, got %v", err)
			g.Expect(errors.Is(err, ErrSyntax)).To(BeTrue())
			g.Expect(se.Clause).To(Equal(tt.clause))
			g.Expect(se.Offset).To(Equal(tt.offset))
			g.Expect(se.Token).To(Equal(tt.token))
			g.Expect(se.Reason).To(ContainSubstring(tt.reason))
			g.Expect(err.Error()).To(HavePrefix(AnnotationRequires + ": clause "))
			g.Expect(err.Error()).To(ContainSubstring("%q", tt.token))
		})
	}
}

func TestParseBounds(t *testing.T) {
	g := NewWithT(t)
	_, err := Parse(strings.Repeat(" ", MaxLength+1))
	g.Expect(err).To(MatchError(ContainSubstring("longer than 4096 bytes")))
	_, err = Parse(strings.Repeat("searchReturnsTags,", MaxClauses) + "x")
	g.Expect(err).To(MatchError(ContainSubstring("33 clauses, more than 32")))
	keys := make([]string, MaxListValues+1)
	for i := range keys {
		keys[i] = strings.Repeat("k", i+1)
	}
	_, err = Parse("supportedFilters=" + strings.Join(keys, "+"))
	g.Expect(err).To(MatchError(ContainSubstring("more than 64 elements")))
	_, err = Parse("supportedFilters=" + strings.Repeat("k", memory.MaxFilterKeyLength+1))
	g.Expect(err).To(MatchError(ContainSubstring("longer than 256 bytes")))
}

// redisLike is the manifest of an eventual adapter that drops created_at, as the Redis
// sample declares it.
func redisLike() memory.Manifest {
	return memory.Manifest{
		Adapter:           "redis",
		NativeItemFields:  []memory.ItemField{memory.FieldID, memory.FieldMetadata, memory.FieldContent, memory.FieldTags},
		DroppedItemFields: []memory.ItemField{memory.FieldCreatedAt},
		SupportedFilters:  []string{"source"},
		SearchConsistency: memory.ConsistencyEventual,
		RetrieveFidelity:  memory.FidelityNativeFields,
		SearchFidelity:    memory.FidelityLossy,
		SearchReturnsTags: false,
		PreservesMetadata: true,
	}
}

func TestUnmet(t *testing.T) {
	tests := []struct {
		name string
		reqs string
		want []string
	}{
		{"nothing required", "", nil},
		{"eventual tolerated", "searchConsistency=eventual", nil},
		{"immediate unmet", "searchConsistency=immediate", []string{`searchConsistency=immediate (the manifest says "eventual")`}},
		{"fidelity at the floor", "retrieveFidelity>=native_fields, searchFidelity>=lossy", nil},
		{"fidelity above", "retrieveFidelity>=full, searchFidelity>=native_fields", []string{
			`retrieveFidelity>=full (the manifest says "native_fields")`,
			`searchFidelity>=native_fields (the manifest says "lossy")`,
		}},
		{"met flag and unmet flag", "preservesMetadata, searchReturnsTags", []string{"searchReturnsTags (search hits do not carry tags)"}},
		{"filters, one missing", "supportedFilters=source+branch_id", []string{"supportedFilters=branch_id+source (not supported: branch_id)"}},
		{"native fields, one dropped", "nativeItemFields=id+created_at", []string{"nativeItemFields=created_at+id (not native: created_at)"}},
		{"each unmet named in clause order",
			"nativeItemFields=created_at, searchReturnsTags, searchConsistency=immediate", []string{
				`searchConsistency=immediate (the manifest says "eventual")`,
				"searchReturnsTags (search hits do not carry tags)",
				"nativeItemFields=created_at (not native: created_at)",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := Parse(tt.reqs)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Unmet(redisLike())).To(Equal(tt.want))
		})
	}
}

func TestEverythingMetByAFullManifest(t *testing.T) {
	g := NewWithT(t)
	r, err := Parse("searchConsistency=immediate, retrieveFidelity>=full, searchFidelity>=full, searchReturnsTags, preservesMetadata, " +
		"supportedFilters=branch_id, nativeItemFields=id+created_at+metadata+content+tags")
	g.Expect(err).NotTo(HaveOccurred())
	m := memory.Manifest{
		Adapter:           "sqlite",
		NativeItemFields:  memory.AllItemFields,
		DroppedItemFields: []memory.ItemField{},
		SupportedFilters:  []string{"branch_id", "source"},
		SearchConsistency: memory.ConsistencyImmediate, RetrieveFidelity: memory.FidelityFull, SearchFidelity: memory.FidelityFull,
		SearchReturnsTags: true, PreservesMetadata: true,
	}
	g.Expect(r.Unmet(m)).To(BeEmpty())
}

func TestGovernanceClauses(t *testing.T) {
	g := NewWithT(t)
	r, err := Parse("isolated, readOnlyBindings, retention<=720h, quota")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r).To(Equal(Requirements{Isolated: true, ReadOnlyBindings: true, RetentionAtMost: 720 * time.Hour, Quota: true}))
	again, err := Parse(r.String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(r))

	base := memory.FullManifest("a", nil)
	g.Expect(r.Unmet(base)).To(Equal([]string{
		"readOnlyBindings (the manifest does not claim governance/v1 read_only)",
		"isolated (the manifest does not claim governance/v1 isolation)",
		"retention<=720h0m0s (the manifest claims no retention max age)",
		"quota (the manifest claims no governance/v1 quota)",
	}))
	long := base.WithGovernance(&memory.GovernanceV1{ReadOnly: true, Isolation: true,
		Retention: &memory.GovernanceRetention{MaxAgeSeconds: 31 * 24 * 3600}, Quota: &memory.GovernanceQuota{MaxItems: 10}})
	g.Expect(r.Unmet(long)).To(Equal([]string{"retention<=720h0m0s (the manifest claims 2678400s)"}))
	short := base.WithGovernance(&memory.GovernanceV1{ReadOnly: true, Isolation: true,
		Retention: &memory.GovernanceRetention{MaxAgeSeconds: 7 * 24 * 3600}, Quota: &memory.GovernanceQuota{MaxItems: 10}})
	g.Expect(r.Unmet(short)).To(BeEmpty())

	for _, bad := range []string{"retention<=1.5s", "retention=720h", "retention<=0s", "isolated=true", "quota<=5"} {
		_, err := Parse(bad)
		g.Expect(err).To(MatchError(ErrSyntax), bad)
	}
}
