package migration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// Fingerprinter digests a source object (Bucket, Key, Size and ETag as a
// HEAD or a listing described it): the full SHA-256, or for objects over
// the threshold the fast fingerprint (size + first and last 8 MiB). kind
// is "sha256" or "fast". The bytes digested are those of the version
// described (a rewritten object fails transient), so the job's size, ETag
// and digest are of one version (docs/decisions/0109).
type Fingerprinter interface {
	Fingerprint(ctx context.Context, obj objectstore.Object) (sum, kind string, err error)
}

// HashCheck is the idempotency gate: it decides whether a source needs
// converting and, if so, claims it.
type HashCheck struct {
	cfg     Config
	store   objectstore.Store
	tracker *statestore.Tracker
	finger  Fingerprinter
	log     *slog.Logger
	metered
	// deadline, when set, bounds how long after its start an execution may
	// (re)enter HashCheck (WithJobDeadline); now is its clock.
	deadline JobDeadline
	now      func() time.Time
	limits   ContainerLimitsSource // nil: cfg.Container
	clashes  clashIndex            // WithClashes
	listing  *Listing              // WithListing
}

// ContainerLimitsSource gives the limits in force above which a job goes
// to the container engine (internal/policy: the run-time document's
// large_objects over the configured ones).
type ContainerLimitsSource interface {
	ContainerLimits(ctx context.Context, configured ContainerLimits) ContainerLimits
}

// WithContainerLimits makes HashCheck take its engine choice's limits from
// l at each call instead of the configuration alone.
func (h *HashCheck) WithContainerLimits(l ContainerLimitsSource) *HashCheck {
	h.limits = l
	return h
}

// NewHashCheck wires the handler.
func NewHashCheck(cfg Config, store objectstore.Store, tracker *statestore.Tracker, finger Fingerprinter, log *slog.Logger) *HashCheck {
	if sf, ok := finger.(StoreFingerprinter); ok && sf.Heads == nil {
		// The headers of the sources being checked at once, taken by
		// route right after their hash.
		sf.Heads = objectstore.NewSourceCache(16*headCacheSize, headCacheSize)
		finger = sf
	}
	return &HashCheck{cfg: cfg.withDefaults(), store: store, tracker: tracker, finger: finger, log: log, now: time.Now}
}

// Recipe is the deployment's recipe, which Config.Recipes refines per key.
func (h *HashCheck) Recipe() recipe.Recipe { return h.cfg.Recipe }

// RecipeFor is the recipe of a source key: Config.Recipes over Recipe, or
// Recipe where that cannot be resolved (HashCheck reports the error).
func (h *HashCheck) RecipeFor(key string) recipe.Recipe {
	r, _, err := h.cfg.Recipes.Resolve(h.cfg.Recipe, key)
	if err != nil {
		return h.cfg.Recipe
	}
	return r
}

// Handle is the Lambda handler. Its error is a bare taxonomy type carrying
// the attempt number (see fault.ForBoundary, fault.WithAttempt).
func (h *HashCheck) Handle(ctx context.Context, in HashCheckInput) (HashCheckOutput, error) {
	log := logFor(h.log, in.Context, in.Source.Key)
	out, err := h.check(ctx, in)
	h.meter().hashCheck(in, err)
	attrs := []any{slog.String("decision", out.Decision), slog.String("reason", out.Reason), slog.String("job", out.Job.ID)}
	if out.Route != nil {
		attrs = append(attrs, slog.String("engine", out.Route.Engine), slog.Int64("bytes", out.Route.Work.Bytes),
			slog.Int64("pixels_bands", out.Route.Work.PixelsBands), slog.Int64("features", out.Route.Work.Features))
	}
	logOutcome(ctx, log, "hashcheck", err, attrs...)
	return out, boundary(err, in.Context)
}

// identification is what HashCheck has found out about a source, gathered
// in stages that stop as soon as decideSource has a verdict.
type identification struct {
	src Source // as reported: the key decoded once it is known to decode

	// From the key alone, before any store call.
	invalid       error // no bucket or key, or characters a key must not carry
	folderMarker  bool  // a console "Create folder" marker
	notGeospatial bool

	// From the store.
	orphanSidecar  bool  // a sidecar whose main file is absent
	excluded       bool  // the recipe file's include/exclude globs leave the key out
	pipelineOutput bool  // the object is in this pipeline's staging or destination area
	clash          error // the run found another source bound for its output key (WithClashes)
	obj            objectstore.Object
	key            string // the object to convert: the main file for a sidecar
}

