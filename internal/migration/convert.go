package migration

// Size: one step's lifecycle: the Convert handler's work dir, download, run and staging.

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// Convert turns a claimed source into its cloud-native outputs and writes
// them under the staging prefix. Nothing it writes is ever at a final key.
type Convert struct {
	cfg      Config
	store    objectstore.Store
	tracker  *statestore.Tracker
	engine   recipe.Engine
	validate OutputValidator
	log      *slog.Logger
	// sources holds sources HashCheck read whole in this process.
	sources *objectstore.SourceCache
	// workMu guards idleWork: emptied work directories kept for the next
	// conversions. Making a directory and removing it for every file was
	// a millisecond of a tiny file's conversion (a new directory's inode
	// is placed away from its parent's, in cold inode tables).
	workMu   sync.Mutex
	idleWork []string
	metered
}

// maxIdleWork bounds the work directories kept (one per concurrent
// conversion is all that is ever reused).
const maxIdleWork = 64

// takeWorkDir returns an empty work directory: a kept one, else a new one.
func (c *Convert) takeWorkDir() (string, error) {
	c.workMu.Lock()
	if n := len(c.idleWork); n > 0 {
		dir := c.idleWork[n-1]
		c.idleWork = c.idleWork[:n-1]
		c.workMu.Unlock()
		return dir, nil
	}
	c.workMu.Unlock()
	return os.MkdirTemp(c.cfg.WorkDir, "geomigrate-convert-")
}

// releaseWorkDir empties dir and keeps it for the next conversion, or
// removes it: after a failed conversion (the engine may have left a child
// or a write behind it), when it cannot be emptied, or when enough are kept.
func (c *Convert) releaseWorkDir(dir string, reuse bool) {
	if reuse && emptyDir(dir) == nil {
		c.workMu.Lock()
		if len(c.idleWork) < maxIdleWork {
			c.idleWork = append(c.idleWork, dir)
			c.workMu.Unlock()
			return
		}
		c.workMu.Unlock()
	}
	_ = os.RemoveAll(dir)
}

// emptyDir removes everything in dir, keeping dir.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Close removes the work directories kept for reuse. The handler stays
// usable (it makes new ones).
func (c *Convert) Close() error {
	c.workMu.Lock()
	dirs := c.idleWork
	c.idleWork = nil
	c.workMu.Unlock()
	var errs []error
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("migration.Convert.Close: %w", err))
		}
	}
	return errors.Join(errs...)
}

// WithSources makes c convert from the bytes HashCheck left in sources,
// when its job's are there, instead of reading the object again; returns c.
func (c *Convert) WithSources(sources *objectstore.SourceCache) *Convert {
	c.sources = sources
	return c
}

// OutputValidator checks one converted file of the given format and says
// what is wrong with it (internal/validate.Output). It is passed in rather
// than imported so that the other handlers' binaries do not link the
// Parquet reader.
type OutputValidator func(path, format string) error

// NewConvert wires the handler.
func NewConvert(cfg Config, store objectstore.Store, tracker *statestore.Tracker, engine recipe.Engine, validate OutputValidator, log *slog.Logger) *Convert {
	return &Convert{cfg: cfg.withDefaults(), store: store, tracker: tracker, engine: engine, validate: validate, log: log}
}

// Handle is the Lambda handler.
func (c *Convert) Handle(ctx context.Context, in ConvertInput) (ConvertOutput, error) {
	log := logFor(c.log, in.Context, in.Job.SourceKey)
	out, err := c.convert(ctx, in, log)
	carried := out
	if err == nil {
		carried, err = c.carryOutputs(ctx, in.Job, out)
	}
	c.meter().convert(in, out, err)
	logOutcome(ctx, log, "convert", err, slog.String("job", in.Job.ID), slog.Int("outputs", len(out.Outputs)))
	return carried, boundary(err, in.Context)
}

