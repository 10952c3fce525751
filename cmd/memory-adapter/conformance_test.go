package main

import (
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/conformance"
)

func TestFailedRunErrorSaysWhy(t *testing.T) {
	for name, tc := range map[string]struct {
		r    conformance.Report
		want []string
	}{
		"failed cases are named": {
			r: conformance.Report{Result: conformance.Failed, Counts: conformance.Counts{Passed: 15, Failed: 2},
				Cases: []conformance.CaseResult{{ID: "filter-exactness", Outcome: conformance.Failed}, {ID: "round-trip", Outcome: conformance.Passed}, {ID: "outage", Outcome: conformance.Failed}}},
			want: []string{"2 failed", "filter-exactness", "outage"},
		},
		"a run error when no case failed": {
			r:    conformance.Report{Result: conformance.Failed, Error: "no store could be made: connection refused"},
			want: []string{"no case failed", "connection refused"},
		},
		"an incomplete run": {
			r:    conformance.Report{Result: conformance.Failed, Counts: conformance.Counts{Passed: 9, NotApplicable: 1}},
			want: []string{"no case failed", "only 10 cases have an outcome"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := failedRunError(&tc.r).Error()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q does not say %q", got, w)
				}
			}
			if strings.Contains(got, "(0 failed)") {
				t.Errorf("%q", got)
			}
		})
	}
}
