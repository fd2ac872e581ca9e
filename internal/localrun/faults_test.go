package localrun_test

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// retryCap is the retry rule (docs/decisions/0002) for the n-th retry: 4 s doubling, capped at
// 60 s; FULL jitter draws the wait uniformly from [0, cap].
func retryCap(n int) time.Duration {
	return time.Duration(math.Min(4*math.Pow(2, float64(n-1)), 60) * float64(time.Second))
}

// checkRetryWaits asserts every retry in a history waited within the rule
// and followed a TransientError.
func checkRetryWaits(t *testing.T, key string, history []asl.Event) int {
	t.Helper()
	retries := 0
	lastError := ""
	for _, ev := range history {
		switch ev.Type {
		case "TaskFailed":
			lastError = ev.Error
		case "RetryScheduled":
			retries++
			if lastError != "TransientError" {
				t.Errorf("%s: state %s retried after %q; only TransientError is retried", key, ev.State, lastError)
			}
			if ev.Wait < 0 || ev.Wait > retryCap(ev.Attempt) {
				t.Errorf("%s: retry %d of %s waited %v, outside [0, %v]", key, ev.Attempt, ev.State, ev.Wait, retryCap(ev.Attempt))
			}
		}
	}
	return retries
}

func goodKeys(t *testing.T) (string, []string) {
	dir, ss, _ := samples(t)
	var keys []string
	for _, s := range ss {
		if !s.Bad {
			keys = append(keys, relKey(t, dir, s.Path))
		}
	}
	return dir, keys
}

func TestTransientStoreFaultsAreRetriedAndOutputsMatchAFaultFreeRun(t *testing.T) {
	dir, keys := goodKeys(t)
	clean := newPipeline(t, dir)
	for k, o := range clean.run(t, clean.store, keys) {
		if o.Status != localrun.StatusCompleted {
			t.Fatalf("fault-free run: %s is %s (%s)", k, o.Status, o.Message)
		}
	}
	want := outputs(t, clean)

	p := newPipeline(t, dir)
	faulty := faultstore.New(p.store,
		faultstore.Rule{Op: faultstore.OpHead, Times: 2, Kind: faultstore.RequestTimeout},
		faultstore.Rule{Op: faultstore.OpPut, Times: 3, Kind: faultstore.SlowDown},
		faultstore.Rule{Op: faultstore.OpCopy, Times: 2, Kind: faultstore.InternalError},
		// The copy happened but its response was lost: the retry must see
		// its own output and not fail or duplicate.
		faultstore.Rule{Op: faultstore.OpCopy, Times: 1, Kind: faultstore.SlowDown, Applied: true},
		faultstore.Rule{Op: faultstore.OpDelete, Times: 1, Kind: faultstore.ConnReset},
	)
	got := p.run(t, faulty, keys)
	if faulty.InjectedTotal() < 8 {
		t.Fatalf("only %d faults injected", faulty.InjectedTotal())
	}
	retries := 0
	for k, o := range got {
		if o.Status != localrun.StatusCompleted {
			t.Errorf("%s: %s (%s: %s), want completed despite transient faults", k, o.Status, o.Error, o.Message)
		}
		retries += checkRetryWaits(t, k, o.History)
	}
	if retries == 0 {
		t.Fatal("no retries recorded in the execution histories")
	}
	have := outputs(t, p)
	if len(have) != len(want) {
		t.Fatalf("outputs %v, want %v", have, want)
	}
	for k, sum := range want {
		if have[k] != sum {
			t.Errorf("%s differs from the fault-free run: %s vs %s", k, have[k], sum)
			if os.Getenv("KEEP") != "" {
				_ = exec.Command("cp", filepath.Join(p.destDir, k), "/tmp/faulty-"+filepath.Base(k)).Run()
				_ = exec.Command("cp", filepath.Join(clean.destDir, k), "/tmp/clean-"+filepath.Base(k)).Run()
			}
		}
	}
	if n := len(p.deadLetter.messages(t)); n != 0 {
		t.Errorf("%d message(s) in the DLQ", n)
	}
}

func TestTransientFailuresThatOutlastTheRetriesGoToTheDLQ(t *testing.T) {
	dir, keys := goodKeys(t)
	key := keys[0]
	p := newPipeline(t, dir)
	faulty := faultstore.New(p.store, faultstore.Rule{Op: faultstore.OpPut, Kind: faultstore.SlowDown,
		Match: func(_, k string) bool { return strings.HasPrefix(k, migration.DefaultStagingPrefix) }})
	o := p.run(t, faulty, []string{key})[key]
	if o.Status != localrun.StatusDeadLetter || o.Tier != string(fault.TierTransient) {
		t.Fatalf("outcome %+v, want dlq/transient", o)
	}
	if o.Attempts != 5 {
		t.Errorf("attempts = %d, want 5 (1 + 4 retries)", o.Attempts)
	}
	if n := checkRetryWaits(t, key, o.History); n != 4 {
		t.Errorf("%d retries in the history, want 4", n)
	}
	msgs := p.deadLetter.messages(t)
	if len(msgs) != 1 || msgs[0].Attempts != 5 || msgs[0].Error != "TransientError" || msgs[0].Replay.Key != key {
		t.Fatalf("DLQ messages = %+v", msgs)
	}
	rec, err := p.tracker.Get(context.Background(), o.JobID)
	if err != nil || rec.Status != statestore.Quarantined || rec.Attempts != 5 {
		t.Fatalf("state = %s attempts %d (%v), want QUARANTINED after 5", rec.Status, rec.Attempts, err)
	}
	if keys := outputs(t, p); len(keys) != 0 {
		t.Fatalf("final keys written: %v", keys)
	}
}