func (c *Convert) convert(ctx context.Context, in ConvertInput, log *slog.Logger) (_ ConvertOutput, retErr error) {
	job := in.Job
	if job.ID == "" || job.SourceSHA256 == "" {
		return ConvertOutput{}, fault.Systemic("migration.Convert", errors.New("input carries no job (was HashCheck skipped?)"))
	}
	if want, have := job.Recipe.EngineVersion, c.engine.Version(); want != "" && want != have {
		return ConvertOutput{}, fault.Systemic("migration.Convert", fmt.Errorf("the job's recipe names GDAL %s but this worker runs GDAL %s: set GEOMIGRATE_ENGINE_VERSION to the layer's version", want, have))
	}
	if _, err := c.tracker.BeginAttempt(ctx, job.ID, in.Context.Execution, in.Context.State, in.Context.Attempt); err != nil {
		return ConvertOutput{}, leaseError("migration.Convert", err)
	}
	work, err := c.takeWorkDir()
	if err != nil {
		return ConvertOutput{}, localError("migration.Convert: work dir", err)
	}
	defer func() { c.releaseWorkDir(work, retErr == nil && ctx.Err() == nil) }()

	// Outputs are written in the work dir itself (a downloaded source goes
	// to its "src" subdirectory; outputs are named with their format's
	// extension): a directory made and removed per file is not free.
	outDir := work
	outputs, err := c.run(ctx, job, work, outDir)
	if err != nil {
		return ConvertOutput{}, err
	}
	if len(outputs) == 0 {
		return ConvertOutput{}, fault.Data(fault.EmptyDataset, "%s produced no output", job.SourceKey)
	}
	// An output our own validators reject never reaches staging. A COG is
	// written by GDAL from what the source holds, so one that fails
	// validation is a property of the source (odd overviews, tiling or
	// masks): a data outcome, routed to remediation. A GeoParquet or
	// FlatGeobuf is written by our own code: an invalid one is the
	// pipeline's fault, and goes to the DLQ (docs/decisions/0089). So is
	// an output the engine does not vouch for: its fidelity check (same
	// pixels, nodata, georeferencing, masks; same features, fields, layer)
	// ran inside Convert, and an output without its record was not
	// checked.
	for _, o := range outputs {
		if o.Fidelity == nil {
			return ConvertOutput{}, fault.Systemic("migration.Convert", fmt.Errorf("the engine returned %s without a fidelity record: it was not compared with its source", filepath.Base(o.Path)))
		}
		if c.validate == nil {
			return ConvertOutput{}, fault.Systemic("migration.Convert", errors.New("no output validator configured"))
		}
		if err := c.validate(o.Path, o.Format); err != nil {
			if o.Format == recipe.FormatCOG {
				return ConvertOutput{}, fault.DataWrap(fault.CorruptSource, err,
					"the COG written from %s fails validation (%v): the source's structure (overviews, tiling, masks) is unusual; rewrite it (gdal_translate -of GTiff -co TILED=YES SRC FIXED.tif) and upload again", job.SourceKey, err)
			}
			return ConvertOutput{}, fault.Systemic("migration.Convert: validate output", err)
		}
	}
	multi := len(outputs) > 1
	modified, err := c.sourceModified(ctx, job)
	if err != nil {
		return ConvertOutput{}, err
	}
	var res ConvertOutput
	for _, o := range outputs {
		a, err := c.stage(ctx, job, o, multi, modified)
		if err != nil {
			return ConvertOutput{}, err
		}
		for _, w := range o.Warnings {
			log.WarnContext(ctx, "conversion warning", slog.String("output", a.DestKey), slog.String("warning", w))
		}
		res.Outputs = append(res.Outputs, a)
	}
	return res, nil
}

