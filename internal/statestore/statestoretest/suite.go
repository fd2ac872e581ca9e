package statestoretest

// Size: the one state-store conformance suite every backend runs: a short test function per contract.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/statestore"
)

// RunBackendTests is the conformance suite of statestore.Backend. newBackend
// is called once per subtest and must return an empty backend.
//
// Behaviour pinned here, beyond the interface's comments:
//   - A successful Put(job, expect) stores Version expect+1, whatever
//     job.Version says; Get returns it.
//   - Put with expect > 0 on a missing job is ErrConflict.
//   - Every Job field round-trips; times compare with time.Equal (location
//     and monotonic clock are not kept), empty History may come back nil.
//   - List's callback may write to the backend.
func RunBackendTests(t *testing.T, newBackend func(t *testing.T) statestore.Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b statestore.Backend)
	}{
		{"GetMissing", testGetMissing},
		{"CreateExpectZero", testCreateExpectZero},
		{"StaleVersion", testStaleVersion},
		{"VersionIsExpectPlusOne", testVersionIsExpectPlusOne},
		{"RejectsBadPut", testRejectsBadPut},
		{"RoundTripEveryField", testRoundTrip},
		{"ConcurrentCreateOneWins", testConcurrentCreate},
		{"ConcurrentUpdateOneWins", testConcurrentUpdate},
		{"ConcurrentIncrementsNoLostUpdate", testConcurrentIncrements},
		{"ListByStatus", testListByStatus},
		{"ListByStatusManyJobs", testListByStatusManyJobs},
		{"ListStopsOnError", testListStopsOnError},
		{"ListCallbackMayWrite", testListCallbackMayWrite},
		{"ListUpdatedSince", testListUpdatedSince},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newBackend(t))
		})
	}
}

var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

func newJob(id string, status statestore.Status) statestore.Job {
	return statestore.Job{ID: id, DatasetID: "ds", SourceBucket: "src", SourceKey: id + ".tif", Status: status,
		CreatedAt: t0, UpdatedAt: t0}
}

func mustPut(t *testing.T, b statestore.Backend, job statestore.Job, expect int64) {
	t.Helper()
	if err := b.Put(context.Background(), job, expect); err != nil {
		t.Fatalf("Put %s expect %d: %v", job.ID, expect, err)
	}
}

func mustGet(t *testing.T, b statestore.Backend, id string) statestore.Job {
	t.Helper()
	j, err := b.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return j
}

func testGetMissing(t *testing.T, b statestore.Backend) {
	if _, err := b.Get(context.Background(), "nope"); !errors.Is(err, statestore.ErrNotFound) {
		t.Fatalf("Get of a missing job = %v, want ErrNotFound", err)
	}
}

func testCreateExpectZero(t *testing.T, b statestore.Backend) {
	j := newJob("job-1", statestore.Pending)
	j.Version = 1
	mustPut(t, b, j, 0)
	if got := mustGet(t, b, "job-1"); got.Version != 1 || got.Status != statestore.Pending {
		t.Errorf("after create: %+v", got)
	}
	j.Status = statestore.Processing
	err := b.Put(context.Background(), j, 0)
	if !errors.Is(err, statestore.ErrConflict) {
		t.Fatalf("second create = %v, want ErrConflict", err)
	}
	if got := mustGet(t, b, "job-1"); got.Status != statestore.Pending {
		t.Errorf("a failed create changed the job: %+v", got)
	}
}

func testStaleVersion(t *testing.T, b statestore.Backend) {
	ctx := context.Background()
	j := newJob("job-1", statestore.Pending)
	j.Version = 1
	mustPut(t, b, j, 0)
	j.Status, j.Version = statestore.Processing, 2
	mustPut(t, b, j, 1)
	for _, tc := range []struct {
		name   string
		id     string
		expect int64
	}{
		{"stale", "job-1", 1},
		{"future", "job-1", 5},
		{"missing job with a version", "job-2", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := j
			k.ID, k.Status, k.Version = tc.id, statestore.Completed, tc.expect+1
			if err := b.Put(ctx, k, tc.expect); !errors.Is(err, statestore.ErrConflict) {
				t.Errorf("Put %s expect %d = %v, want ErrConflict", tc.id, tc.expect, err)
			}
		})
	}
	if got := mustGet(t, b, "job-1"); got.Version != 2 || got.Status != statestore.Processing {
		t.Errorf("after conflicts: %+v", got)
	}
	if _, err := b.Get(ctx, "job-2"); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("a conflicting Put created job-2: %v", err)
	}
}

