package migration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"

	"github.com/geomigrate/geomigrate/internal/convert"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// Fingerprinter digests a source object: the full SHA-256, or for objects
// over the threshold the fast fingerprint (size + first and last 8 MiB).
// kind is "sha256" or "fast".
type Fingerprinter interface {
	Fingerprint(ctx context.Context, bucket, key string, size int64) (sum, kind string, err error)
}

// HashCheck is the idempotency gate: it decides whether a source needs
// converting and, if so, claims it.
type HashCheck struct {
	cfg     Config
	store   objectstore.Store
	tracker *statestore.Tracker
	finger  Fingerprinter
	log     *slog.Logger
}

// NewHashCheck wires the handler.
func NewHashCheck(cfg Config, store objectstore.Store, tracker *statestore.Tracker, finger Fingerprinter, log *slog.Logger) *HashCheck {
	return &HashCheck{cfg: cfg.withDefaults(), store: store, tracker: tracker, finger: finger, log: log}
}

// Recipe is the recipe HashCheck puts into every job.
func (h *HashCheck) Recipe() convert.Recipe { return h.cfg.Recipe }

// Handle is the Lambda handler. Its error is a bare taxonomy type carrying
// the attempt number (see fault.ForBoundary, fault.WithAttempt).
func (h *HashCheck) Handle(ctx context.Context, in HashCheckInput) (HashCheckOutput, error) {
	log := logFor(h.log, in.Context, in.Source.Key)
	out, err := h.check(ctx, in)
	meterOf(h).hashCheck(in, err)
	logOutcome(ctx, log, "hashcheck", err, slog.String("decision", out.Decision), slog.String("reason", out.Reason), slog.String("job", out.Job.ID))
	return out, boundary(err, in.Context)
}

func (h *HashCheck) check(ctx context.Context, in HashCheckInput) (HashCheckOutput, error) {
	src := in.Source
	if src.Bucket == "" || src.Key == "" {
		return HashCheckOutput{}, fault.Data(fault.InvalidInput, "source bucket and key are required")
	}
	if key, err := src.DecodedKey(); err == nil && strings.HasSuffix(key, "/") {
		// A console "Create folder" marker (a zero-byte key ending in /)
		// arrives on the event path like any object; the backfill skips it
		// in its item processor, the event path skips it here. Checked
		// before the Head: a marker deleted since is not a missing source.
		src.Key, src.KeyEncoding = key, "plain"
		return HashCheckOutput{Source: src, Decision: DecisionSkip, Reason: ReasonFolderMarker}, nil
	}
	if key, err := src.DecodedKey(); err == nil {
		// Both judged on the name alone, before any store call: a newline
		// in a key must not reach a store, GDAL or a log line as such.
		if err := checkKeyChars(key); err != nil {
			return HashCheckOutput{}, err
		}
		if NotGeospatial(key) != "" && !formats.IsSidecar(key) {
			src.Key, src.KeyEncoding = key, "plain"
			return HashCheckOutput{Source: src, Decision: DecisionSkip, Reason: ReasonNotGeospatial}, nil
		}
	}
	obj, key, err := h.resolve(ctx, src)
	if err != nil {
		return HashCheckOutput{}, err
	}
	src.Key, src.KeyEncoding = key, "plain"
	if src.DatasetID == "" {
		src.DatasetID = src.Bucket
	}
	if formats.IsSidecar(key) {
		// A sidecar is read with its main file (roads.shp brings roads.dbf)
		// and is part of its identity: an edit of the sidecar alone
		// migrates the main file again. Without a main file there is
		// nothing to convert (yet: the main file's own event will come).
		main, err := mainOf(ctx, h.store, src.Bucket, key)
		if err != nil {
			return HashCheckOutput{}, fmt.Errorf("hashcheck: %w", err)
		}
		if main.Key == "" {
			return HashCheckOutput{Source: src, Decision: DecisionSkip, Reason: ReasonSidecar}, nil
		}
		obj, key = main, main.Key
		src.Key = key
	}
	if h.cfg.DestBucket == src.Bucket && (strings.HasPrefix(key, h.cfg.StagingPrefix) || (h.cfg.DestPrefix != "" && strings.HasPrefix(key, h.cfg.DestPrefix))) {
		return HashCheckOutput{}, fault.Data(fault.InvalidInput, "%s is an output of this pipeline, not a source", key)
	}
	sum, kind, err := h.finger.Fingerprint(ctx, src.Bucket, key, obj.Size)
	if err != nil {
		return HashCheckOutput{}, fmt.Errorf("hashcheck: fingerprint s3://%s/%s: %w", src.Bucket, key, err)
	}
	sidecars, err := listSidecars(ctx, h.store, src.Bucket, key)
	if err != nil {
		return HashCheckOutput{}, fmt.Errorf("hashcheck: %w", err)
	}
	sums := map[string]string{}
	for _, sc := range sidecars {
		s, _, err := h.finger.Fingerprint(ctx, src.Bucket, sc.Key, sc.Size)
		if err != nil {
			return HashCheckOutput{}, fmt.Errorf("hashcheck: fingerprint sidecar s3://%s/%s: %w", src.Bucket, sc.Key, err)
		}
		sums[path.Base(sc.Key)] = s
	}
	sum = bundleDigest(path.Base(key), sum, sums)
	recipeHash := h.cfg.Recipe.ShortHash()
	job := Job{
		ID:            JobID(src.DatasetID, src.Bucket, key, sum, recipeHash),
		DatasetID:     src.DatasetID,
		SourceBucket:  src.Bucket,
		SourceKey:     key,
		SourceSize:    obj.Size,
		SourceETag:    obj.ETag,
		SourceSHA256:  sum,
		Fingerprint:   kind,
		RecipeHash:    recipeHash,
		Recipe:        h.cfg.Recipe,
		DestBucket:    h.cfg.DestBucket,
		DestKey:       predictDestKey(h.cfg.DestPrefix, key, h.cfg.Recipe),
		StagingPrefix: h.cfg.StagingPrefix + stagingDir(sum, recipeHash),
	}
	out := HashCheckOutput{Source: src, Job: job}

	// Fast path and adoption: the destination already carries this content
	// hash and recipe (seed 000's src_hash check).
	_, err = h.tracker.Get(ctx, job.ID)
	switch {
	case errors.Is(err, statestore.ErrNotFound):
		done, err := h.migrated(ctx, job.DestKey, job)
		if err != nil {
			return out, err
		}
		if done {
			if _, err := h.tracker.Transition(ctx, statestore.Update{
				ID: job.ID, Execution: in.Context.Execution, Attempt: in.Context.Attempt, To: statestore.Completed,
				Note: "adopted: destination already carries this hash and recipe", Seed: stateRecord(job),
			}); err != nil {
				return out, fmt.Errorf("hashcheck: %w", err)
			}
			out.Decision, out.Reason = DecisionSkip, ReasonAlreadyMigrated
			return out, nil
		}
	case err != nil:
		return out, fmt.Errorf("hashcheck: %w", err)
	}

	claim := statestore.ClaimRequest{Job: *stateRecord(job), Execution: in.Context.Execution, Attempt: in.Context.Attempt}
	cur, outcome, err := h.tracker.Claim(ctx, claim)
	if err != nil {
		return out, fmt.Errorf("hashcheck: %w", err)
	}
	if outcome == statestore.AlreadyCompleted {
		destKey := cur.DestKey
		if destKey == "" {
			destKey = job.DestKey
		}
		done, err := h.migrated(ctx, destKey, job)
		if err != nil {
			return out, err
		}
		if done {
			out.Decision, out.Reason = DecisionSkip, ReasonAlreadyMigrated
			return out, nil
		}
		// The record says done but the output is gone: migrate again.
		claim.Reclaim = true
		if _, outcome, err = h.tracker.Claim(ctx, claim); err != nil {
			return out, fmt.Errorf("hashcheck: %w", err)
		}
	}
	switch outcome {
	case statestore.Claimed:
		out.Decision = DecisionConvert
	case statestore.InProgress:
		out.Decision, out.Reason = DecisionSkip, ReasonInProgress
	case statestore.AwaitingRemediation:
		out.Decision, out.Reason = DecisionSkip, ReasonAwaitingRemediation
	default:
		return out, fmt.Errorf("hashcheck: unexpected claim outcome %q", outcome)
	}
	return out, nil
}