// run converts the source: in place where the store keeps files, through
// ranged reads where the engine can (large objects are never copied whole),
// else from a downloaded copy. Either way the source must still be the
// bytes HashCheck fingerprinted; otherwise the output would be filed under
// the wrong content hash.
func (c *Convert) run(ctx context.Context, job Job, work, outDir string) ([]recipe.Output, error) {
	_, local := c.store.(objectstore.LocalPather)
	if re, ok := c.engine.(recipe.RangeEngine); ok && !local && formats.ReadableByRange(job.SourceKey) {
		// A world file or .aux.xml beside the source carries georeferencing
		// that a ranged read of the source alone would miss.
		sidecars, err := sidecarKeys(ctx, c.store, job)
		if err != nil {
			return nil, fmt.Errorf("migration.Convert: %w", err)
		}
		if len(sidecars) == 0 {
			return c.runByRange(ctx, job, re, outDir)
		}
	}
	src, digest, err := c.localSource(ctx, job, work)
	if err != nil {
		return nil, err
	}
	inPlace := digest == ""
	if !inPlace {
		// The copy GDAL reads was hashed as it was downloaded: it must be
		// the content HashCheck fingerprinted (it cannot change after).
		if err := c.verifySource(job, digest); err != nil {
			return nil, err
		}
	}
	outputs, err := c.engine.Convert(ctx, src, outDir, recipeFor(job))
	if err != nil {
		return nil, fmt.Errorf("migration.Convert: %s: %w", job.SourceKey, err)
	}
	if inPlace {
		// GDAL read the store's own file: its ETag (and its sidecars'),
		// as HashCheck saw them, stand in for hashing it a second time.
		return outputs, c.checkUnchangedInPlace(ctx, job)
	}
	return outputs, nil
}

// recipeFor is the job's recipe with the source's fingerprint, which the
// engine writes into each output beside the recipe hash and versions
// (lineage that survives a copy of the file).
func recipeFor(job Job) recipe.Recipe {
	r := job.Recipe
	r.SourceSHA256, r.SourceFingerprint = job.SourceSHA256, job.Fingerprint
	return r
}

// runByRange converts through ranged reads. The source must be the
// version HashCheck fingerprinted: the bytes HashCheck read and hashed
// (SourceCache) are that version by construction; ranged reads are of
// the version HashCheck's HEAD named (If-Match its ETag), so a source
// rewritten before or during the conversion fails it (SourceChanged)
// without a HEAD before and after (docs/decisions/0109). A job without
// an ETag (a store that keeps none) is checked by HEAD before and after.
func (c *Convert) runByRange(ctx context.Context, job Job, re recipe.RangeEngine, outDir string) ([]recipe.Output, error) {
	if job.Fingerprint == "sha256" {
		// The very bytes that were hashed, so no request at all.
		if data, ok := c.sources.Take(job.SourceBucket, job.SourceKey, job.SourceSHA256); ok && int64(len(data)) == job.SourceSize {
			outputs, err := re.ConvertReader(ctx, bytes.NewReader(data), job.SourceSize, path.Base(job.SourceKey), outDir, recipeFor(job))
			if err != nil {
				return nil, fmt.Errorf("migration.Convert: %s: %w", job.SourceKey, err)
			}
			return outputs, nil
		}
	}
	pinned := job.SourceETag != ""
	if !pinned {
		if err := c.checkUnchanged(ctx, job); err != nil {
			return nil, err
		}
	}
	watch := &changeWatch{ra: objectstore.NewReaderAtWith(ctx, c.store, job.SourceBucket, job.SourceKey, job.SourceSize, c.cfg.SourceReadAhead).IfMatch(job.SourceETag)}
	outputs, err := re.ConvertReader(ctx, watch, job.SourceSize, path.Base(job.SourceKey), outDir, recipeFor(job))
	// A read refused because the source changed or went is the outcome,
	// whatever the engine made of it.
	if cerr := watch.changed(job); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, fmt.Errorf("migration.Convert: %s: %w", job.SourceKey, err)
	}
	if !pinned {
		return outputs, c.checkUnchanged(ctx, job)
	}
	return outputs, nil
}

// changeWatch notes a ranged read refused because the source was
// rewritten (412) or deleted since HashCheck described it.
type changeWatch struct {
	ra   io.ReaderAt
	mu   sync.Mutex
	gone error
}

func (w *changeWatch) ReadAt(p []byte, off int64) (int, error) {
	n, err := w.ra.ReadAt(p, off)
	if err != nil && (errors.Is(err, objectstore.ErrPreconditionFailed) || errors.Is(err, objectstore.ErrNotFound)) {
		w.mu.Lock()
		if w.gone == nil {
			w.gone = err
		}
		w.mu.Unlock()
	}
	return n, err
}