func testVersionIsExpectPlusOne(t *testing.T, b statestore.Backend) {
	j := newJob("job-1", statestore.Pending)
	j.Version = 42 // ignored: the backend owns the version
	mustPut(t, b, j, 0)
	if got := mustGet(t, b, "job-1"); got.Version != 1 {
		t.Fatalf("Version after create = %d, want 1", got.Version)
	}
	j.Version = 0
	mustPut(t, b, j, 1)
	if got := mustGet(t, b, "job-1"); got.Version != 2 {
		t.Fatalf("Version after update = %d, want 2", got.Version)
	}
}

func testRejectsBadPut(t *testing.T, b statestore.Backend) {
	if err := b.Put(context.Background(), newJob("", statestore.Pending), 0); err == nil {
		t.Error("Put of a job without ID succeeded")
	}
	if err := b.Put(context.Background(), newJob("x", statestore.Pending), -1); err == nil || errors.Is(err, statestore.ErrConflict) {
		t.Errorf("Put with expect -1 = %v, want a non-conflict error", err)
	}
}

// FullJob returns a job with every field set to a distinctive value, for
// round-trip tests.
func FullJob(id string) statestore.Job {
	east := time.FixedZone("UTC+5:30", 5*3600+1800)
	return statestore.Job{
		ID:             id,
		DatasetID:      "dataset/elevation",
		SourceBucket:   "raw-bucket",
		SourceKey:      "dem/tile 01 ü.tif",
		SourceSHA256:   "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Fingerprint:    "fast",
		SourceSize:     5_368_709_120,
		RecipeHash:     "r-0a1b2c",
		DestBucket:     "cog-bucket",
		DestKey:        "dem/tile 01 ü.cog.tif",
		Status:         statestore.Retrying,
		LeaseOwner:     "exec-123/attempt-2",
		LeaseUntil:     t0.Add(15 * time.Minute).In(east),
		Holder:         "host=h;boot=b;pidns=1;pid=7;start=9;run=r",
		HeartbeatUntil: t0.Add(2 * time.Minute).In(east),
		Attempts:       3,
		Tier:           "transient",
		ErrorName:      "TransientError",
		ErrorCause:     "s3.Put: api error SlowDown (503)\nline two \"quoted\"",
		OutputSHA256:   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		OutputSize:     123_456_789,
		History: []statestore.Transition{
			{At: t0, To: statestore.Pending, Execution: "exec-1", Attempt: 0, Note: "created"},
			{At: t0.Add(time.Second), From: statestore.Pending, To: statestore.Processing, Execution: "exec-1", Attempt: 1},
			{At: t0.Add(2*time.Second + 7), From: statestore.Processing, To: statestore.Retrying, Execution: "exec-1", Attempt: 2, Note: "SlowDown"},
			{At: t0.Add(3 * time.Second), From: statestore.Retrying, To: statestore.Quarantined, Execution: "exec-1", Attempt: 4, Tier: "transient"},
		},
		CreatedAt: t0,
		UpdatedAt: t0.Add(3 * time.Second).In(east),
		ExpiresAt: t0.Add(90 * 24 * time.Hour).Unix(),
		Version:   1,
	}
}

// JobsEqual compares jobs field by field, times with time.Equal and an
// empty History equal to nil. It returns "" or a description of the first
// difference.
func JobsEqual(a, b statestore.Job) string {
	norm := func(j statestore.Job) statestore.Job {
		j.LeaseUntil, j.HeartbeatUntil, j.CreatedAt, j.UpdatedAt = j.LeaseUntil.UTC(), j.HeartbeatUntil.UTC(), j.CreatedAt.UTC(), j.UpdatedAt.UTC()
		if len(j.History) == 0 {
			j.History = nil
		}
		j.History = slices.Clone(j.History)
		for i := range j.History {
			j.History[i].At = j.History[i].At.UTC()
		}
		return j
	}
	na, nb := reflect.ValueOf(norm(a)), reflect.ValueOf(norm(b))
	for i := range na.NumField() {
		if !reflect.DeepEqual(na.Field(i).Interface(), nb.Field(i).Interface()) {
			return fmt.Sprintf("%s: %#v != %#v", na.Type().Field(i).Name, na.Field(i).Interface(), nb.Field(i).Interface())
		}
	}
	return ""
}

