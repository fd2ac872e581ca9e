package migration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// Promote moves staged outputs to their final keys. Each copy is
// conditional, so a final key only ever holds a complete object whose
// metadata names its source, and promoting twice is harmless.
type Promote struct {
	cfg     Config
	store   objectstore.Store
	tracker *statestore.Tracker
	log     *slog.Logger
	items   *ItemLog // WithItemLog
	metered
}

// NewPromote wires the handler.
func NewPromote(cfg Config, store objectstore.Store, tracker *statestore.Tracker, log *slog.Logger) *Promote {
	return &Promote{cfg: cfg.withDefaults(), store: store, tracker: tracker, log: log}
}

// Handle is the Lambda handler.
func (p *Promote) Handle(ctx context.Context, in PromoteInput) (PromoteOutput, error) {
	log := logFor(p.log, in.Context, in.Job.SourceKey)
	var completed *statestore.Job
	out, err := p.promote(ctx, log, in, &completed)
	p.meter().promote(in, out, err)
	if completed != nil {
		p.meter().jobEnded(completed.SourceKey, "", p.fallbackThresholds())
		if l, ok := signals.RecoveryOf(completed.History); ok {
			p.meter().recovered(l)
			log.InfoContext(ctx, "promote: recovered", slog.String("job", in.Job.ID), slog.String("routed_tier", signals.TierOf(l.Tier)),
				slog.Float64("recovery_seconds", l.Duration.Seconds()))
		}
	}
	logOutcome(ctx, log, "promote", err, slog.String("job", in.Job.ID), slog.Int("outputs", len(out.Outputs)))
	return out, boundary(err, in.Context)
}

// promote does the work; completed is set to the job's record when this
// call is the one that marked it COMPLETED (a retry that finds it done
// already leaves it nil, so the job's end is counted once).
func (p *Promote) promote(ctx context.Context, log *slog.Logger, in PromoteInput, completed **statestore.Job) (PromoteOutput, error) {
	job := in.Job
	if job.ID == "" || (len(in.Converted.Outputs) == 0 && in.Converted.OutputsRef == nil) {
		return PromoteOutput{}, fault.Systemic("migration.Promote", errors.New("input carries no job or no outputs"))
	}
	// The list, inline or read back from staging (docs/decisions/0101).
	outs, listErr := readOutputs(ctx, p.store, job, in.Converted)
	if listErr != nil && !errors.Is(listErr, errOutputsListGone) {
		return PromoteOutput{}, listErr
	}
	// A retry whose earlier attempt finished (only the response was lost)
	// finds the job completed: confirm the outputs and succeed again.
	if rec, err := p.tracker.Get(ctx, job.ID); err == nil && rec.Status == statestore.Completed {
		if listErr != nil {
			// That attempt deleted staging, the staged list with it, once
			// every output was final: the record is the confirmation.
			return PromoteOutput{Outputs: []Artifact{}, Count: in.Converted.OutputsRef.Count, Size: rec.OutputSize}, nil
		}
		done, err := p.allPromoted(ctx, job, outs)
		if err != nil {
			return promoted(in.Converted, outs), err
		}
		if done {
			// The earlier attempt may have ended before its deletes.
			if staged, err := stagedKeys(job, outs, in.Converted); err == nil {
				p.removeAllStaged(ctx, log, job, staged)
			}
			return promoted(in.Converted, outs), nil
		}
	}
	if listErr != nil {
		return PromoteOutput{}, fault.Systemic("migration.Promote", fmt.Errorf("staged outputs list %s is missing: Convert must run again", in.Converted.OutputsRef.Key))
	}
	if _, err := p.tracker.BeginAttempt(ctx, job.ID, in.Context.Execution, in.Context.State, in.Context.Attempt); err != nil {
		return PromoteOutput{}, leaseError("migration.Promote", err)
	}
	for _, a := range outs {
		if strings.HasPrefix(a.DestKey, p.cfg.StagingPrefix) || !strings.HasPrefix(a.StagingKey, p.cfg.StagingPrefix) {
			return PromoteOutput{}, fault.Systemic("migration.Promote", fmt.Errorf("refusing to promote %s → %s: keys are not staging → final", a.StagingKey, a.DestKey))
		}
		if err := p.promoteOne(ctx, job, a); err != nil {
			return PromoteOutput{}, err
		}
	}
	// Each item after every output: an item at a final key always points
	// at a published output.
	var items []*StagedItem
	for _, a := range outs {
		if a.Item == nil {
			continue
		}
		ia := a.Item.artifact()
		if strings.HasPrefix(ia.DestKey, p.cfg.StagingPrefix) || (a.Item.Body == "" && !strings.HasPrefix(ia.StagingKey, p.cfg.StagingPrefix)) {
			return PromoteOutput{}, fault.Systemic("promote", fmt.Errorf("refusing to promote %s → %s: keys are not staging → final", ia.StagingKey, ia.DestKey))
		}
		var err error
		if a.Item.Body != "" {
			err = p.writeItem(ctx, job, a.Item)
		} else {
			err = p.promoteOne(ctx, job, ia) // staged by an earlier version
		}
		if err != nil {
			return PromoteOutput{}, err
		}
		p.items.add(TreeEntry{Key: a.Item.DestKey, Dataset: job.DatasetID, BBox: a.Item.BBox, Datetime: a.Item.Datetime})
		items = append(items, a.Item)
	}
	if err := p.includeInCollection(ctx, job, items); err != nil {
		return PromoteOutput{}, err
	}
	// Staging is removed only once every output is final (a retry after a
	// partial promotion still finds what it needs), and after the job is
	// COMPLETED: a staged copy left behind is housekeeping, not a failure
	// of the file, so a store error here is logged and the object left to
	// the staging lifecycle rule on AWS and to the end-of-run sweeps of the
	// CLI (every staged object locally; migrated jobs' with --backend aws).
	staged, err := stagedKeys(job, outs, in.Converted)
	if err != nil {
		return PromoteOutput{}, err
	}
	first := outs[0]
	total := totalSize(outs)
	rec, err := p.tracker.Transition(ctx, statestore.Update{
		ID: job.ID, Execution: in.Context.Execution, Attempt: in.Context.Attempt, To: statestore.Completed,
		Note: fmt.Sprintf("promoted %d output(s)", len(outs)),
		// Every output and item is durable at its final key: a crash
		// that loses this record leaves the claim, and the job taken
		// over finds them promoted (docs/decisions/0115).
		Deferred: true,
		Mutate: func(j *statestore.Job) {
			j.DestKey, j.OutputSHA256, j.OutputSize = first.DestKey, first.SHA256, total
		},
	})
	if err != nil {
		return PromoteOutput{}, leaseError("migration.Promote: mark completed", err)
	}
	*completed = &rec
	p.removeAllStaged(ctx, log, job, staged)
	return promoted(in.Converted, outs), nil
}

