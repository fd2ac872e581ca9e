package breaker_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/breaker/breakertest"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
)

func TestMemoryConformance(t *testing.T) {
	breakertest.Run(t, func(t *testing.T) breaker.Store { return breakertest.NewMemory() })
}

type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) Advance(d time.Duration) { c.now = c.now.Add(d) }

var policy = breaker.Policy{Threshold: 3, Window: time.Minute, Cooldown: 30 * time.Second}

var (
	down     = fault.Transient("s3.Put", errors.New("SlowDown"))
	denied   = fault.Systemic("s3.Put", errors.New("AccessDenied"))
	notFound = objectstore.ErrNotFound
	badData  = fault.Data(fault.CorruptSource, "truncated")
)

// step is one call through the breaker: wait, then call with err (or find
// it refused).
type step struct {
	wait    time.Duration
	err     error // the dependency's answer, if called
	refused bool  // Allow refuses the call
	open    bool  // the caller sees a BreakerOpenError
	state   breaker.State
}

func TestTransitions(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"failures below the threshold keep it closed", []step{
			{err: down, state: breaker.Closed}, {err: denied, state: breaker.Closed}, {err: nil, state: breaker.Closed},
			{err: down, state: breaker.Closed}, {err: down, state: breaker.Closed},
		}},
		{"threshold consecutive failures open it, and the failure that opened it says so", []step{
			{err: down, state: breaker.Closed}, {err: down, state: breaker.Closed}, {err: denied, open: true, state: breaker.Open},
			{refused: true, open: true, state: breaker.Open},
		}},
		{"answers about the data are not failures", []step{
			{err: down}, {err: notFound, state: breaker.Closed}, {err: down}, {err: badData, state: breaker.Closed}, {err: down, state: breaker.Closed},
		}},
		{"failures further apart than the window do not add up", []step{
			{err: down}, {err: down}, {wait: 61 * time.Second, err: down, state: breaker.Closed}, {err: down, state: breaker.Closed},
			{err: down, open: true, state: breaker.Open},
		}},
		{"after the cooldown one probe goes; its success closes", []step{
			{err: down}, {err: down}, {err: down, open: true, state: breaker.Open},
			{wait: 29 * time.Second, refused: true, open: true},
			{wait: time.Second, err: nil, state: breaker.Closed},
			{err: down, state: breaker.Closed},
		}},
		{"a failed probe opens it for another cooldown", []step{
			{err: down}, {err: down}, {err: down, open: true},
			{wait: 30 * time.Second, err: down, open: true, state: breaker.Open},
			{wait: 29 * time.Second, refused: true, open: true},
			{wait: time.Second, err: nil, state: breaker.Closed},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := breakertest.NewMemory()
			c := &clock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
			b := breaker.New(store, policy, breaker.WithClock(c.Now))
			for i, s := range tt.steps {
				c.Advance(s.wait)
				tk, err := b.Allow(ctx, "s3:dest")
				if (err != nil) != s.refused {
					t.Fatalf("step %d: Allow = %v, want refused %v", i, err, s.refused)
				}
				if err == nil {
					err = b.Done(ctx, tk, s.err)
				}
				var boe *fault.BreakerOpenError
				if got := errors.As(err, &boe); got != s.open {
					t.Fatalf("step %d: error %v, want a BreakerOpenError: %v", i, err, s.open)
				}
				if !s.open && !errors.Is(err, s.err) && err != s.err {
					t.Fatalf("step %d: error %v, want the call's own %v", i, err, s.err)
				}
				if s.open && boe.RetryAfterSeconds < 1 {
					t.Fatalf("step %d: retry after %d s", i, boe.RetryAfterSeconds)
				}
				if s.state != "" {
					rec, err := store.GetBreaker(ctx, "s3:dest")
					if errors.Is(err, breaker.ErrNotFound) {
						rec.State = breaker.Closed
					}
					if rec.State != s.state {
						t.Fatalf("step %d: state %s, want %s", i, rec.State, s.state)
					}
				}
			}
		})
	}
}

