package cost

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/statemachine"
)

func TestWalksFollowTheASL(t *testing.T) {
	t.Parallel()
	walks, err := Walks(context.Background(), statemachine.Migrate)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    Path
		states  string
		lambdas string
		sqs     int
	}{
		{Converted, "Normalize FromManual HashCheck ShouldConvert ChooseEngine Convert Promote SummarizeCompleted Completed", "HashCheck Convert Promote", 0},
		{Skipped, "Normalize FromManual HashCheck ShouldConvert SummarizeSkipped Skipped", "HashCheck", 0},
		{Remediation, "Normalize FromManual HashCheck ShouldConvert ChooseEngine Convert Classify Route SendToRemediation RoutedToRemediation", "HashCheck Convert Classify", 1},
		{Rejected, "Normalize FromManual HashCheck Classify Route SendToRemediation RoutedToRemediation", "HashCheck Classify", 1},
	}
	for _, tt := range tests {
		w := walks[tt.path]
		if got := strings.Join(w.States, " "); got != tt.states {
			t.Errorf("%s: states %q, want %q", tt.path, got, tt.states)
		}
		if w.Transitions != len(strings.Fields(tt.states)) {
			t.Errorf("%s: %d transitions for %d states", tt.path, w.Transitions, len(w.States))
		}
		if got := strings.Join(w.Lambdas, " "); got != tt.lambdas || w.SQSSends != tt.sqs {
			t.Errorf("%s: lambdas %q sqs %d, want %q %d", tt.path, got, w.SQSSends, tt.lambdas, tt.sqs)
		}
	}
}

// A state added to the definition is charged: the walk is read from the
// file, not from a constant. FromManual is split in two Pass states (the
// second keeps its Parameters and Next).
func TestWalksCountAnAddedState(t *testing.T) {
	t.Parallel()
	def := strings.Replace(string(statemachine.Migrate),
		`"FromManual": {
      "Type": "Pass",`, `"FromManual": {
      "Type": "Pass",
      "Next": "Extra"
    },
    "Extra": {
      "Type": "Pass",`, 1)
	if def == string(statemachine.Migrate) {
		t.Fatal("the test's edit of the definition did not apply")
	}
	walks, err := Walks(context.Background(), []byte(def))
	if err != nil {
		t.Fatal(err)
	}
	if got := walks[Converted].Transitions; got != 10 {
		t.Errorf("converted walk with an extra state: %d transitions, want 10", got)
	}
}

func TestWalkBackfill(t *testing.T) {
	t.Parallel()
	w, err := WalkBackfill(context.Background(), statemachine.Backfill)
	if err != nil {
		t.Fatal(err)
	}
	// ReadPolicy, CheckPolicyDocument, ParsePolicy, CheckMaxConcurrency,
	// CheckPolicyMaxConcurrency, CheckPolicyMaxConcurrencyBounds,
	// PolicyMaxConcurrency, CheckToleratedFailure,
	// CheckPolicyToleratedFailure, CheckPolicyToleratedFailureBounds,
	// PolicyToleratedFailure, CheckDatasetId, DefaultDatasetId,
	// ChooseItemSource, BackfillFromPrefix, BackfillDone; per item
	// IsFolderMarker, MigrateObject.
	if w.PerRun != 16 || w.PerItem != 2 {
		t.Errorf("backfill walk %+v, want 16 per run and 2 per item", w)
	}
	m := Model{Prices: DefaultPrices(), Backfill: w}
	// 16 + 2 × 2,500 = 5,016 transitions × $0.025/1,000 = $0.1254; 3
	// ListObjectsV2 pages × $0.005/1,000 = $0.000015.
	if x := BackfillCost(m, 2500); x.Transitions != 5016 || x.ListRequests != 3 || math.Abs(x.Cost-0.125415) > 1e-12 {
		t.Errorf("BackfillCost = %+v", x)
	}
}
