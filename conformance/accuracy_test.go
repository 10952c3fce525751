package conformance

import (
	"testing"
)

func TestManifestAccuracyTable(t *testing.T) {
	sum, err := cachedAccuracy()
	if err != nil {
		t.Fatalf("accuracy table: %v", err)
	}
	t.Logf("manifest accuracy: caught %d of %d (knob, lie) pairs; %d of %d truthful configurations passed", sum.Caught, sum.Total, sum.TruthfulPassed, sum.Truthful)
	for _, p := range sum.Problems {
		t.Errorf("%s", p)
	}
	if !sum.OK() {
		t.Errorf("not every lie was caught")
	}
}