func TestRetryAfterIsTheRestOfTheCooldown(t *testing.T) {
	ctx := context.Background()
	c := &clock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	b := breaker.New(breakertest.NewMemory(), policy, breaker.WithClock(c.Now))
	for range 3 {
		tk, _ := b.Allow(ctx, "s3:dest")
		_ = b.Done(ctx, tk, down)
	}
	c.Advance(10*time.Second + time.Millisecond)
	_, err := b.Allow(ctx, "s3:dest")
	var boe *fault.BreakerOpenError
	if !errors.As(err, &boe) || boe.RetryAfterSeconds != 20 || boe.Dependency != "s3:dest" || boe.State != "OPEN" {
		t.Fatalf("Allow = %v, want open for 20 more seconds", err)
	}
}

func TestTransitionsAreLoggedAndObserved(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	var seen []string
	c := &clock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	b := breaker.New(breakertest.NewMemory(), policy, breaker.WithClock(c.Now),
		breaker.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))),
		breaker.WithObserver(func(tr breaker.Transition) { seen = append(seen, string(tr.From)+">"+string(tr.To)) }))
	call := func(err error) {
		tk, aerr := b.Allow(ctx, "s3:dest")
		if aerr == nil {
			_ = b.Done(ctx, tk, err)
		}
	}
	call(down)
	call(down)
	call(down)
	c.Advance(time.Minute)
	call(nil)
	if got := strings.Join(seen, " "); got != "CLOSED>OPEN OPEN>HALF_OPEN HALF_OPEN>CLOSED" {
		t.Fatalf("transitions %q", got)
	}
	if !strings.Contains(buf.String(), `"dependency":"s3:dest"`) || !strings.Contains(buf.String(), `"to":"OPEN"`) {
		t.Fatalf("log lacks the transition: %s", buf.String())
	}
}

func TestDisabledBreakerIsTransparent(t *testing.T) {
	inner := memstore.New()
	if got := breaker.Objects(inner, breaker.New(breakertest.NewMemory(), breaker.Policy{})); got != objectstore.Store(inner) {
		t.Fatal("a breaker with Threshold 0 wrapped the store")
	}
}

// TestObjectsFailFastAgainstADeadBucket: once the destination's breaker
// is open, calls to it do not reach the store, and calls to another
// bucket still do.
func TestObjectsFailFastAgainstADeadBucket(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New("src", "dest")
	if _, err := inner.Put(ctx, objectstore.PutRequest{Bucket: "src", Key: "a", Body: strings.NewReader("x"), Size: 1}); err != nil {
		t.Fatal(err)
	}
	fs := faultstore.New(inner, faultstore.Rule{Match: func(bucket, _ string) bool { return bucket == "dest" }})
	c := &clock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	s := breaker.Objects(fs, breaker.New(breakertest.NewMemory(), policy, breaker.WithClock(c.Now)))
	for range 10 {
		_, err := s.Put(ctx, objectstore.PutRequest{Bucket: "dest", Key: "k", Body: strings.NewReader("y"), Size: 1})
		if err == nil {
			t.Fatal("put to a dead bucket succeeded")
		}
	}
	if n := fs.Calls(faultstore.OpPut); n != policy.Threshold {
		t.Fatalf("%d calls reached the dead bucket, want %d", n, policy.Threshold)
	}
	rc, err := s.Open(ctx, "src", "a")
	if err != nil {
		t.Fatalf("another bucket is refused: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "x" {
		t.Fatalf("read %q", b)
	}
	fs.ClearRules()
	c.Advance(policy.Cooldown)
	if _, err := s.Head(ctx, "dest", "k"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("probe after recovery = %v, want not found (an answer)", err)
	}
	if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "dest", Key: "k", Body: strings.NewReader("y"), Size: 1}); err != nil {
		t.Fatalf("put after the probe closed the breaker: %v", err)
	}
}

// brokenStore fails every read and write.
type brokenStore struct{}

func (brokenStore) GetBreaker(context.Context, string) (breaker.Record, error) {
	return breaker.Record{}, fault.Systemic("dynamodb.GetItem", errors.New("ResourceNotFoundException"))
}
func (brokenStore) PutBreaker(context.Context, breaker.Record, int64) error {
	return fault.Systemic("dynamodb.PutItem", errors.New("ResourceNotFoundException"))
}
func (brokenStore) ListBreakers(context.Context, func(breaker.Record) error) error { return nil }