// verdict is a decision of HashCheck, or the error that ends it. final is
// false when the facts so far do not decide and the check goes on.
type verdict struct {
	final            bool
	decision, reason string
	err              error
	reclaim          bool // claim again: the record says done but the output is gone
}

func skip(reason string) verdict { return verdict{final: true, decision: DecisionSkip, reason: reason} }

// decideSource is the verdict on a source from its identification alone
// (not final when it has to be converted unless the state says otherwise).
func decideSource(id identification) verdict {
	switch {
	case id.invalid != nil:
		return verdict{final: true, err: id.invalid}
	case id.folderMarker:
		return skip(ReasonFolderMarker)
	case id.notGeospatial:
		return skip(ReasonNotGeospatial)
	case id.orphanSidecar:
		// Without a main file there is nothing to convert (yet: the main
		// file's own event will come).
		return skip(ReasonSidecar)
	case id.pipelineOutput:
		return verdict{final: true, err: fault.Data(fault.InvalidInput, "%s is an output of this pipeline, not a source", id.key)}
	case id.excluded:
		return skip(ReasonExcluded)
	case id.clash != nil:
		return verdict{final: true, err: id.clash}
	}
	return verdict{}
}

// decideUnclaimed reports whether a job without a state record is adopted:
// the destination already carries this content hash and recipe.
func decideUnclaimed(recordFound, destMigrated bool) bool { return !recordFound && destMigrated }

// decideClaim is the verdict on a claim's outcome. destMigrated matters only
// for AlreadyCompleted (whether the recorded output still carries this hash
// and recipe); reclaimed is true for the outcome of a second claim.
func decideClaim(outcome statestore.ClaimOutcome, destMigrated, reclaimed bool) verdict {
	switch {
	case outcome == statestore.AlreadyCompleted && !reclaimed && destMigrated:
		return skip(ReasonAlreadyMigrated)
	case outcome == statestore.AlreadyCompleted && !reclaimed:
		return verdict{reclaim: true}
	case outcome == statestore.Claimed:
		return verdict{final: true, decision: DecisionConvert}
	case outcome == statestore.InProgress:
		return skip(ReasonInProgress)
	case outcome == statestore.AwaitingRemediation:
		return skip(ReasonAwaitingRemediation)
	}
	return verdict{final: true, err: fmt.Errorf("migration.HashCheck: unexpected claim outcome %q", outcome)}
}

func (h *HashCheck) check(ctx context.Context, in HashCheckInput) (HashCheckOutput, error) {
	if err := h.checkDeadline(ctx, in.Context); err != nil {
		return HashCheckOutput{}, err
	}
	out, sidecars, decided, err := h.examine(ctx, in.Source)
	if decided || err != nil {
		return out, err
	}
	job := out.Job
	done := func(v verdict) (HashCheckOutput, error) { return h.decide(ctx, out, sidecars, v) }

	// Fast path and adoption: the destination already carries this content
	// hash and recipe (the destination's source-hash metadata is the proof).
	_, err = h.tracker.Get(ctx, job.ID)
	recordFound := true
	switch {
	case errors.Is(err, statestore.ErrNotFound):
		recordFound = false
	case err != nil:
		return out, fmt.Errorf("migration.HashCheck: %w", err)
	}
	destMigrated := false
	if !recordFound {
		if destMigrated, err = h.migrated(ctx, job.DestKey, job); err != nil {
			return out, err
		}
	}
	if decideUnclaimed(recordFound, destMigrated) {
		if _, err := h.tracker.Transition(ctx, statestore.Update{
			ID: job.ID, Execution: in.Context.Execution, Attempt: in.Context.Attempt, To: statestore.Completed,
			Note: "adopted: destination already carries this hash and recipe", Seed: stateRecord(job),
		}); err != nil {
			return out, fmt.Errorf("migration.HashCheck: %w", err)
		}
		return done(skip(ReasonAlreadyMigrated))
	}

	claim := statestore.ClaimRequest{Job: *stateRecord(job), Execution: in.Context.Execution, Attempt: in.Context.Attempt}
	cur, outcome, err := h.tracker.Claim(ctx, claim)
	if err != nil {
		return out, fmt.Errorf("migration.HashCheck: %w", err)
	}
	destMigrated = false
	if outcome == statestore.AlreadyCompleted {
		destKey := cur.DestKey
		if destKey == "" {
			destKey = job.DestKey
		}
		if destMigrated, err = h.migrated(ctx, destKey, job); err != nil {
			return out, err
		}
	}
	v := decideClaim(outcome, destMigrated, false)
	if v.reclaim {
		claim.Reclaim = true
		if _, outcome, err = h.tracker.Claim(ctx, claim); err != nil {
			return out, fmt.Errorf("migration.HashCheck: %w", err)
		}
		v = decideClaim(outcome, false, true)
	}
	return done(v)
}