// changed is the data error of a refused read (nil when none was).
func (w *changeWatch) changed(job Job) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.gone == nil:
		return nil
	case errors.Is(w.gone, objectstore.ErrNotFound):
		return fault.Data(fault.SourceNotFound, "s3://%s/%s disappeared during conversion", job.SourceBucket, job.SourceKey)
	}
	return fault.Data(fault.SourceChanged, "s3://%s/%s changed while it was being migrated (it is no longer ETag %s); the new version is migrated by its own event",
		job.SourceBucket, job.SourceKey, job.SourceETag)
}

// checkUnchanged compares the object's ETag and size with what HashCheck
// saw: the ranged reads never see the whole object to hash it again.
func (c *Convert) checkUnchanged(ctx context.Context, job Job) error {
	obj, err := headSource(ctx, c.store, job.SourceBucket, job.SourceKey)
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		return fault.Data(fault.SourceNotFound, "s3://%s/%s disappeared during conversion", job.SourceBucket, job.SourceKey)
	case err != nil:
		return fmt.Errorf("migration.Convert: head source: %w", err)
	case obj.Size != job.SourceSize || (job.SourceETag != "" && obj.ETag != job.SourceETag):
		return fault.Data(fault.SourceChanged, "s3://%s/%s changed while it was being migrated (ETag %s, expected %s); the new version is migrated by its own event",
			job.SourceBucket, job.SourceKey, obj.ETag, job.SourceETag)
	}
	return nil
}

// localSource gives GDAL a local path: the object itself where the store
// keeps files (digest ""), else a copy in the work dir with its sidecars,
// whose bundle digest (bundleDigest) is computed as they are downloaded.
func (c *Convert) localSource(ctx context.Context, job Job, work string) (path, digest string, err error) {
	if lp, ok := c.store.(objectstore.LocalPather); ok && !isDirectorySource(job.SourceKey) {
		if p, err := lp.LocalPath(job.SourceBucket, job.SourceKey); err == nil {
			return p, "", nil
		}
	}
	// Keep the source's base name: drivers pick sidecars and formats by it.
	dir := filepath.Join(work, "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", localError("migration.Convert: download", err)
	}
	if isDirectorySource(job.SourceKey) {
		return c.downloadDirectory(ctx, job, dir)
	}
	dst, mainSum, err := c.download(ctx, job.SourceBucket, job.SourceKey, job.SourceETag, dir)
	if err != nil {
		return "", "", err
	}
	// Sidecars (roads.shx, roads.dbf, roads.prj, dem.tfw …) travel with
	// their main file: GDAL finds them next to it.
	sidecars, err := sidecarKeys(ctx, c.store, job)
	if err != nil {
		return "", "", fmt.Errorf("migration.Convert: %w", err)
	}
	sums := map[string]string{}
	for _, k := range sidecars {
		// One that vanished since HashCheck shows up as SourceChanged.
		_, sum, err := c.download(ctx, job.SourceBucket, k, job.SidecarETags[k], dir)
		switch {
		case errors.Is(err, errSourceGone):
		case err != nil:
			return "", "", err
		default:
			sums[filepath.Base(k)] = sum
		}
	}
	return dst, bundleDigest(filepath.Base(dst), mainSum, sums), nil
}

// checkUnchangedInPlace compares the source and its sidecars with what
// HashCheck saw, by size and ETag (a directory store's ETag of a file it did
// not write changes with its inode, size or modification time).
func (c *Convert) checkUnchangedInPlace(ctx context.Context, job Job) error {
	if err := c.checkUnchanged(ctx, job); err != nil {
		return err
	}
	sidecars, err := listSidecars(ctx, c.store, job.SourceBucket, job.SourceKey)
	if err != nil {
		return fmt.Errorf("migration.Convert: %w", err)
	}
	changed := len(sidecars) != len(job.SidecarETags)
	for _, o := range sidecars {
		if etag, ok := job.SidecarETags[o.Key]; !ok || etag != o.ETag {
			changed = true
		}
	}
	if changed {
		return fault.Data(fault.SourceChanged, "a sidecar of s3://%s/%s changed, appeared or disappeared while it was being migrated; the new version is migrated by its own event",
			job.SourceBucket, job.SourceKey)
	}
	return nil
}

var errSourceGone = errors.New("source gone")