// TestUnreadableStateFailsOpen: the breaker's own store failing never
// fails or changes a call: the call is made and its own error returned.
func TestUnreadableStateFailsOpen(t *testing.T) {
	ctx := context.Background()
	b := breaker.New(brokenStore{}, policy)
	for range 10 {
		tk, err := b.Allow(ctx, "s3:dest")
		if err != nil {
			t.Fatalf("Allow = %v, want the call let through", err)
		}
		if got := b.Done(ctx, tk, down); got != down {
			t.Fatalf("Done = %v, want the call's own error", got)
		}
	}
}

// countingStore counts reads.
type countingStore struct {
	breaker.Store
	gets int
}

func (c *countingStore) GetBreaker(ctx context.Context, dep string) (breaker.Record, error) {
	c.gets++
	return c.Store.GetBreaker(ctx, dep)
}

// TestHealthyStateIsCached: a worker reads a healthy record once per
// DefaultClosedCache, not once per call; another worker's opening reaches
// it when that time is up, and its own failure is never hidden.
func TestHealthyStateIsCached(t *testing.T) {
	ctx := context.Background()
	shared := &countingStore{Store: breakertest.NewMemory()}
	c := &clock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	a := breaker.New(shared, policy, breaker.WithClock(c.Now))
	b := breaker.New(shared, policy, breaker.WithClock(c.Now), breaker.WithClosedCache(0))
	for range 100 {
		tk, err := a.Allow(ctx, "s3:src")
		if err != nil {
			t.Fatal(err)
		}
		_ = a.Done(ctx, tk, nil)
	}
	if shared.gets != 1 {
		t.Fatalf("%d reads for 100 healthy calls, want 1", shared.gets)
	}
	for range policy.Threshold { // worker b finds the bucket dead
		tk, _ := b.Allow(ctx, "s3:src")
		_ = b.Done(ctx, tk, down)
	}
	if _, err := a.Allow(ctx, "s3:src"); err != nil {
		t.Fatalf("worker a refused within its cache time: %v", err)
	}
	c.Advance(breaker.DefaultClosedCache)
	var boe *fault.BreakerOpenError
	if _, err := a.Allow(ctx, "s3:src"); !errors.As(err, &boe) {
		t.Fatalf("worker a after its cache time: %v, want BreakerOpenError", err)
	}
}

type recordedCount struct {
	name string
	dims string
}

type counter struct{ got []recordedCount }

func (c *counter) Count(name string, _ float64, _ string, dims ...string) {
	c.got = append(c.got, recordedCount{name, strings.Join(dims, "=")})
}

func TestTransitionsAreCounted(t *testing.T) {
	c := &counter{}
	breaker.CountTransitions(c)(breaker.Transition{Dependency: "s3:dest", From: breaker.Closed, To: breaker.Open})
	want := []recordedCount{{"BreakerTransitions", "Dependency=s3:dest=To=OPEN"}, {"BreakerTransitions", "To=OPEN"}}
	if len(c.got) != 2 || c.got[0] != want[0] || c.got[1] != want[1] {
		t.Fatalf("counted %+v, want %+v", c.got, want)
	}
}

// fileStore is a store that keeps local files and renames them
// (LocalPather and FileMover), recording the renames it was asked for.
type fileStore struct {
	*memstore.Store
	puts, moves int
}

func (s *fileStore) LocalPath(bucket, key string) (string, error) {
	return "/" + bucket + "/" + key, nil
}
func (s *fileStore) PutFile(context.Context, objectstore.PutFileRequest) (objectstore.Object, error) {
	s.puts++
	return objectstore.Object{}, nil
}
func (s *fileStore) Move(context.Context, objectstore.CopyRequest) (objectstore.Object, error) {
	s.moves++
	return objectstore.Object{}, nil
}

