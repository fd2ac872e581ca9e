package localrun_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
)

// writeOutage fails every write (Put, Copy, Delete) to bucket dest of
// store with kind until recoverAt on p's fake clock; reads answer
// throughout, as under a bucket policy or KMS key change or PUT
// throttling.
func writeOutage(p *pipeline, store objectstore.Store, dest string, kind faultstore.Kind, recoverAt time.Time) *faultstore.Store {
	fs := faultstore.New(store)
	for _, op := range []string{faultstore.OpPut, faultstore.OpCopy, faultstore.OpDelete} {
		fs.AddRule(faultstore.Rule{Op: op, Kind: kind,
			Match: func(bucket, _ string) bool { return bucket == dest },
			When:  func(int) bool { return p.clock.Now().Before(recoverAt) }})
	}
	return fs
}

// writeOutages are the write-only outages the breaker must hold files
// through: throttled writes (transient) and denied writes (systemic).
var writeOutages = []struct {
	name string
	kind faultstore.Kind
}{
	{"write-only 503 SlowDown", faultstore.SlowDown},
	{"write-only 403 AccessDenied", faultstore.AccessDenied},
}

// checkHeldThroughWriteOutage runs keys through p over store (whose
// destination bucket is p.cfg.DestBucket) with every write to the
// destination failing with kind for 30 minutes while its reads answer,
// and checks the breaker held every file: all complete after the
// recovery, none dead-lettered or routed, the write breaker opened and
// closed again, the read breaker never opened.
func checkHeldThroughWriteOutage(t *testing.T, p *pipeline, store objectstore.Store, keys []string, kind faultstore.Kind) {
	t.Helper()
	dest := p.cfg.DestBucket
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "state.db"), boltstore.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	policy := breaker.Policy{Threshold: 5, Window: 2 * time.Minute, Cooldown: 5 * time.Minute}
	br := breaker.New(db, policy, breaker.WithClock(p.clock.Now))
	faulty := writeOutage(p, store, dest, kind, p.clock.Now().Add(30*time.Minute))
	waits := 0
	got := p.run(t, breaker.Objects(faulty, br), keys, asl.WithHistory(func(ev asl.Event) {
		if ev.Type == asl.EventWaitStarted && ev.State == "WaitForBreaker" {
			waits++ // the history callback runs under the executor's lock
		}
	}))
	for k, o := range got {
		if o.Status != localrun.StatusCompleted {
			t.Errorf("%s is %s (%s: %s), want completed after the recovery", k, o.Status, o.Error, o.Message)
		}
	}
	if n := len(p.deadLetter.messages(t)); n != 0 {
		t.Errorf("%d file(s) dead-lettered, want none", n)
	}
	if n := len(p.remediation.messages(t)); n != 0 {
		t.Errorf("%d file(s) routed to remediation, want none", n)
	}
	ctx := context.Background()
	if err := p.tracker.List(ctx, "", func(j statestore.Job) error {
		if j.Status != statestore.Completed {
			t.Errorf("%s: record %s, want COMPLETED", j.SourceKey, j.Status)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w, err := db.GetBreaker(ctx, breaker.BucketWriteDependency(dest))
	if err != nil || w.State != breaker.Closed || w.Opened == 0 {
		t.Errorf("write breaker after the run = %+v (%v), want CLOSED after opening", w, err)
	}
	if r, err := db.GetBreaker(ctx, breaker.BucketDependency(dest)); err == nil && r.Opened != 0 {
		t.Errorf("read breaker = %+v, want never opened: reads answered", r)
	}
	if waits == 0 {
		t.Error("no execution waited in WaitForBreaker")
	}
	// Without the breaker every file spends its attempts and is
	// dead-lettered; with it, the calls that reach the failing writes are
	// the Threshold that open it, the probes, and the attempts of the
	// executions that were already past their breaker check.
	t.Logf("%s: %d writes failed for %d files, %d waits, write breaker opened %d times",
		kind, faulty.InjectedTotal(), len(keys), waits, w.Opened)
}

// TestBreakerHoldsFilesThroughWriteOnlyOutages: HashCheck's reads of the
// destination succeed while Convert's and Promote's writes fail; the
// write breaker is not reset by the reads, its probes are writes, and a
// denied bucket holds files instead of dead-lettering them.
func TestBreakerHoldsFilesThroughWriteOnlyOutages(t *testing.T) {
	dir, keys := goodKeys(t)
	for _, o := range writeOutages {
		t.Run(o.name, func(t *testing.T) {
			p := newPipeline(t, dir)
			checkHeldThroughWriteOutage(t, p, p.store, keys, o.kind)
		})
	}
}