// download copies one object into dir under its base name and returns
// the hex SHA-256 of the bytes written. With etag (as HashCheck saw it)
// only that version is read: a rewritten object is SourceChanged at once,
// fast-fingerprinted sources (not hashed again) included.
func (c *Convert) download(ctx context.Context, bucket, key, etag, dir string) (dst, sum string, err error) {
	var rc io.ReadCloser
	if etag != "" {
		rc, err = c.store.OpenRangeIfMatch(ctx, bucket, key, etag, 0, -1)
	} else {
		rc, err = c.store.Open(ctx, bucket, key)
	}
	if err != nil {
		switch {
		case errors.Is(err, objectstore.ErrNotFound):
			return "", "", fmt.Errorf("%w: %w", errSourceGone, fault.Data(fault.SourceNotFound, "s3://%s/%s disappeared before conversion", bucket, key))
		case errors.Is(err, objectstore.ErrPreconditionFailed):
			return "", "", fault.Data(fault.SourceChanged, "s3://%s/%s changed while it was being migrated (it is no longer ETag %s); the new version is migrated by its own event", bucket, key, etag)
		}
		return "", "", fmt.Errorf("migration.Convert: open source: %w", err)
	}
	defer rc.Close()
	dst = filepath.Join(dir, path.Base(key))
	f, err := os.Create(dst)
	if err != nil {
		return "", "", localError("migration.Convert: download", err)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), rc); err != nil {
		f.Close()
		return "", "", readError("migration.Convert: download "+key, err)
	}
	if err := f.Close(); err != nil {
		return "", "", localError("migration.Convert: download", err)
	}
	return dst, hex.EncodeToString(h.Sum(nil)), nil
}

// verifySource compares the bundle digest of the downloaded copy with the
// job's. A fast fingerprint (a source over the threshold) is not a full
// digest and cannot be compared (docs/decisions/0004, 0083).
func (c *Convert) verifySource(job Job, digest string) error {
	if job.Fingerprint != "sha256" {
		return nil
	}
	if digest != job.SourceSHA256 {
		return fault.Data(fault.SourceChanged, "s3://%s/%s (or a sidecar) changed while it was being migrated (sha256 %s, expected %s); the new version is migrated by its own event",
			job.SourceBucket, job.SourceKey, digest, job.SourceSHA256)
	}
	return nil
}

// stage uploads one output to its staging key with the metadata Promote
// will carry to the final key, and its STAC item beside it (dated
// modified when the file declares no time). Where the store keeps files
// (objectstore.FileMover) the output is renamed into staging after one
// read that computes its SHA-256 and the store's MD5 together; elsewhere it
// is hashed, then uploaded. Digests the engine took while it checked the
// output (recipe.Output.SHA256, MD5) are used as they are.
func (c *Convert) stage(ctx context.Context, job Job, o recipe.Output, multi bool, modified time.Time) (Artifact, error) {
	fm, moves := c.store.(objectstore.FileMover)
	var sum, md5sum string
	var size int64
	var err error
	switch {
	case o.SHA256 != "" && (o.MD5 != "" || !moves):
		// The engine hashed the file as it checked it.
		sum, md5sum = o.SHA256, o.MD5
		var fi os.FileInfo
		if fi, err = os.Stat(o.Path); err == nil {
			size = fi.Size()
		}
	case moves:
		sum, md5sum, size, err = fileDigests(o.Path)
	default:
		sum, size, err = fileSHA256(o.Path)
	}
	if err != nil {
		return Artifact{}, localError("migration.Convert: hash output", err)
	}
	destKey := recipe.OutputKey(c.cfg.DestPrefix, job.SourceKey, o, multi)
	a := Artifact{
		StagingKey:  recipe.OutputKey(job.StagingPrefix, job.SourceKey, o, multi),
		DestKey:     destKey,
		Format:      o.Format,
		ContentType: o.ContentType,
		Layer:       o.Layer,
		SHA256:      sum,
		Size:        size,
		Warnings:    o.Warnings,
		Fidelity:    o.Fidelity,
	}
	// The item first: it describes the output file, which PutFile takes.
	if a.Item, err = c.stageItem(ctx, job, o, a, modified); err != nil {
		return Artifact{}, err
	}
	var staged objectstore.Object
	if moves {
		staged, err = fm.PutFile(ctx, objectstore.PutFileRequest{
			Bucket: job.DestBucket, Key: a.StagingKey, Path: o.Path, MD5: md5sum,
			Metadata: promotedMetadata(job, a), Scratch: true,
		})
	} else {
		staged, err = c.putStaged(ctx, job, a, o.Path)
	}
	if err != nil {
		return Artifact{}, fmt.Errorf("migration.Convert: stage %s: %w", a.StagingKey, err)
	}
	if staged.Size == a.Size {
		a.StagedETag = staged.ETag
	}
	return a, nil
}

