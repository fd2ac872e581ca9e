package statestore

import (
	"context"
	"sort"
)

// SourceLatest is the newest job of one source location and how many
// older jobs (earlier content or recipes) it supersedes.
type SourceLatest struct {
	Job        Job
	Superseded int
}

// LatestPerSource reads every job and keeps, per source location (bucket
// and key), the one updated last: what a fixed and replayed file is now,
// not what it was. A job ID holds the content hash, so fixing a file makes
// a new job and leaves the old REMEDIAL record behind as history. The
// result is in source order.
func LatestPerSource(ctx context.Context, b Backend) ([]SourceLatest, error) {
	var jobs []Job
	if err := b.List(ctx, "", func(j Job) error { jobs = append(jobs, j); return nil }); err != nil {
		return nil, err
	}
	return Latest(jobs), nil
}

// Latest is LatestPerSource over jobs already read (one listing serving
// several views).
func Latest(jobs []Job) []SourceLatest {
	by := map[string]*SourceLatest{}
	for _, j := range jobs {
		id := j.SourceBucket + "/" + j.SourceKey
		cur, ok := by[id]
		switch {
		case !ok:
			by[id] = &SourceLatest{Job: j}
		case newer(j, cur.Job):
			cur.Job = j
			cur.Superseded++
		default:
			cur.Superseded++
		}
	}
	out := make([]SourceLatest, 0, len(by))
	for _, l := range by {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, k int) bool {
		a, b := out[i].Job, out[k].Job
		if a.SourceBucket != b.SourceBucket {
			return a.SourceBucket < b.SourceBucket
		}
		return a.SourceKey < b.SourceKey
	})
	return out
}

// newer orders two jobs of one source: last update first, then creation,
// then ID (a stable tie-break for records written in the same instant).
func newer(a, b Job) bool {
	switch {
	case !a.UpdatedAt.Equal(b.UpdatedAt):
		return a.UpdatedAt.After(b.UpdatedAt)
	case !a.CreatedAt.Equal(b.CreatedAt):
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}
