package dynamostore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/cost"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// TestShardSpread: job IDs shaped as the tracker's (dataset, content hash,
// recipe hash) fall evenly on the shards. With n IDs each shard's count is
// binomial(n, 1/N); the bound is its mean plus 5 standard deviations
// (about 1.08/N at a million IDs), which a fair hash passes for every one of
// the N shards and a hash that favours some shards does not.
func TestShardSpread(t *testing.T) {
	const n = 1 << 20
	counts := make([]int, StatusShards)
	for i := range n {
		id := fmt.Sprintf("dataset-%d/%064x/%016x", i%7, i*2654435761, i%3)
		k := Shard(id, StatusShards)
		if k < 0 || k >= StatusShards {
			t.Fatalf("Shard(%q) = %d, outside [0, %d)", id, k, StatusShards)
		}
		if again := Shard(id, StatusShards); again != k {
			t.Fatalf("Shard(%q) = %d then %d", id, k, again)
		}
		counts[k]++
	}
	mean := float64(n) / StatusShards
	sd := math.Sqrt(mean * (1 - 1.0/StatusShards))
	for k, c := range counts {
		if math.Abs(float64(c)-mean) > 5*sd {
			t.Errorf("shard %d holds %d IDs; want %.0f ± %.0f", k, c, mean, 5*sd)
		}
	}
}

func TestShardKey(t *testing.T) {
	for _, tc := range []struct {
		status statestore.Status
		id     string
	}{
		{statestore.Processing, "a"},
		{statestore.Completed, "a"},
		{statestore.Retrying, "ds/0123/abcd"},
	} {
		want := fmt.Sprintf("%s#%02d", tc.status, Shard(tc.id, StatusShards))
		if got := ShardKey(tc.status, tc.id); got != want {
			t.Errorf("ShardKey(%s, %s) = %s, want %s", tc.status, tc.id, got, want)
		}
	}
	// A job keeps its shard number across statuses.
	if a, b := ShardKey(statestore.Processing, "x")[len("PROCESSING#"):], ShardKey(statestore.Completed, "x")[len("COMPLETED#"):]; a != b {
		t.Errorf("shard of x: %s while PROCESSING, %s when COMPLETED", a, b)
	}
}

// TestMergedQueryOrder: List by status queries every shard (pages of two
// items in the fake) and returns the jobs oldest first across shards, each
// once; ListUpdatedSince keeps the same order from its bound.
func TestMergedQueryOrder(t *testing.T) {
	f := newFake(t)
	b := New(f, Options{Table: "jobs"})
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var want []string
	shards := map[int]bool{}
	for i := range 300 {
		id := fmt.Sprintf("job-%03d", i)
		// Times out of ID order, so the merge, not the key order, decides.
		at := t0.Add(time.Duration((i*37)%300) * time.Second)
		j := statestore.Job{ID: id, Status: statestore.Processing, UpdatedAt: at, CreatedAt: at}
		if i%5 == 0 {
			j.Status = statestore.Completed
		} else {
			want = append(want, id)
			shards[Shard(id, StatusShards)] = true
		}
		if err := b.Put(ctx, j, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(shards) < StatusShards/2 {
		t.Fatalf("the jobs fall on %d shards only", len(shards))
	}
	at := func(id string) time.Time {
		j, err := b.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j.UpdatedAt
	}
	slices.SortFunc(want, func(x, y string) int { return at(x).Compare(at(y)) })
	f.queries = 0
	var got []string
	if err := b.List(ctx, statestore.Processing, func(j statestore.Job) error { got = append(got, j.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("List(PROCESSING) = %d jobs %v…, want %d oldest first %v…", len(got), got[:min(5, len(got))], len(want), want[:5])
	}
	if f.queries < StatusShards {
		t.Errorf("%d queries for %d shards", f.queries, StatusShards)
	}
	since := t0.Add(150 * time.Second)
	var recent []string
	if err := b.ListUpdatedSince(ctx, statestore.Processing, since, func(j statestore.Job) error { recent = append(recent, j.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	var wantRecent []string
	for _, id := range want {
		if !at(id).Before(since) {
			wantRecent = append(wantRecent, id)
		}
	}
	if !slices.Equal(recent, wantRecent) {
		t.Errorf("ListUpdatedSince = %d jobs, want %d in order", len(recent), len(wantRecent))
	}
}

// TestShardsMatchScaleDoc: docs/scale.md's arithmetic uses the shard count
// the store writes.
func TestShardsMatchScaleDoc(t *testing.T) {
	if cost.StateIndexShards != StatusShards {
		t.Errorf("cost.StateIndexShards = %d, dynamostore.StatusShards = %d", cost.StateIndexShards, StatusShards)
	}
}
