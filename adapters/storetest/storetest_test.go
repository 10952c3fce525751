package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestFixturesAreDistinctValidJSON guards the shared data itself: a typo in a fixture would
// otherwise surface as a confusing failure in every backend at once.
func TestFixturesAreDistinctValidJSON(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Fixtures() {
		if seen[f.Name] {
			t.Errorf("duplicate fixture name %q", f.Name)
		}
		seen[f.Name] = true
		if !json.Valid(f.Item.Content) {
			t.Errorf("%s: content %s is not JSON", f.Name, f.Item.Content)
		}
		for k, v := range f.Item.Metadata {
			if !json.Valid(v) {
				t.Errorf("%s: metadata %s=%s is not JSON", f.Name, k, v)
			}
		}
	}
	for _, name := range []string{FixtureBigInteger, FixtureReordered} {
		if !seen[name] {
			t.Errorf("fixture %q, which Exactness filters on, is missing", name)
		}
	}
}

// TestBenchQueriesMatch checks that every benchmark query matches part of the smallest data
// set, so a benchmark's "no hits" failure means a broken adapter, not broken data.
func TestBenchQueriesMatch(t *testing.T) {
	for name, q := range BenchQueries() {
		var lower string
		if q.Text != nil {
			lower = memory.Needle(*q.Text)
		}
		hits := 0
		for i := range BenchSizes[0] {
			if memory.Matches(BenchItem(i), q, lower) {
				hits++
			}
		}
		if hits == 0 || hits == BenchSizes[0] {
			t.Errorf("query %s matches %d of %d items; want some but not all", name, hits, BenchSizes[0])
		}
	}
}

// TestScaleQueriesWant checks each scale query's expected count against the reference
// semantics at the smallest and a larger allowed size, so a zero the benchmark accepts is the
// right answer and not a broken expectation.
func TestScaleQueriesWant(t *testing.T) {
	for _, n := range []int{5000, 20000} {
		for _, sq := range ScaleQueries() {
			var lower string
			if sq.Query.Text != nil {
				lower = memory.Needle(*sq.Query.Text)
			}
			hits := 0
			for i := range n {
				if memory.Matches(BenchItem(i), sq.Query, lower) {
					hits++
				}
			}
			if got := min(hits, sq.Query.Limit); got != sq.Want {
				t.Errorf("n=%d %s: the reference finds %d (of %d matches), Want is %d", n, sq.Name, got, hits, sq.Want)
			}
		}
	}
}

// TestMedian: the middle call, the mean of the two middle ones for an even count, whatever
// the order the calls came in.
func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{7}, 7},
		{[]time.Duration{9, 1, 5}, 5},
		{[]time.Duration{10, 2, 4, 1000}, 7},
		{[]time.Duration{3, 3, 3, 1, 900}, 3},
	} {
		if got := median(slices.Clone(tc.in)); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