// TestObjectsKeepTheRenames: behind the breaker, a store that renames
// files still offers it (Convert and Promote would otherwise copy every
// output), and the renames go through the breaker like every other write.
func TestObjectsKeepTheRenames(t *testing.T) {
	ctx := context.Background()
	inner := &fileStore{Store: memstore.New("dest")}
	c := &clock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	b := breaker.New(breakertest.NewMemory(), policy, breaker.WithClock(c.Now))
	s := breaker.Objects(inner, b)
	fm, ok := s.(objectstore.FileMover)
	if _, local := s.(objectstore.LocalPather); !ok || !local {
		t.Fatalf("wrapped store: FileMover %v, LocalPather %v; want both", ok, local)
	}
	if _, err := fm.PutFile(ctx, objectstore.PutFileRequest{Bucket: "dest", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if _, err := fm.Move(ctx, objectstore.CopyRequest{SrcBucket: "dest", SrcKey: "k", DstBucket: "dest", DstKey: "m"}); err != nil {
		t.Fatal(err)
	}
	if inner.puts != 1 || inner.moves != 1 {
		t.Errorf("inner store got %d PutFile, %d Move; want 1 each", inner.puts, inner.moves)
	}
	if _, ok := breaker.Objects(memstore.New("dest"), b).(objectstore.FileMover); ok {
		t.Error("a store without renames gained them behind the breaker")
	}
}

// TestAnswersFromBeforeAnOpeningLeaveItStanding: two workers share a
// breaker; worker "a" was allowed a call before worker "b"'s failures
// opened it, and answers after. Its answer must neither close the opening
// (the jobs waiting would start again and spend their retries against a
// dependency known to be down) nor end the probe in flight, and its
// failure is the open breaker (the job waits) rather than a retry spent.
func TestAnswersFromBeforeAnOpeningLeaveItStanding(t *testing.T) {
	type op struct {
		worker  string
		allow   bool          // Allow (else Done with err for the worker's ticket)
		wait    time.Duration // before the op
		err     error         // Done: the call's answer
		refused bool          // Allow: refused
		open    bool          // Done: the caller sees a BreakerOpenError
		state   breaker.State // after the op
		// failures: the record's count after the op (checked with state)
		failures int
	}
	opensByB := []op{
		{worker: "b", allow: true}, {worker: "b", err: down},
		{worker: "a", allow: true}, // CLOSED with one failure: a's call goes
		{worker: "b", allow: true}, {worker: "b", err: down},
		{worker: "b", allow: true}, {worker: "b", err: down, open: true, state: breaker.Open},
	}
	tests := []struct {
		name string
		ops  []op
	}{
		{"a late success does not close it", append(opensByB,
			op{worker: "a", err: nil, state: breaker.Open},
			op{worker: "b", allow: true, refused: true},
		)},
		{"a late answer about the data does not close it", append(opensByB,
			op{worker: "a", err: notFound, state: breaker.Open},
			op{worker: "b", allow: true, refused: true},
		)},
		{"a late failure is the open breaker, not a retry", append(opensByB,
			op{worker: "a", err: down, open: true, state: breaker.Open},
		)},
		{"a late failure does not end the probe in flight; the probe decides", append(opensByB,
			op{worker: "b", wait: 30 * time.Second, allow: true, state: breaker.HalfOpen},
			op{worker: "a", err: down, open: true, state: breaker.HalfOpen},
			op{worker: "b", err: nil, state: breaker.Closed},
		)},
		{"a late success does not end the probe in flight either", append(opensByB,
			op{worker: "b", wait: 30 * time.Second, allow: true, state: breaker.HalfOpen},
			op{worker: "a", err: nil, state: breaker.HalfOpen},
			op{worker: "b", err: down, open: true, state: breaker.Open},
		)},
		{"a late failure after the breaker closed again is not counted: the job waits a second", append(opensByB,
			op{worker: "b", wait: 30 * time.Second, allow: true}, op{worker: "b", err: nil, state: breaker.Closed},
			op{worker: "a", err: down, open: true, state: breaker.Closed, failures: 0},
		)},
		{"a late success after the breaker closed again changes nothing", append(opensByB,
			op{worker: "b", wait: 30 * time.Second, allow: true}, op{worker: "b", err: nil, state: breaker.Closed},
			op{worker: "a", err: nil, state: breaker.Closed, failures: 0},
		)},
		{"a call allowed after the closing counts as usual", append(opensByB,
			op{worker: "b", wait: 30 * time.Second, allow: true}, op{worker: "b", err: nil, state: breaker.Closed},
			op{worker: "a", allow: true}, op{worker: "a", err: down, state: breaker.Closed, failures: 1},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := breakertest.NewMemory()
			c := &clock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
			// One Breaker per worker, as on AWS (one per Lambda instance);
			// no cache, so every Allow reads the shared record.
			workers := map[string]*breaker.Breaker{}
			tickets := map[string]breaker.Ticket{}
			for i, o := range tt.ops {
				c.Advance(o.wait)
				b := workers[o.worker]
				if b == nil {
					b = breaker.New(store, policy, breaker.WithClock(c.Now), breaker.WithClosedCache(0))
					workers[o.worker] = b
				}
				if o.allow {
					tk, err := b.Allow(ctx, "s3:dest")
					if (err != nil) != o.refused {
						t.Fatalf("op %d (%s): Allow = %v, want refused %v", i, o.worker, err, o.refused)
					}
					tickets[o.worker] = tk
				} else {
					err := b.Done(ctx, tickets[o.worker], o.err)
					var boe *fault.BreakerOpenError
					if got := errors.As(err, &boe); got != o.open {
						t.Fatalf("op %d (%s): Done = %v, want a BreakerOpenError: %v", i, o.worker, err, o.open)
					}
				}
				if o.state != "" {
					rec, err := store.GetBreaker(ctx, "s3:dest")
					if err != nil {
						t.Fatal(err)
					}
					if rec.State != o.state {
						t.Fatalf("op %d (%s): state %s, want %s", i, o.worker, rec.State, o.state)
					}
					if o.state == breaker.Closed && rec.Failures != o.failures {
						t.Fatalf("op %d (%s): %d failures counted, want %d", i, o.worker, rec.Failures, o.failures)
					}
				}
			}
		})
	}
}

// racingStore runs during before the first read of the record returns
// the record as it was before: other workers' failures recorded while
// this worker's read was on its way back.
type racingStore struct {
	breaker.Store
	during func()
}

func (r *racingStore) GetBreaker(ctx context.Context, dep string) (breaker.Record, error) {
	rec, err := r.Store.GetBreaker(ctx, dep)
	if f := r.during; f != nil {
		r.during = nil
		f()
	}
	return rec, err
}

// TestAHealthyReadOlderThanAFailureIsNotCached: the workers of a process
// share one Breaker and its cache. Worker a reads a healthy record while
// worker b's failures are recorded and open the breaker; a must not cache
// that read, or its calls skip the open breaker for the cache time (calls
// against a dead bucket, the ones the breaker exists to save).
func TestAHealthyReadOlderThanAFailureIsNotCached(t *testing.T) {
	ctx := context.Background()
	store := &racingStore{Store: breakertest.NewMemory()}
	c := &clock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	shared := breaker.New(store, policy, breaker.WithClock(c.Now))
	fail := func() {
		tk, err := shared.Allow(ctx, "s3:dest")
		if err == nil {
			_ = shared.Done(ctx, tk, down)
		}
	}
	store.during = func() { // b's failures open the breaker during a's read
		for range policy.Threshold {
			fail()
		}
	}
	if _, err := shared.Allow(ctx, "s3:dest"); err != nil {
		t.Fatal(err)
	}
	rec, err := store.GetBreaker(ctx, "s3:dest")
	if err != nil || rec.State != breaker.Open {
		t.Fatalf("record %+v (%v), want OPEN", rec, err)
	}
	var boe *fault.BreakerOpenError
	if _, err := shared.Allow(ctx, "s3:dest"); !errors.As(err, &boe) {
		t.Fatalf("worker a after the opening: %v, want BreakerOpenError (no cached healthy read from before b's failure)", err)
	}
}

// TestObjectsTrackReadsAndWritesApart: a bucket that fails one kind of
// call and answers the other. The answers of the working kind neither
// reset the failing kind's count nor close its breaker, and the probe
// after the cooldown is a call of the failing kind; a systemic write
// failure (AccessDenied) is reported as the breaker every time, so the
// job waits instead of being dead-lettered.
func TestObjectsTrackReadsAndWritesApart(t *testing.T) {
	ctx := context.Background()
	isDest := func(bucket, _ string) bool { return bucket == "dest" }
	put := func(s objectstore.Store) error {
		_, err := s.Put(ctx, objectstore.PutRequest{Bucket: "dest", Key: "k", Body: strings.NewReader("y"), Size: 1})
		return err
	}
	head := func(s objectstore.Store) error {
		if _, err := s.Head(ctx, "dest", "k"); err != nil && !errors.Is(err, objectstore.ErrNotFound) {
			return err
		}
		return nil
	}
	tests := []struct {
		name         string
		failOps      []string
		kind         faultstore.Kind
		fail, answer func(objectstore.Store) error // the failing kind, the working kind
		failOp       string                        // counted at the store
		dependency   string                        // whose record opens
		held         bool                          // every failure is a BreakerOpenError
	}{
		{"write-only SlowDown", []string{faultstore.OpPut}, faultstore.SlowDown, put, head, faultstore.OpPut, breaker.BucketWriteDependency("dest"), false},
		{"write-only AccessDenied", []string{faultstore.OpPut}, faultstore.AccessDenied, put, head, faultstore.OpPut, breaker.BucketWriteDependency("dest"), true},
		{"read-only SlowDown", []string{faultstore.OpHead}, faultstore.SlowDown, head, put, faultstore.OpHead, breaker.BucketDependency("dest"), false},
		{"read-only AccessDenied", []string{faultstore.OpHead}, faultstore.AccessDenied, head, put, faultstore.OpHead, breaker.BucketDependency("dest"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inner := memstore.New("dest")
			rule := func() faultstore.Rule {
				return faultstore.Rule{Kind: tc.kind, Match: isDest, When: func(int) bool { return true }}
			}
			fs := faultstore.New(inner)
			for _, op := range tc.failOps {
				r := rule()
				r.Op = op
				fs.AddRule(r)
			}
			store := breakertest.NewMemory()
			c := &clock{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
			s := breaker.Objects(fs, breaker.New(store, policy, breaker.WithClock(c.Now), breaker.WithClosedCache(0)))
			for i := range 2 * policy.Threshold {
				if err := tc.answer(s); err != nil {
					t.Fatalf("call %d of the working kind: %v", i, err)
				}
				err := tc.fail(s)
				var open *fault.BreakerOpenError
				if err == nil {
					t.Fatalf("call %d of the failing kind succeeded", i)
				}
				if tc.held && !errors.As(err, &open) {
					t.Fatalf("call %d: %v, want a BreakerOpenError (the job waits, not dead-lettered)", i, err)
				}
				if !tc.held && i < policy.Threshold-1 && errors.As(err, &open) {
					t.Fatalf("call %d: %v before the threshold, want the failure itself", i, err)
				}
			}
			if n := fs.Calls(tc.failOp); n != policy.Threshold {
				t.Fatalf("%d failing calls reached the bucket, want %d: the working kind reset the count", n, policy.Threshold)
			}
			rec, err := store.GetBreaker(ctx, tc.dependency)
			if err != nil || rec.State != breaker.Open {
				t.Fatalf("%s = %+v (%v), want OPEN", tc.dependency, rec, err)
			}
			// After the cooldown a call of the working kind is no probe: the
			// breaker stays open, and the next failing-kind call probes it.
			c.Advance(policy.Cooldown)
			if err := tc.answer(s); err != nil {
				t.Fatal(err)
			}
			if rec, _ := store.GetBreaker(ctx, tc.dependency); rec.State != breaker.Open {
				t.Fatalf("after a call of the working kind %s is %s, want still OPEN", tc.dependency, rec.State)
			}
			var open *fault.BreakerOpenError
			if err := tc.fail(s); !errors.As(err, &open) || open.State != string(breaker.Open) {
				t.Fatalf("failed probe = %v, want the breaker reopened", err)
			}
			if n := fs.Calls(tc.failOp); n != policy.Threshold+1 {
				t.Fatalf("%d failing calls, want %d (one probe)", n, policy.Threshold+1)
			}
			fs.ClearRules()
			c.Advance(policy.Cooldown)
			if err := tc.fail(s); err != nil {
				t.Fatalf("probe after the recovery: %v", err)
			}
			if rec, _ := store.GetBreaker(ctx, tc.dependency); rec.State != breaker.Closed || rec.Failures != 0 {
				t.Fatalf("after the probe %s = %+v, want CLOSED", tc.dependency, rec)
			}
		})
	}
}