// resolve finds the source object. URL-encoded keys are decoded first; if
// the decoded key does not exist but the raw one does, the raw one is used
// (an event source that did not encode).
func (h *HashCheck) resolve(ctx context.Context, src Source) (objectstore.Object, string, error) {
	keys := []string{src.Key}
	if src.KeyEncoding == "url" {
		decoded, err := src.DecodedKey()
		if err == nil && decoded != src.Key {
			keys = []string{decoded, src.Key}
		}
	}
	for _, k := range keys {
		obj, err := h.store.Head(ctx, src.Bucket, k)
		switch {
		case err == nil:
			return obj, k, nil
		case !errors.Is(err, objectstore.ErrNotFound):
			return obj, k, fmt.Errorf("hashcheck: head source: %w", err)
		}
	}
	return objectstore.Object{}, "", fault.Data(fault.SourceNotFound, "s3://%s/%s does not exist (deleted after the event?)", src.Bucket, keys[0])
}

// migrated reports whether the object at destKey was produced from this
// content with this recipe.
func (h *HashCheck) migrated(ctx context.Context, destKey string, job Job) (bool, error) {
	obj, err := h.store.Head(ctx, h.cfg.DestBucket, destKey)
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("hashcheck: head destination: %w", err)
	}
	return obj.Metadata[objectstore.MetaSourceSHA256] == job.SourceSHA256 &&
		obj.Metadata[objectstore.MetaRecipe] == job.RecipeHash, nil
}

// stagingDir keeps each job's staging objects apart, by content and recipe,
// so two jobs never share a staging key.
func stagingDir(sum, recipeHash string) string {
	return path.Join(sum[:min(len(sum), 32)]+"-"+recipeHash) + "/"
}

func stateRecord(j Job) *statestore.Job {
	return &statestore.Job{
		ID: j.ID, DatasetID: j.DatasetID, SourceBucket: j.SourceBucket, SourceKey: j.SourceKey,
		SourceSHA256: j.SourceSHA256, Fingerprint: j.Fingerprint, SourceSize: j.SourceSize,
		RecipeHash: j.RecipeHash, DestBucket: j.DestBucket, DestKey: j.DestKey,
	}
}

// boundary prepares an error for the trip through Step Functions: the bare
// taxonomy type (its name is the errorType) with the attempt number.
func boundary(err error, inv Invocation) error {
	if err == nil {
		return nil
	}
	return fault.WithAttempt(err, inv.Attempt+1)
}
