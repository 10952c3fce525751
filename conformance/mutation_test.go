package conformance

import (
	"slices"
	"testing"
)

// notMutationTested lists checks that no accuracy-table row can depend on, with the test
// that covers each instead.
var notMutationTested = map[string]string{
	// The nested runs of the table mark manifest-accuracy NotApplicable, so its one check is
	// covered by TestManifestAccuracyCaseFailsOnMissedLie.
	"manifest-accuracy/all-caught": "TestManifestAccuracyCaseFailsOnMissedLie",
}

// TestEveryCheckIsNeeded disables each named check of the suite in turn and requires that
// at least one entry of the manifest-accuracy table then misbehaves: a check that no entry
// depends on would be a check the table cannot prove.
func TestEveryCheckIsNeeded(t *testing.T) {
	ctx := t.Context()
	opts := nestedOptions("")
	// First pass: run every entry once, recording which checks made which entry's cases
	// fail, so that each mutation is tried first on the entries most likely to expose it.
	type entry struct{ ri, li int }
	candidates := map[string][]entry{}
	for ri, row := range accuracyTable {
		for li := -1; li < len(row.Lies); li++ {
			ok, problem, r := runAccuracyEntry(ctx, ri, li, opts)
			if !ok {
				t.Fatalf("table entry misbehaves without any mutation: %s", problem)
			}
			for _, c := range r.Cases {
				for _, name := range c.failedChecks {
					candidates[name] = append(candidates[name], entry{ri, li})
				}
			}
		}
	}
	checkRegistry.Lock()
	var names []string
	for n := range checkRegistry.names {
		names = append(names, n)
	}
	checkRegistry.Unlock()
	slices.Sort(names)
	if len(names) < 30 {
		t.Fatalf("only %d named checks were registered; the registry is not being populated", len(names))
	}
	for _, name := range names {
		if _, skip := notMutationTested[name]; skip {
			continue
		}
		mopts := nestedOptions(name)
		caught := ""
		for _, e := range candidates[name] {
			if ok, problem, _ := runAccuracyEntry(ctx, e.ri, e.li, mopts); !ok {
				caught = problem
				break
			}
		}
		if caught == "" {
			sum, err := runAccuracyTable(ctx, name, true)
			if err != nil {
				t.Fatalf("table with %s disabled: %v", name, err)
			}
			if len(sum.Problems) > 0 {
				caught = sum.Problems[0]
			}
		}
		if caught == "" {
			t.Errorf("disabling check %q changes no entry of the manifest-accuracy table", name)
			continue
		}
		t.Logf("disabling %-50s is caught by: %s", name, caught)
	}
	t.Logf("%d checks mutation-tested", len(names)-len(notMutationTested))
}