func testRoundTrip(t *testing.T, b statestore.Backend) {
	want := FullJob("ds#sha256:9f86d0#recipe:r-0a1b2c")
	// Every field is set, so a field added to Job fails here until FullJob
	// sets it and every backend stores it.
	v := reflect.ValueOf(want)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("FullJob leaves %s zero", v.Type().Field(i).Name)
		}
	}
	tt := reflect.TypeFor[statestore.Transition]()
	for f := range tt.NumField() {
		set := false
		for _, tr := range want.History {
			set = set || !reflect.ValueOf(tr).Field(f).IsZero()
		}
		if !set {
			t.Errorf("FullJob History never sets %s", tt.Field(f).Name)
		}
	}
	mustPut(t, b, want, 0)
	if diff := JobsEqual(mustGet(t, b, want.ID), want); diff != "" {
		t.Errorf("round trip: %s", diff)
	}
	// Zero optional fields come back zero.
	minimal := newJob("minimal", statestore.Pending)
	mustPut(t, b, minimal, 0)
	minimal.Version = 1
	if diff := JobsEqual(mustGet(t, b, "minimal"), minimal); diff != "" {
		t.Errorf("round trip of a minimal job: %s", diff)
	}
	// Updates replace the whole item (no stale history or lease survives).
	want.Version, want.LeaseOwner, want.LeaseUntil, want.Holder, want.HeartbeatUntil, want.History = 2, "", time.Time{}, "", time.Time{}, want.History[:1]
	mustPut(t, b, want, 1)
	if diff := JobsEqual(mustGet(t, b, want.ID), want); diff != "" {
		t.Errorf("round trip after an update: %s", diff)
	}
}

