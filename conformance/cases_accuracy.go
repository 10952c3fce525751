package conformance

// This file holds the case that turns the suite on itself: the fake table must catch every
// manifest lie.

import (
	"strings"
)

var caseManifestAccuracy = Case{
	ID:          CaseManifestAccuracy,
	Title:       "Manifest accuracy",
	Description: "toggling every fake behavior makes the suite fail whenever the manifest claims the opposite",
	Hint:        "the conformance build in use cannot detect a manifest lie; upgrade or repair the suite before trusting any verdict",
	// The table runs over the suite's own fake; it touches no target scope.
	readOnly: true,
	run: func(c *caseRun) {
		sum, err := c.opts.Accuracy(c.ctx)
		if err != nil {
			c.fatalf("manifest-accuracy table could not run: %v", err)
		}
		if c.check("manifest-accuracy/all-caught") && !sum.OK() {
			c.failf("the suite caught %d of %d (knob, lie) pairs and passed %d of %d truthful configurations: %s",
				sum.Caught, sum.Total, sum.TruthfulPassed, sum.Truthful, strings.Join(sum.Problems, "; "))
		}
		c.notef("the built-in fake table caught %d of %d (knob, lie) pairs; %d of %d truthful configurations passed",
			sum.Caught, sum.Total, sum.TruthfulPassed, sum.Truthful)
	},
}
