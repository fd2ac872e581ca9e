package localrun_test

import (
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
)

// TestLocalTaskTimeoutsStayBelowTheLease: locally the handler runs inside
// the task, so the task timeout is the function timeout; it must end before
// the job's lease does, or a second run could claim a job still running.
func TestLocalTaskTimeoutsStayBelowTheLease(t *testing.T) {
	sm, err := localrun.ParsedMigrate()
	if err != nil {
		t.Fatal(err)
	}
	lambdas := 0
	sm.Walk(func(_ []string, name string, st *asl.State) {
		if st.Type != "Task" || st.Resource != "arn:aws:states:::lambda:invoke" {
			return
		}
		lambdas++
		if st.TimeoutSeconds <= 0 {
			t.Errorf("%s has no TimeoutSeconds", name)
			return
		}
		if d := time.Duration(st.TimeoutSeconds) * time.Second; d >= migration.DefaultLease {
			t.Errorf("%s TimeoutSeconds %v is not below the default lease %v", name, d, migration.DefaultLease)
		}
	})
	if lambdas != 4 {
		t.Errorf("%d Lambda tasks, want 4", lambdas)
	}
}