// race runs n functions at once and counts successes; every other outcome
// must be ErrConflict.
func race(t *testing.T, n int, fn func(i int) error) int {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		won   int
		start = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := fn(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case !errors.Is(err, statestore.ErrConflict):
				t.Errorf("writer %d: %v, want nil or ErrConflict", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	return won
}

func testConcurrentCreate(t *testing.T, b statestore.Backend) {
	won := race(t, 16, func(i int) error {
		j := newJob("contended", statestore.Processing)
		j.LeaseOwner, j.Version = fmt.Sprintf("worker-%d", i), 1
		return b.Put(context.Background(), j, 0)
	})
	if won != 1 {
		t.Fatalf("%d concurrent creates won, want 1", won)
	}
	if got := mustGet(t, b, "contended"); got.Version != 1 || got.LeaseOwner == "" {
		t.Errorf("after the race: %+v", got)
	}
}

func testConcurrentUpdate(t *testing.T, b statestore.Backend) {
	j := newJob("contended", statestore.Pending)
	mustPut(t, b, j, 0)
	cur := mustGet(t, b, "contended")
	var (
		mu     sync.Mutex
		winner string
	)
	won := race(t, 16, func(i int) error {
		next := cur
		next.Status, next.LeaseOwner, next.Version = statestore.Processing, fmt.Sprintf("worker-%d", i), cur.Version+1
		err := b.Put(context.Background(), next, cur.Version)
		if err == nil {
			mu.Lock()
			winner = next.LeaseOwner
			mu.Unlock()
		}
		return err
	})
	if won != 1 {
		t.Fatalf("%d concurrent updates of version %d won, want 1", won, cur.Version)
	}
	if got := mustGet(t, b, "contended"); got.LeaseOwner != winner || got.Version != cur.Version+1 {
		t.Errorf("stored %q v%d, winner %q", got.LeaseOwner, got.Version, winner)
	}
}

func testConcurrentIncrements(t *testing.T, b statestore.Backend) {
	const workers, each = 8, 10
	ctx := context.Background()
	mustPut(t, b, newJob("counter", statestore.Processing), 0)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					cur, err := b.Get(ctx, "counter")
					if err != nil {
						t.Error(err)
						return
					}
					cur.Attempts++
					cur.Version++
					err = b.Put(ctx, cur, cur.Version-1)
					if err == nil {
						break
					}
					if !errors.Is(err, statestore.ErrConflict) {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	got := mustGet(t, b, "counter")
	if got.Attempts != workers*each || got.Version != 1+workers*each {
		t.Errorf("after %d increments: Attempts %d Version %d (lost updates)", workers*each, got.Attempts, got.Version)
	}
}

func listIDs(t *testing.T, b statestore.Backend, status statestore.Status) []string {
	t.Helper()
	ids := []string{}
	err := b.List(context.Background(), status, func(j statestore.Job) error {
		if status != "" && j.Status != status {
			t.Errorf("List(%s) returned %s with status %s", status, j.ID, j.Status)
		}
		if j.Version == 0 {
			t.Errorf("List returned %s without its version", j.ID)
		}
		ids = append(ids, j.ID)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%s): %v", status, err)
	}
	slices.Sort(ids)
	return ids
}

// testListByStatusManyJobs: a listing of a status returns every job of it,
// also when the jobs are many more than a page of a backend or a shard of
// its index (a backend that reads per shard must read them all), and moves
// follow the job.
func testListByStatusManyJobs(t *testing.T, b statestore.Backend) {
	const n = 300
	want := map[statestore.Status][]string{}
	for i := range n {
		id := fmt.Sprintf("many/%03d/%x", i, i*7919)
		s := statestore.Processing
		if i%3 == 0 {
			s = statestore.Completed
		}
		j := newJob(id, s)
		j.UpdatedAt = t0.Add(time.Duration(n-i) * time.Millisecond)
		mustPut(t, b, j, 0)
		if i%10 == 1 { // moved on: listed under the new status only
			cur := mustGet(t, b, id)
			cur.Status = statestore.Retrying
			mustPut(t, b, cur, cur.Version)
			s = statestore.Retrying
		}
		want[s] = append(want[s], id)
	}
	for _, s := range []statestore.Status{statestore.Processing, statestore.Retrying, statestore.Completed, statestore.Pending} {
		w := want[s]
		if w == nil {
			w = []string{}
		}
		slices.Sort(w)
		if got := listIDs(t, b, s); !slices.Equal(got, w) {
			t.Errorf("List(%s): %d jobs, want %d", s, len(got), len(w))
		}
	}
}

func testListByStatus(t *testing.T, b statestore.Backend) {
	byStatus := map[statestore.Status][]string{}
	for i, s := range []statestore.Status{statestore.Pending, statestore.Processing, statestore.Processing, statestore.Completed,
		statestore.Remedial, statestore.Quarantined, statestore.Retrying, statestore.Completed, statestore.Completed} {
		id := fmt.Sprintf("job-%02d", i)
		mustPut(t, b, newJob(id, s), 0)
		byStatus[s] = append(byStatus[s], id)
	}
	// A job moved to another status is listed under the new one only.
	moved := mustGet(t, b, "job-00")
	moved.Status = statestore.Completed
	mustPut(t, b, moved, moved.Version)
	byStatus[statestore.Pending] = nil
	byStatus[statestore.Completed] = append([]string{"job-00"}, byStatus[statestore.Completed]...)

	var all []string
	for _, s := range statestore.Statuses {
		want := byStatus[s]
		if want == nil {
			want = []string{}
		}
		all = append(all, want...)
		if got := listIDs(t, b, s); !slices.Equal(got, want) {
			t.Errorf("List(%s) = %v, want %v", s, got, want)
		}
	}
	slices.Sort(all)
	if got := listIDs(t, b, ""); !slices.Equal(got, all) {
		t.Errorf("List(all) = %v, want %v", got, all)
	}
}

func testListStopsOnError(t *testing.T, b statestore.Backend) {
	for i := range 5 {
		mustPut(t, b, newJob(fmt.Sprintf("job-%d", i), statestore.Pending), 0)
	}
	stop := errors.New("stop")
	calls := 0
	err := b.List(context.Background(), "", func(statestore.Job) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 2 {
		t.Errorf("List = %v after %d calls, want the callback's error after 2", err, calls)
	}
}

func testListCallbackMayWrite(t *testing.T, b statestore.Backend) {
	ctx := context.Background()
	for i := range 300 {
		mustPut(t, b, newJob(fmt.Sprintf("job-%03d", i), statestore.Pending), 0)
	}
	done := make(chan error, 1)
	go func() {
		done <- b.List(ctx, statestore.Pending, func(j statestore.Job) error {
			j.Status = statestore.Processing
			return b.Put(ctx, j, j.Version)
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("List with writes: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("List with writes in the callback deadlocked")
	}
	if got := listIDs(t, b, statestore.Pending); len(got) != 0 {
		t.Errorf("still pending: %v", got)
	}
	if got := listIDs(t, b, statestore.Processing); len(got) != 300 {
		t.Errorf("%d processing, want 300", len(got))
	}
}

// testListUpdatedSince: a RecentLister returns exactly the records of a
// status updated at or after the time (other backends skip).
func testListUpdatedSince(t *testing.T, b statestore.Backend) {
	rl, ok := b.(statestore.RecentLister)
	if !ok {
		t.Skip("not a RecentLister")
	}
	for i, age := range []time.Duration{3 * time.Hour, time.Hour, time.Minute, 0} {
		j := newJob(fmt.Sprintf("recent-%d", i), statestore.Processing)
		j.UpdatedAt = t0.Add(-age)
		mustPut(t, b, j, 0)
	}
	other := newJob("recent-done", statestore.Completed)
	other.UpdatedAt = t0
	mustPut(t, b, other, 0)
	var got []string
	err := rl.ListUpdatedSince(context.Background(), statestore.Processing, t0.Add(-time.Hour), func(j statestore.Job) error {
		got = append(got, j.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"recent-1", "recent-2", "recent-3"}; !slices.Equal(got, want) {
		t.Fatalf("updated since an hour before t0: %v, want %v", got, want)
	}
}