// stagedKeys lists what a job staged for its outputs (outs): each output,
// its item where an earlier version staged it, the outputs list when it
// came by reference, and the container's result object. A collection
// update removes its own staged copy (Tree.update).
func stagedKeys(job Job, outs []Artifact, converted ConvertOutput) ([]string, error) {
	var staged []string
	for _, a := range outs {
		staged = append(staged, a.StagingKey)
		if a.Item != nil && a.Item.StagingKey != "" {
			staged = append(staged, a.Item.StagingKey)
		}
	}
	if ref := converted.OutputsRef; ref != nil {
		staged = append(staged, ref.Key) // checked by readOutputs
	}
	if k := converted.ResultKey; k != "" {
		if !strings.HasPrefix(k, job.StagingPrefix+ContainerResultPrefix) {
			return nil, fault.Systemic("migration.Promote", fmt.Errorf("refusing to delete %s: not a result object of this job's staging", k))
		}
		staged = append(staged, k)
	}
	return staged, nil
}

// removeAllStaged deletes a completed job's staged objects, logging what
// it leaves to the staging expiry.
func (p *Promote) removeAllStaged(ctx context.Context, log *slog.Logger, job Job, staged []string) {
	for _, k := range staged {
		if err := p.removeStaged(ctx, job.DestBucket, k); err != nil {
			log.WarnContext(ctx, "promote: staged object left to the staging expiry", slog.String("job", job.ID),
				slog.String("key", k), slog.String("error", err.Error()))
		}
	}
}

// removeStaged deletes a staged object, trying again while the store
// fails transiently (retryTransient): the job is already COMPLETED, so this
// is the only chance to remove it before the lifecycle rule does.
func (p *Promote) removeStaged(ctx context.Context, bucket, key string) error {
	return retryTransient(ctx, func() error { return p.store.Delete(ctx, bucket, key) })
}

// promoteOne makes a.DestKey hold the staged object, by a copy (a rename
// where the store keeps files) of the version Convert staged.
func (p *Promote) promoteOne(ctx context.Context, job Job, a Artifact) error {
	meta := promotedMetadata(job, a)
	req := objectstore.CopyRequest{
		SrcBucket: job.DestBucket, SrcKey: a.StagingKey,
		DstBucket: job.DestBucket, DstKey: a.DestKey,
		Metadata: meta, SrcETag: a.StagedETag, SrcSize: a.Size,
	}
	return p.place(ctx, job, a.DestKey, meta, a.StagingKey, func(ifMatch string) error {
		req.IfNoneMatch, req.IfMatch = ifMatch == "", ifMatch
		_, err := p.publish(ctx, req)
		return err
	})
}