// examine identifies src up to its content: decided is true when the
// source alone settles the outcome (out holds the decision, or err the
// refusal); otherwise out holds the job that converts this content with
// this recipe, for the state store to decide on.
func (h *HashCheck) examine(ctx context.Context, src Source) (out HashCheckOutput, sidecars []objectstore.Object, decided bool, err error) {
	id, err := h.identify(ctx, src)
	if err != nil {
		return HashCheckOutput{}, nil, true, err
	}
	if v := decideSource(id); v.final {
		return HashCheckOutput{Source: id.src, Decision: v.decision, Reason: v.reason}, nil, true, v.err
	}
	job, sidecars, err := h.identifyContent(ctx, id)
	if err != nil {
		return HashCheckOutput{}, nil, true, err
	}
	return HashCheckOutput{Source: id.src, Job: job}, sidecars, false, nil
}

// decide puts verdict v into out, with the route a conversion takes.
func (h *HashCheck) decide(ctx context.Context, out HashCheckOutput, sidecars []objectstore.Object, v verdict) (HashCheckOutput, error) {
	if v.err != nil {
		return out, v.err
	}
	out.Decision, out.Reason = v.decision, v.reason
	if out.Decision == DecisionConvert {
		out.Route = h.route(ctx, out.Job, sidecars)
	}
	return out, nil
}

// identify gathers what the key and the store say about the source, up to
// the object to convert; it stops at the first fact decideSource decides on.
func (h *HashCheck) identify(ctx context.Context, src Source) (identification, error) {
	id := identification{src: src}
	if src.Bucket == "" || src.Key == "" {
		id.invalid = fault.Data(fault.InvalidInput, "source bucket and key are required")
		return id, nil
	}
	if key, err := src.DecodedKey(); err == nil {
		// Judged on the name alone, before any store call: a key that
		// could climb out of the destination prefix ("../x", "/abs/x",
		// "a//b") or carries a newline must not reach a store, GDAL or a
		// log line as such (docs/decisions/0100).
		if err := objectstore.CheckKey(key); err != nil {
			id.src.Key, id.src.KeyEncoding = key, "plain"
			id.invalid = err
			return id, nil
		}
	}
	if key, err := src.DecodedKey(); err == nil && strings.HasSuffix(key, "/") {
		// A console "Create folder" marker (a zero-byte key ending in /)
		// arrives on the event path like any object; the backfill skips it
		// in its item processor, the event path skips it here. Checked
		// before the Head: a marker deleted since is not a missing source.
		id.src.Key, id.src.KeyEncoding = key, "plain"
		id.folderMarker = true
		return id, nil
	}
	if key, err := src.DecodedKey(); err == nil {
		if d := directoryOf(key); d != "" {
			// A file inside a directory source (city.gdb/a00000001.gdbtable)
			// is part of it: the directory is the source.
			src.Key, src.KeyEncoding = d, "plain"
			id.src.Key, id.src.KeyEncoding = d, "plain"
			key = d
		}
		if NotGeospatial(key) != "" && !formats.IsSidecar(key) {
			id.src.Key, id.src.KeyEncoding = key, "plain"
			id.notGeospatial = true
			return id, nil
		}
	}
	obj, key, err := h.resolve(ctx, src)
	if err != nil {
		return id, err
	}
	id.src.Key, id.src.KeyEncoding = key, "plain"
	if id.src.DatasetID == "" {
		id.src.DatasetID = id.src.Bucket
	}
	if formats.IsSidecar(key) || formats.Conditional(key) {
		// A sidecar is read with its main file (roads.shp brings roads.dbf)
		// and is part of its identity: an edit of the sidecar alone
		// migrates the main file again. A conditional one (image.XML)
		// without its main file is a candidate of its own.
		main, err := mainOf(ctx, h.store, src.Bucket, key)
		if err != nil {
			return id, fmt.Errorf("migration.HashCheck: %w", err)
		}
		switch {
		case main.Key != "":
			obj, key = main, main.Key
			id.src.Key = key
		case formats.IsSidecar(key):
			id.orphanSidecar = true
			return id, nil
		}
	}
	id.obj, id.key = obj, key
	// Judged on the main file's key: a sidecar goes where its main file goes.
	id.excluded = h.cfg.Recipes.Excluded(key) != ""
	id.clash = h.clashOf(src.Bucket, key)
	id.pipelineOutput = h.cfg.DestBucket == src.Bucket && (strings.HasPrefix(key, h.cfg.StagingPrefix) || (h.cfg.DestPrefix != "" && strings.HasPrefix(key, h.cfg.DestPrefix)))
	return id, nil
}

