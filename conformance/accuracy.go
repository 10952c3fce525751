package conformance

import (
	"context"
	"errors"
)

// RunAccuracyTable runs the built-in manifest-accuracy table over the deterministic fake.
func RunAccuracyTable(ctx context.Context) (AccuracySummary, error) { return runAccuracyTable(ctx, "") }

func runAccuracyTable(ctx context.Context, disabledCheck string) (AccuracySummary, error) {
	return AccuracySummary{}, errors.New("the manifest-accuracy table is not built yet in this suite version")
}
