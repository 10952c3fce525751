package main

import (
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/conformance"
)

func TestConstName(t *testing.T) {
	for id, want := range map[conformance.CaseID]string{
		"unknown-id":          "CaseUnknownID",
		"limit":               "CaseLimit",
		"dropped-write-field": "CaseDroppedWriteField",
		"wrong-native-kind":   "CaseWrongNativeKind",
	} {
		if got, err := constName(id); err != nil || got != want {
			t.Errorf("constName(%q) = %q, %v; want %q", id, got, err, want)
		}
	}
	for _, bad := range []conformance.CaseID{"", "a--b", "Upper", "sp ace", "-x"} {
		if got, err := constName(bad); err == nil {
			t.Errorf("constName(%q) = %q, want an error", bad, got)
		}
	}
}

// TestRenderFollowsTheRegistry: every case of the registry is in the enum and the list, in
// its order, and a case added to the registry would be too.
func TestRenderFollowsTheRegistry(t *testing.T) {
	cases := conformance.Cases()
	src, err := render(cases)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cases {
		ids = append(ids, string(c.ID))
	}
	if !strings.Contains(string(src), "+kubebuilder:validation:Enum="+strings.Join(ids, ";")+"\n") {
		t.Errorf("the enum is not the registry's ids in order:\n%s", src)
	}
	extra := append(cases, conformance.Case{ID: "new-case", Title: "New case", Description: "a case the registry gained"})
	src, err = render(extra)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{";new-case\n", "CaseNewCase ConformanceCaseID = \"new-case\"", "\tCaseNewCase,\n"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("a registry with one more case: %q missing from\n%s", want, src)
		}
	}
}