// identifyContent fingerprints the object and its sidecars and names the
// job that converts this content with this recipe.
func (h *HashCheck) identifyContent(ctx context.Context, id identification) (Job, []objectstore.Object, error) {
	src, key, obj := id.src, id.key, id.obj
	var sum, kind string
	var sidecars []objectstore.Object
	var etags map[string]string
	if isDirectorySource(key) {
		members, err := directoryMembers(ctx, h.store, src.Bucket, key)
		if err != nil {
			return Job{}, nil, fmt.Errorf("migration.HashCheck: %w", err)
		}
		if sum, kind, err = fingerprintDirectory(ctx, h.finger, src.Bucket, key, members); err != nil {
			return Job{}, nil, fmt.Errorf("migration.HashCheck: %w", err)
		}
	} else {
		var err error
		obj.Bucket, obj.Key = src.Bucket, key
		if sum, kind, err = h.finger.Fingerprint(ctx, obj); err != nil {
			return Job{}, nil, fmt.Errorf("migration.HashCheck: fingerprint s3://%s/%s: %w", src.Bucket, key, err)
		}
		if sidecars, err = h.sidecarsOf(ctx, src.Bucket, key); err != nil {
			return Job{}, nil, fmt.Errorf("migration.HashCheck: %w", err)
		}
		sums := map[string]string{}
		for _, sc := range sidecars {
			if etags == nil {
				etags = map[string]string{}
			}
			etags[sc.Key] = sc.ETag
			sc.Bucket = src.Bucket
			s, _, err := h.finger.Fingerprint(ctx, sc)
			if err != nil {
				return Job{}, nil, fmt.Errorf("migration.HashCheck: fingerprint sidecar s3://%s/%s: %w", src.Bucket, sc.Key, err)
			}
			sums[path.Base(sc.Key)] = s
		}
		sum = bundleDigest(path.Base(key), sum, sums)
	}
	// The recipe of this key: the recipe file's rules that match it, over
	// the deployment's recipe. Its hash names the job, so a rule edited
	// for a glob converts again exactly the keys the glob matches.
	rec, _, err := h.cfg.Recipes.Resolve(h.cfg.Recipe, key)
	if err != nil {
		return Job{}, nil, fault.Systemic("hashcheck: recipe of "+key, err)
	}
	recipeHash := rec.ShortHash()
	return Job{
		ID:            JobID(src.DatasetID, src.Bucket, key, sum, recipeHash),
		DatasetID:     src.DatasetID,
		SourceBucket:  src.Bucket,
		SourceKey:     key,
		SourceSize:    obj.Size,
		SourceETag:    obj.ETag,
		SourceSHA256:  sum,
		Fingerprint:   kind,
		RecipeHash:    recipeHash,
		Recipe:        rec,
		DestBucket:    h.cfg.DestBucket,
		DestKey:       predictDestKey(h.cfg.DestPrefix, key, rec),
		StagingPrefix: h.cfg.StagingPrefix + stagingDir(sum, recipeHash),
		SidecarETags:  etags,
		// A directory source's members are listed by Convert itself.
		SidecarsListed: !isDirectorySource(key),
		SourceModified: obj.Modified,
	}, sidecars, nil
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
		obj, err := headSource(ctx, h.store, src.Bucket, k)
		switch {
		case err == nil:
			return obj, k, nil
		case !errors.Is(err, objectstore.ErrNotFound):
			return obj, k, fmt.Errorf("migration.HashCheck: head source: %w", err)
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
		return false, fmt.Errorf("migration.HashCheck: head destination: %w", err)
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