// writeItem puts an item's document at its final key, after its output:
// one conditional Put, under the same rules as an output's copy. A Put is
// atomic (a reader sees the whole document or none), so the document
// needs no staged copy (docs/decisions/0109).
func (p *Promote) writeItem(ctx context.Context, job Job, it *StagedItem) error {
	ia := it.artifact()
	meta := promotedMetadata(job, ia)
	return p.place(ctx, job, ia.DestKey, meta, "", func(ifMatch string) error {
		_, err := p.store.Put(ctx, objectstore.PutRequest{
			Bucket: job.DestBucket, Key: ia.DestKey, Body: strings.NewReader(it.Body), Size: ia.Size,
			Metadata: meta, IfNoneMatch: ifMatch == "", IfMatch: ifMatch,
		})
		return err
	})
}

// place makes key hold this job's object with write, which writes it only
// while the key is absent (ifMatch "") or holds the version ifMatch. The
// first write asks for an absent key, the common case, so a promotion
// costs one request; a key that exists is then read, and holds either
// this object already (done: an earlier attempt wrote it), an older
// output of the same source (overwritten in that exact version only), or
// another source's output (refused: two sources map to one key). staged
// names the staged object write reads ("" when it reads none).
func (p *Promote) place(ctx context.Context, job Job, key string, meta map[string]string, staged string, write func(ifMatch string) error) error {
	err := write("")
	if errors.Is(err, objectstore.ErrPreconditionFailed) {
		cur, herr := p.store.Head(ctx, job.DestBucket, key)
		switch {
		case errors.Is(herr, objectstore.ErrNotFound):
			return fault.Transient("migration.Promote: "+key, errors.New("destination changed during promotion (412)"))
		case herr != nil:
			return fmt.Errorf("migration.Promote: head %s: %w", key, herr)
		case isPromoted(cur, meta):
			return nil
		case !objectstore.SameMetaValue(cur.Metadata[objectstore.MetaSourceKey], job.SourceBucket+"/"+job.SourceKey):
			return fault.Data(fault.DestinationTaken, "%s already holds the output of %s; %s/%s maps to the same key",
				key, orUnknown(cur.Metadata[objectstore.MetaSourceKey]), job.SourceBucket, job.SourceKey)
		}
		if err = write(cur.ETag); errors.Is(err, objectstore.ErrPreconditionFailed) {
			// Someone promoted between our Head and write. Same hash: done.
			if now, herr := p.store.Head(ctx, job.DestBucket, key); herr == nil && isPromoted(now, meta) {
				return nil
			}
			return fault.Transient("migration.Promote: "+key, errors.New("destination changed during promotion (412)"))
		}
	}
	switch {
	case err == nil:
		return nil
	case staged != "" && errors.Is(err, objectstore.ErrNotFound):
		// Staging is gone. If the final key already holds this output a
		// previous attempt finished the copy; otherwise the staged output
		// was lost and Convert must run again.
		if now, herr := p.store.Head(ctx, job.DestBucket, key); herr == nil && isPromoted(now, meta) {
			return nil
		}
		return fault.Systemic("migration.Promote", fmt.Errorf("staging object %s is missing", staged))
	default:
		// The write may have been done and its answer lost (a reset after
		// CompleteMultipartUpload, CopyObject or PutObject): the key's
		// lineage says so, and writing again would write the key a second
		// time.
		if now, herr := p.store.Head(ctx, job.DestBucket, key); herr == nil && isPromoted(now, meta) {
			return nil
		}
		if staged == "" {
			return fmt.Errorf("migration.Promote: put %s: %w", key, err)
		}
		return fmt.Errorf("migration.Promote: copy %s → %s: %w", staged, key, err)
	}
}

// publish puts a staged object at its final key: a rename where the store
// keeps files (objectstore.FileMover; staging is deleted afterwards anyway),
// else a copy. Both replace the metadata and honour the same conditions.
func (p *Promote) publish(ctx context.Context, req objectstore.CopyRequest) (objectstore.Object, error) {
	if fm, ok := p.store.(objectstore.FileMover); ok && req.SrcBucket == req.DstBucket {
		return fm.Move(ctx, req)
	}
	return p.store.Copy(ctx, req)
}

func (p *Promote) allPromoted(ctx context.Context, job Job, outs []Artifact) (bool, error) {
	all := outs
	for _, a := range outs {
		if a.Item != nil {
			all = append(all[:len(all):len(all)], a.Item.artifact())
		}
	}
	for _, a := range all {
		cur, err := p.store.Head(ctx, job.DestBucket, a.DestKey)
		switch {
		case errors.Is(err, objectstore.ErrNotFound):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("migration.Promote: head %s: %w", a.DestKey, err)
		case !isPromoted(cur, promotedMetadata(job, a)):
			return false, nil
		}
	}
	return true, nil
}

func isPromoted(o objectstore.Object, meta map[string]string) bool {
	return o.Metadata[objectstore.MetaSourceSHA256] == meta[objectstore.MetaSourceSHA256] &&
		o.Metadata[objectstore.MetaRecipe] == meta[objectstore.MetaRecipe] &&
		o.Metadata[MetaOutputSHA256] == meta[MetaOutputSHA256]
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown source"
	}
	return s
}
