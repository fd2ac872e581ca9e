package migration

import (
	"errors"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

func TestDecideSource(t *testing.T) {
	bad := errors.New("bad key")
	tests := []struct {
		name     string
		id       identification
		want     verdict
		wantCode fault.Code // for errors built inside decideSource
	}{
		{"convertible source: not decided yet", identification{key: "a.tif"}, verdict{}, ""},
		{"invalid wins over everything", identification{invalid: bad, folderMarker: true, notGeospatial: true}, verdict{final: true, err: bad}, ""},
		{"folder marker", identification{folderMarker: true}, skip(ReasonFolderMarker), ""},
		{"not geospatial", identification{notGeospatial: true}, skip(ReasonNotGeospatial), ""},
		{"sidecar without its main file", identification{orphanSidecar: true}, skip(ReasonSidecar), ""},
		{"pipeline output", identification{pipelineOutput: true, key: "staging/x.tif"}, verdict{final: true}, fault.InvalidInput},
		{"excluded by the recipe", identification{excluded: true, key: "scratch/x.tif"}, skip(ReasonExcluded), ""},
		{"output of the pipeline even if excluded", identification{excluded: true, pipelineOutput: true, key: "x.tif"}, verdict{final: true}, fault.InvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideSource(tt.id)
			if tt.wantCode != "" {
				if !got.final || fault.CodeOf(got.err) != tt.wantCode {
					t.Fatalf("got %+v, want a final %s error", got, tt.wantCode)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecideUnclaimed(t *testing.T) {
	tests := []struct {
		recordFound, destMigrated, adopt bool
	}{
		{false, true, true},   // output already there: adopt it
		{false, false, false}, // nothing yet: claim
		{true, true, false},   // a record decides through the claim
		{true, false, false},
	}
	for _, tt := range tests {
		if got := decideUnclaimed(tt.recordFound, tt.destMigrated); got != tt.adopt {
			t.Errorf("decideUnclaimed(record %v, migrated %v) = %v", tt.recordFound, tt.destMigrated, got)
		}
	}
}

func TestDecideClaim(t *testing.T) {
	tests := []struct {
		name         string
		outcome      statestore.ClaimOutcome
		destMigrated bool
		reclaimed    bool
		want         verdict
		wantErr      bool
	}{
		{"claimed", statestore.Claimed, false, false, verdict{final: true, decision: DecisionConvert}, false},
		{"claimed on reclaim", statestore.Claimed, false, true, verdict{final: true, decision: DecisionConvert}, false},
		{"in progress", statestore.InProgress, false, false, skip(ReasonInProgress), false},
		{"awaiting remediation", statestore.AwaitingRemediation, false, false, skip(ReasonAwaitingRemediation), false},
		{"completed, output there", statestore.AlreadyCompleted, true, false, skip(ReasonAlreadyMigrated), false},
		{"completed, output gone: reclaim", statestore.AlreadyCompleted, false, false, verdict{reclaim: true}, false},
		{"completed again after reclaim", statestore.AlreadyCompleted, false, true, verdict{}, true},
		{"unknown outcome", statestore.ClaimOutcome("bogus"), false, false, verdict{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideClaim(tt.outcome, tt.destMigrated, tt.reclaimed)
			if tt.wantErr {
				if !got.final || got.err == nil {
					t.Fatalf("got %+v, want a final error", got)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
