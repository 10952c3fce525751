package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"

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

// TestBuildHarnessRetriesAnUnavailableBackend: a backend unavailable at the start of a run is
// tried again after each pause, and the harness it finally builds is the run's; a backend
// that refuses the configuration, or stays unavailable through every pause, fails the run
// with its own error.
func TestBuildHarnessRetriesAnUnavailableBackend(t *testing.T) {
	pauses := []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	unavailable := memory.NewUnavailable("connect: timeout", nil)
	refused := memory.NewAdapterError("bad options", nil)
	for name, tc := range map[string]struct {
		errs      []error // the build's error per attempt; past the end it succeeds
		wantCalls int
		wantErr   error
	}{
		"at once":                     {wantCalls: 1},
		"after two unavailable":       {errs: []error{unavailable, unavailable}, wantCalls: 3},
		"unavailable through all":     {errs: []error{unavailable, unavailable, unavailable, unavailable}, wantCalls: 4, wantErr: memory.ErrUnavailable},
		"a refusal is not retried":    {errs: []error{refused}, wantCalls: 1, wantErr: memory.ErrAdapter},
		"unavailable, then a refusal": {errs: []error{unavailable, refused}, wantCalls: 2, wantErr: memory.ErrAdapter},
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			var log strings.Builder
			h, err := buildHarness(context.Background(), func(context.Context) (conformance.Harness, error) {
				calls++
				if calls <= len(tc.errs) {
					return nil, tc.errs[calls-1]
				}
				return newInMemoryHarness(nil), nil
			}, pauses, &log)
			if calls != tc.wantCalls {
				t.Errorf("%d builds, want %d", calls, tc.wantCalls)
			}
			if tc.wantErr == nil && (err != nil || h == nil) {
				t.Fatalf("got %v, %v; want a harness", h, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err %v, want %v", err, tc.wantErr)
			}
			if retries := strings.Count(log.String(), "building the harness again"); retries != min(tc.wantCalls-1, len(pauses)) && !errors.Is(tc.wantErr, memory.ErrAdapter) {
				t.Errorf("said %d retries:\n%s", retries, log.String())
			}
		})
	}
}