func (c *Convert) putStaged(ctx context.Context, job Job, a Artifact, path string) (objectstore.Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return objectstore.Object{}, localError("migration.Convert: open output", err)
	}
	defer f.Close()
	return c.store.Put(ctx, objectstore.PutRequest{
		Bucket: job.DestBucket, Key: a.StagingKey, Body: f, Size: a.Size,
		Metadata: promotedMetadata(job, a), Scratch: true,
	})
}

func promotedMetadata(job Job, a Artifact) map[string]string {
	m := map[string]string{
		objectstore.MetaSourceSHA256: job.SourceSHA256,
		objectstore.MetaRecipe:       job.RecipeHash,
		objectstore.MetaSourceKey:    objectstore.MetaValue(job.SourceBucket + "/" + job.SourceKey),
		objectstore.MetaFingerprint:  job.Fingerprint,
		MetaOutputSHA256:             a.SHA256,
	}
	if a.Fidelity != nil {
		m[MetaFidelity] = a.Fidelity.Summary()
	}
	return m
}

// MetaOutputSHA256 records the output's own SHA-256 beside the source's,
// so a reader can verify a download without trusting ETags.
const MetaOutputSHA256 = "sha256"

// MetaFidelity records what the engine proved equal between the output
// and its source (recipe.Fidelity.Summary).
const MetaFidelity = "fidelity"

// fileDigests reads a file once for its hex SHA-256 and MD5 (the output's
// own digest and a directory store's ETag). The two run side by side on
// each buffer, so the file is read once whatever its size.
func fileDigests(path string) (sha, md5sum string, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", 0, err
	}
	defer f.Close()
	hs, hm := sha256.New(), md5.New()
	buf := digestBuffers.Get().(*[]byte)
	defer digestBuffers.Put(buf)
	for {
		n, rerr := f.Read(*buf)
		if n > 0 {
			b := (*buf)[:n]
			var wg sync.WaitGroup
			if n >= 1<<20 {
				// Large reads hash on two cores: MD5 is the slower of the
				// two and would otherwise add its whole time to the pass.
				wg.Go(func() { hm.Write(b) })
			} else {
				hm.Write(b)
			}
			hs.Write(b)
			wg.Wait()
			size += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return "", "", 0, rerr
		}
	}
	return hex.EncodeToString(hs.Sum(nil)), hex.EncodeToString(hm.Sum(nil)), size, nil
}

// digestBuffers are fileDigests' read buffers (4 MiB: few reads for a large
// output, one for a small one).
var digestBuffers = sync.Pool{New: func() any { b := make([]byte, 4<<20); return &b }}

func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// localError classifies a failure of the worker's own disk. Whatever
// fault.FromOS leaves unclassified is systemic too: local I/O does not heal
// by waiting.
func localError(op string, err error) error {
	if err := fault.FromOS(op, err); fault.TierOf(err) != fault.TierUnknown {
		return err
	}
	return fault.Systemic(op, err)
}

// readError keeps a store's own classification of a failed read (a reset
// stream is transient) and treats the rest as local.
func readError(op string, err error) error {
	if fault.TierOf(err) != fault.TierUnknown {
		return fmt.Errorf("%s: %w", op, err)
	}
	return localError(op, err)
}

// leaseError: another execution took the job over (ours was presumed dead).
// Stopping is right; the DLQ message says why.
func leaseError(op string, err error) error {
	switch {
	case errors.Is(err, statestore.ErrLeaseLost):
		return fault.Systemic(op, err)
	case errors.Is(err, statestore.ErrNotFound):
		return fault.Systemic(op, fmt.Errorf("the job has no state record (was HashCheck skipped?): %w", err))
	}
	return fmt.Errorf("%s: %w", op, err)
}
