package statestore_test

import (
	"context"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

func TestLatestPerSource(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	job := func(id, bucket, key string, s statestore.Status, updated time.Duration) statestore.Job {
		return statestore.Job{ID: id, SourceBucket: bucket, SourceKey: key, Status: s, CreatedAt: t0, UpdatedAt: t0.Add(updated)}
	}
	tests := []struct {
		name string
		jobs []statestore.Job
		want map[string]statestore.Status // bucket/key → status
		sup  map[string]int
	}{
		{"one job per source", []statestore.Job{
			job("a", "src", "a.tif", statestore.Completed, 0),
			job("b", "src", "b.tif", statestore.Remedial, 0),
		}, map[string]statestore.Status{"src/a.tif": statestore.Completed, "src/b.tif": statestore.Remedial}, map[string]int{}},
		{"fixed file: the new job wins", []statestore.Job{
			job("old", "src", "a.tif", statestore.Remedial, 0),
			job("new", "src", "a.tif", statestore.Completed, time.Minute),
		}, map[string]statestore.Status{"src/a.tif": statestore.Completed}, map[string]int{"src/a.tif": 1}},
		{"broken again after a success: the newest wins", []statestore.Job{
			job("v2", "src", "a.tif", statestore.Remedial, 2*time.Minute),
			job("v1", "src", "a.tif", statestore.Completed, time.Minute),
			job("v0", "src", "a.tif", statestore.Quarantined, 0),
		}, map[string]statestore.Status{"src/a.tif": statestore.Remedial}, map[string]int{"src/a.tif": 2}},
		{"same key in two buckets stays two sources", []statestore.Job{
			job("x", "a", "dem.tif", statestore.Completed, 0),
			job("y", "b", "dem.tif", statestore.Remedial, time.Minute),
		}, map[string]statestore.Status{"a/dem.tif": statestore.Completed, "b/dem.tif": statestore.Remedial}, map[string]int{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := statestoretest.NewMemory()
			for _, j := range tc.jobs {
				if err := m.Put(context.Background(), j, 0); err != nil {
					t.Fatal(err)
				}
			}
			got, err := statestore.LatestPerSource(context.Background(), m)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d sources, want %d: %+v", len(got), len(tc.want), got)
			}
			for _, l := range got {
				id := l.Job.SourceBucket + "/" + l.Job.SourceKey
				if l.Job.Status != tc.want[id] || l.Superseded != tc.sup[id] {
					t.Errorf("%s: %s superseding %d, want %s superseding %d", id, l.Job.Status, l.Superseded, tc.want[id], tc.sup[id])
				}
			}
		})
	}
}
