// Package quarantine writes the bundle of a job routed to remediation or to
// the dead-letter queue: everything a person needs to understand the
// failure and reproduce it on a workstation, in one place outside the
// output tree (the state directory locally, the operations bucket on AWS:
// a destination holds only outputs and their metadata). A bundle is
//
//	<prefix><job>/<execution>/manifest.json   what failed, where, with what (Manifest)
//	<prefix><job>/<execution>/recipe.json     the resolved recipe
//	<prefix><job>/<execution>/logs.jsonl      the handler log records of that execution
//	<prefix><job>/<execution>/input/<name>    a copy of the input and its sidecars, only when
//	                                          Config.CopyInput and under CopyLimit
//
// By default the input is referenced (URI, SHA-256, size, version), not
// copied: the source stays where it is, and a copy would double what a
// bad archive costs to store.
//
// Bundles are written like outputs: every file to a staging key first, then
// copied to its final key, manifest last, so a manifest is only ever seen
// with its whole bundle. A final key holding anything but this bundle's own
// object (an output) is never overwritten. The package is pure Go over the
// object-store port.
package quarantine

// Size: the quarantine bundle: its manifest types and the writer that stages and promotes it.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Defaults.
const (
	// DefaultPrefix is where bundles go in the destination bucket on AWS
	// (GEOMIGRATE_QUARANTINE_PREFIX). Locally bundles go to
	// DEST/.geomigrate-quarantine/, a bucket of their own.
	DefaultPrefix = ".geomigrate-quarantine/"
	// DefaultCopyLimit is the most input bytes (the source and its
	// sidecars together) a bundle copies when asked to copy, and the most
	// it reads to hash referenced sidecars: 64 MiB keeps a bundle cheap to
	// write from a 60 s Classify and to download; a larger input is
	// referenced (bucket, key, size), not copied.
	DefaultCopyLimit int64 = 64 << 20
	// ManifestVersion is the version of the manifest's shape.
	ManifestVersion = 1
)

// File names inside a bundle.
const (
	ManifestFile = "manifest.json"
	RecipeFile   = "recipe.json"
	LogsFile     = "logs.jsonl"
	InputDir     = "input/"
)

// MetaBundle is the user metadata key every bundle object carries: the
// bundle's directory under the prefix. A final key without it is not the
// bundle's and is never overwritten.
const MetaBundle = "quarantine-bundle"

// Object is one input file: where it is, and where its copy is in the
// bundle.
type Object struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	// URI is s3://bucket/key (file:///path on a local store): what a
	// referenced input is found by.
	URI  string `json:"uri,omitempty"`
	Size int64  `json:"size"`
	// VersionID is the object's version in a versioned bucket.
	VersionID string `json:"version_id,omitempty"`
	// SHA256 is the object's digest: the copy's (computed while copying),
	// or, when referenced, HashCheck's digest of the source (no sidecars)
	// or one read for the occasion (under CopyLimit).
	SHA256 string `json:"sha256,omitempty"`
	// Copy is the path of the copy relative to the bundle directory
	// ("input/dem.tif"); empty when the input is only referenced.
	Copy string `json:"copy,omitempty"`
	// LocalPath is the file's path when the source is a local directory.
	LocalPath string `json:"local_path,omitempty"`
}

// ErrorChain is the failure as the state machine caught it and Classify
// read it.
type ErrorChain struct {
	// Error and Cause are the state machine's, verbatim (the Catch's
	// ResultPath); Cause of a Lambda error is its JSON
	// {errorType, errorMessage}.
	Error string `json:"error"`
	Cause string `json:"cause"`
	// Type is the Go error type name the handler returned (errorType).
	Type string `json:"type,omitempty"`
	// Code is the data error code (CORRUPT_SOURCE, MISSING_CRS …).
	Code string `json:"code,omitempty"`
	// Message is the error text with code and attempt stripped: the
	// wrapped chain, outermost first ("convert: gdal: open: …").
	Message  string `json:"message"`
	Tier     string `json:"tier"`
	Route    string `json:"route"`
	Attempts int    `json:"attempts"`
	Hint     string `json:"hint,omitempty"`
}

// Versions are the software the failure happened under.
type Versions struct {
	Geomigrate string `json:"geomigrate"`
	GDAL       string `json:"gdal,omitempty"`
	PROJ       string `json:"proj,omitempty"`
	// Note says where a version comes from when it is not the writing
	// process's own (Classify on AWS links no GDAL).
	Note string `json:"note,omitempty"`
}

// Logs describes logs.jsonl.
type Logs struct {
	File    string `json:"file,omitempty"`
	Lines   int    `json:"lines"`
	Dropped int    `json:"dropped,omitempty"`
	// Scope says whose records the file holds.
	Scope string `json:"scope"`
	// Query is a CloudWatch Logs Insights query for every handler's
	// records of the execution (AWS).
	Query string `json:"query,omitempty"`
}

// Reproduce is how to run the failure again on a workstation.
type Reproduce struct {
	// Command is one shell line, runnable as is.
	Command string `json:"command"`
	// Input is the source to migrate: a path relative to the bundle
	// directory ("input/dem.tif") when copied, else the source's local path
	// or s3:// URI.
	Input string `json:"input"`
	// Flags are the recipe flags of `geomigrate migrate` (add --dest and
	// an empty directory).
	Flags []string `json:"flags"`
	// Expect is what the command should report for the file.
	Expect Expect `json:"expect"`
	// Caveats name what the command cannot carry (recipe settings without
	// a flag, a GDAL other than the workstation's).
	Caveats []string `json:"caveats,omitempty"`
}

// Expect is the routing a reproduction should end in.
type Expect struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
	Route string `json:"route"`
}

// Manifest is manifest.json.
type Manifest struct {
	Version   int       `json:"version"`
	JobID     string    `json:"job_id"`
	DatasetID string    `json:"dataset_id"`
	Execution string    `json:"execution"`
	FailedAt  time.Time `json:"failed_at"`
	Written   time.Time `json:"written"`
	// Bundle is where the bundle is: s3://bucket/prefix/ or a local
	// directory.
	Bundle string `json:"bundle"`

	Input    Object   `json:"input"`
	Sidecars []Object `json:"sidecars,omitempty"`
	// Copied is true when the input and its sidecars are in input/;
	// otherwise Input and Sidecars reference them where they are.
	Copied    bool   `json:"copied"`
	CopyLimit int64  `json:"copy_limit"`
	NotCopied string `json:"not_copied,omitempty"` // why not
	// SourceSHA256 is the job's content digest (the source's, or the
	// digest over source and sidecars), as HashCheck computed it.
	SourceSHA256 string `json:"source_sha256,omitempty"`

	Error      ErrorChain      `json:"error"`
	Logs       Logs            `json:"logs"`
	Versions   Versions        `json:"versions"`
	RecipeHash string          `json:"recipe_hash,omitempty"`
	Recipe     json.RawMessage `json:"recipe"`
	Reproduce  Reproduce       `json:"reproduce"`
}

// Failure is what the router knows about a routed job.
type Failure struct {
	JobID, DatasetID, Execution string
	SourceBucket, SourceKey     string
	SourceSHA256, RecipeHash    string
	// Recipe is the resolved recipe the job ran (or would have run) with.
	Recipe   recipe.Recipe
	Error    ErrorChain
	FailedAt time.Time
}

// Ref locates a written bundle.
type Ref struct {
	Bucket string `json:"bucket"`
	Prefix string `json:"prefix"` // ends in "/"
	// Location is s3://bucket/prefix or, on a local store, the bundle's
	// directory.
	Location string `json:"location"`
}

// Config configures a Writer.
type Config struct {
	// Store holds the bundle bucket and reads the sources.
	Store objectstore.Store
	// Bucket and Prefix are where bundles go; StagingPrefix (in the same
	// bucket) is where they are written first.
	Bucket, Prefix, StagingPrefix string
	// CopyInput copies the input and its sidecars into the bundle; by
	// default they are referenced. CopyLimit bounds the input bytes copied
	// (0: DefaultCopyLimit, <0: never copy).
	CopyInput bool
	CopyLimit int64
	Versions  Versions
	// Logs, when set, supplies the execution's log records.
	Logs *LogBook
	// LogScope describes what Logs holds (Logs.Scope); LogQuery, when set,
	// is a CloudWatch Logs Insights query template in which %s is the
	// execution ARN.
	LogScope, LogQuery string
	Now                func() time.Time
}

// Writer writes bundles.
type Writer struct{ cfg Config }

// NewWriter checks cfg and returns a Writer.
func NewWriter(cfg Config) (*Writer, error) {
	switch {
	case cfg.Store == nil || cfg.Bucket == "":
		return nil, errors.New("quarantine.NewWriter: a store and a bucket are required")
	case cfg.Prefix != "" && !strings.HasSuffix(cfg.Prefix, "/"):
		return nil, fmt.Errorf("quarantine.NewWriter: prefix %q must end in /", cfg.Prefix)
	case cfg.StagingPrefix == "" || !strings.HasSuffix(cfg.StagingPrefix, "/"):
		return nil, fmt.Errorf("quarantine.NewWriter: staging prefix %q must be set and end in /", cfg.StagingPrefix)
	case cfg.Prefix == "" && !strings.HasPrefix(cfg.StagingPrefix, "_"):
		// A bucket of their own (local runs): bundles and staging side by
		// side, told apart because a job directory never starts with _.
		return nil, fmt.Errorf("quarantine.NewWriter: with an empty prefix the staging prefix %q must start with _", cfg.StagingPrefix)
	case cfg.Prefix != "" && (strings.HasPrefix(cfg.StagingPrefix, cfg.Prefix) || strings.HasPrefix(cfg.Prefix, cfg.StagingPrefix)):
		return nil, fmt.Errorf("quarantine.NewWriter: prefix %q and staging prefix %q overlap", cfg.Prefix, cfg.StagingPrefix)
	}
	if cfg.CopyLimit == 0 {
		cfg.CopyLimit = DefaultCopyLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Writer{cfg: cfg}, nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// dirName makes a job ID or execution name one safe path element: job IDs
// hold ':' (and '/' before HashCheck), which some workstations refuse.
func dirName(s string) string {
	d := strings.Trim(unsafeChars.ReplaceAllString(s, "_"), "._")
	if d == "" {
		d = "unnamed"
	}
	if len(d) > 160 {
		sum := sha256.Sum256([]byte(s))
		d = d[:140] + "-" + hex.EncodeToString(sum[:8])
	}
	return d
}

// Dir is the bundle directory (under the prefix) of a job's execution.
func Dir(jobID, execution string) string {
	return dirName(jobID) + "/" + dirName(execution[strings.LastIndex(execution, ":")+1:]) + "/"
}

// file is one bundle file staged and waiting for its final key.
type file struct{ name, staged string }

// Write writes the bundle of f and returns where it is. The error, if any,
// is the caller's to log: routing never waits on a bundle.
func (w *Writer) Write(ctx context.Context, f Failure) (Ref, error) {
	dir := Dir(f.JobID, f.Execution)
	ref := Ref{Bucket: w.cfg.Bucket, Prefix: w.cfg.Prefix + dir}
	ref.Location = "s3://" + w.cfg.Bucket + "/" + ref.Prefix
	staging := w.cfg.StagingPrefix + dir
	meta := map[string]string{MetaBundle: strings.TrimSuffix(dir, "/")}
	m := Manifest{Version: ManifestVersion, JobID: f.JobID, DatasetID: f.DatasetID, Execution: f.Execution,
		FailedAt: f.FailedAt, Written: w.cfg.Now().UTC(), Bundle: ref.Location, CopyLimit: w.cfg.CopyLimit,
		SourceSHA256: f.SourceSHA256, Error: f.Error, Versions: w.cfg.Versions, RecipeHash: f.RecipeHash}
	if m.Versions.GDAL == "" && f.Recipe.EngineVersion != "" {
		m.Versions.GDAL = f.Recipe.EngineVersion
		m.Versions.Note = "GDAL is the release the recipe pins (Convert refuses another); PROJ is that of the GDAL layer"
	}
	var staged []file
	var failed []string // staged keys whose Put failed: the object may exist all the same
	put := func(name string, body []byte) error {
		if _, err := w.cfg.Store.Put(ctx, objectstore.PutRequest{Bucket: w.cfg.Bucket, Key: staging + name,
			Body: bytes.NewReader(body), Size: int64(len(body)), Metadata: meta}); err != nil {
			failed = append(failed, staging+name)
			return fmt.Errorf("quarantine: stage %s: %w", name, err)
		}
		staged = append(staged, file{name, staging + name})
		return nil
	}
	defer func() {
		// Staging is removed whether or not the bundle was finished.
		for _, s := range staged {
			failed = append(failed, s.staged)
		}
		w.removeStaged(context.WithoutCancel(ctx), failed)
	}()

	var err error
	if m.Recipe, err = json.MarshalIndent(f.Recipe.WithDefaults(), "", "  "); err != nil {
		return ref, fmt.Errorf("quarantine: %w", err)
	}
	if err := put(RecipeFile, append(m.Recipe, '\n')); err != nil {
		return ref, err
	}
	if dir, ok := w.localDir(staging+RecipeFile, ref.Prefix); ok {
		ref.Location, m.Bundle = dir, dir
	}
	m.Logs = Logs{Scope: w.cfg.LogScope}
	if w.cfg.LogQuery != "" {
		m.Logs.Query = fmt.Sprintf(w.cfg.LogQuery, f.Execution)
	}
	if w.cfg.Logs != nil {
		lines, dropped := w.cfg.Logs.Take(f.Execution)
		var b bytes.Buffer
		for _, l := range lines {
			b.Write(l)
			b.WriteByte('\n')
		}
		m.Logs.File, m.Logs.Lines, m.Logs.Dropped = LogsFile, len(lines), dropped
		if err := put(LogsFile, b.Bytes()); err != nil {
			return ref, err
		}
	}
	staged = append(staged, w.stageInputs(ctx, f, &m, staging, meta)...)
	m.Reproduce = w.reproduce(f, m, ref)
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return ref, fmt.Errorf("quarantine: %w", err)
	}
	if err := put(ManifestFile, append(manifest, '\n')); err != nil {
		return ref, err
	}
	// The manifest was staged last and is promoted last: its presence
	// means the bundle is whole.
	for _, s := range staged {
		if err := w.promote(ctx, s.staged, ref.Prefix+s.name, meta); err != nil {
			return ref, err
		}
	}
	return ref, nil
}

// localDir is, on a store of local files, the directory the bundle will
// be in, found from the file of an object already staged.
func (w *Writer) localDir(staged, prefix string) (string, bool) {
	lp, ok := w.cfg.Store.(objectstore.LocalPather)
	if !ok {
		return "", false
	}
	p, err := lp.LocalPath(w.cfg.Bucket, staged)
	if err != nil {
		return "", false
	}
	root, ok := strings.CutSuffix(p, filepath.FromSlash(staged))
	if !ok {
		return "", false
	}
	return filepath.Join(root, filepath.FromSlash(prefix)), true
}

// stageInputs lists the source and its sidecars, and copies them to
// staging when together they fit CopyLimit. What it cannot do is said in
// m.NotCopied: the rest of the bundle is worth writing regardless.
func (w *Writer) stageInputs(ctx context.Context, f Failure, m *Manifest, staging string, meta map[string]string) []file {
	s := w.cfg.Store
	m.Input = Object{Bucket: f.SourceBucket, Key: f.SourceKey}
	main, err := s.Head(ctx, f.SourceBucket, f.SourceKey)
	if err != nil {
		m.NotCopied = "the source cannot be read: " + err.Error()
		return nil
	}
	m.Input.Size = main.Size
	dir, base := path.Split(f.SourceKey)
	// Sidecars start with the stem ("dem.tfw", "dem_RPC.TXT").
	err = s.List(ctx, f.SourceBucket, dir+formats.Stem(base), func(o objectstore.Object) error {
		rest := strings.TrimPrefix(o.Key, dir)
		if !strings.Contains(rest, "/") && formats.SidecarOf(base, rest) {
			m.Sidecars = append(m.Sidecars, Object{Bucket: o.Bucket, Key: o.Key, Size: o.Size})
		}
		return nil
	})
	if err != nil {
		m.NotCopied = "the sidecars cannot be listed: " + err.Error()
		return nil
	}
	all := append([]*Object{&m.Input}, ptrs(m.Sidecars)...)
	total := int64(0)
	for _, o := range all {
		total += o.Size
		o.URI = "s3://" + o.Bucket + "/" + o.Key
		if lp, ok := s.(objectstore.LocalPather); ok {
			if p, err := lp.LocalPath(o.Bucket, o.Key); err == nil {
				o.LocalPath = p
				o.URI = (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
			}
		}
	}
	m.Input.VersionID = main.VersionID
	switch {
	case !w.cfg.CopyInput:
		m.NotCopied = "referenced, not copied (copying is --quarantine-copy-input)"
		w.digestReferences(ctx, f, all, total)
		return nil
	case w.cfg.CopyLimit < 0 || total > w.cfg.CopyLimit:
		m.NotCopied = fmt.Sprintf("%d bytes with sidecars, over the copy limit of %d: referenced, not copied", total, max(w.cfg.CopyLimit, 0))
		w.digestReferences(ctx, f, all, total)
		return nil
	}
	var staged []file
	for _, o := range all {
		name := InputDir + path.Base(o.Key)
		sum, err := w.copyIn(ctx, *o, staging+name, meta)
		if err != nil {
			// A bundle without the copy is still worth having: the
			// references stay, the partial copy goes (with the key whose
			// Put failed: a response lost after success leaves it).
			keys := []string{staging + name}
			for _, s := range staged {
				keys = append(keys, s.staged)
			}
			w.removeStaged(context.WithoutCancel(ctx), keys)
			for _, o := range all {
				o.SHA256, o.Copy = "", ""
			}
			m.NotCopied = "copy failed: " + err.Error()
			return nil
		}
		staged = append(staged, file{name, staging + name})
		o.SHA256, o.Copy = sum, name
	}
	m.Copied = true
	return staged
}

func ptrs(os []Object) []*Object {
	out := make([]*Object, len(os))
	for i := range os {
		out[i] = &os[i]
	}
	return out
}

// removeStaged deletes staged keys, retrying each a few times: a key left
// behind is only expired by the staging lifecycle rule (AWS) or the next
// local run's sweep.
func (w *Writer) removeStaged(ctx context.Context, keys []string) {
	for _, k := range keys {
		for attempt := range 5 {
			if w.cfg.Store.Delete(ctx, w.cfg.Bucket, k) == nil {
				break
			}
			time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
		}
	}
}

// digestReferences gives referenced objects their SHA-256: HashCheck's
// digest is the source's own when it has no sidecars; otherwise each is
// read and hashed when together they fit CopyLimit (a larger input keeps
// its size and version only, rather than make routing read gigabytes).
func (w *Writer) digestReferences(ctx context.Context, f Failure, all []*Object, total int64) {
	if len(all) == 1 && f.SourceSHA256 != "" {
		all[0].SHA256 = f.SourceSHA256
		return
	}
	if total > max(w.cfg.CopyLimit, DefaultCopyLimit) {
		return
	}
	for _, o := range all {
		rc, err := w.cfg.Store.Open(ctx, o.Bucket, o.Key)
		if err != nil {
			continue
		}
		h := sha256.New()
		if _, err := io.Copy(h, rc); err == nil {
			o.SHA256 = hex.EncodeToString(h.Sum(nil))
		}
		rc.Close()
	}
}

// copyIn streams one source object to a staging key, hashing it on the way.
func (w *Writer) copyIn(ctx context.Context, o Object, key string, meta map[string]string) (string, error) {
	rc, err := w.cfg.Store.Open(ctx, o.Bucket, o.Key)
	if err != nil {
		return "", fmt.Errorf("quarantine: read %s/%s: %w", o.Bucket, o.Key, err)
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := w.cfg.Store.Put(ctx, objectstore.PutRequest{Bucket: w.cfg.Bucket, Key: key,
		Body: io.TeeReader(rc, h), Size: o.Size, Metadata: meta}); err != nil {
		return "", fmt.Errorf("quarantine: copy %s/%s: %w", o.Bucket, o.Key, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// promote copies a staged file to its final key: only when the key is
// free or already holds this bundle's object (a retried Classify). The
// conditional copy comes first: a Head of a missing key needs
// s3:ListBucket on the whole bucket to answer 404 rather than 403, a grant
// the routing functions do not have.
func (w *Writer) promote(ctx context.Context, staged, final string, meta map[string]string) error {
	req := objectstore.CopyRequest{SrcBucket: w.cfg.Bucket, SrcKey: staged, DstBucket: w.cfg.Bucket, DstKey: final, Metadata: meta, IfNoneMatch: true}
	_, err := w.cfg.Store.Copy(ctx, req)
	if !errors.Is(err, objectstore.ErrPreconditionFailed) {
		if err != nil {
			return fmt.Errorf("quarantine: promote %s: %w", final, err)
		}
		return nil
	}
	cur, err := w.cfg.Store.Head(ctx, w.cfg.Bucket, final)
	switch {
	case err != nil:
		return fmt.Errorf("quarantine: head %s: %w", final, err)
	case cur.Metadata[MetaBundle] != meta[MetaBundle]:
		return fmt.Errorf("quarantine: %s holds an object that is not this bundle's; not overwritten", final)
	}
	req.IfNoneMatch, req.IfMatch = false, cur.ETag
	if _, err := w.cfg.Store.Copy(ctx, req); err != nil {
		return fmt.Errorf("quarantine: promote %s: %w", final, err)
	}
	return nil
}

// reproduce builds the command that runs the failure again.
func (w *Writer) reproduce(f Failure, m Manifest, ref Ref) Reproduce {
	r := f.Recipe.WithDefaults()
	rep := Reproduce{
		Flags:  []string{"--vector-format", r.VectorFormat, "--zstd-level", strconv.Itoa(r.ZSTDLevel)},
		Expect: Expect{Error: f.Error.Error, Code: f.Error.Code, Route: f.Error.Route},
	}
	rep.Caveats = recipeCaveats(r)
	if f.Error.Error != "DataError" {
		rep.Caveats = append(rep.Caveats, f.Error.Error+" is not a data error: the input alone may not reproduce it (see the cause and the logs)")
	}
	if m.Versions.GDAL != "" {
		rep.Caveats = append(rep.Caveats, "the failure happened under GDAL "+m.Versions.GDAL+"; another release may read the file differently")
	}
	dest := `--dest "$(mktemp -d)"`
	flags := shellJoin(rep.Flags)
	base := path.Base(f.SourceKey)
	local := !strings.HasPrefix(ref.Location, "s3://")
	switch {
	case m.Copied && local:
		rep.Input = InputDir + base
		rep.Command = "geomigrate migrate " + shellQuote(filepath.Join(ref.Location, "input", base)) + " " + dest + " " + flags
	case m.Copied:
		rep.Input = InputDir + base
		rep.Command = "aws s3 cp --recursive " + shellQuote(ref.Location) + " geomigrate-bundle && geomigrate migrate " +
			shellQuote("geomigrate-bundle/input/"+base) + " " + dest + " " + flags
	case m.Input.LocalPath != "":
		rep.Input = m.Input.LocalPath
		rep.Command = "geomigrate migrate " + shellQuote(m.Input.LocalPath) + " " + dest + " " + flags
	default:
		rep.Input = "s3://" + f.SourceBucket + "/" + f.SourceKey
		cmd := "mkdir -p geomigrate-input"
		for _, o := range append([]Object{m.Input}, m.Sidecars...) {
			cmd += " && aws s3 cp " + shellQuote("s3://"+o.Bucket+"/"+o.Key) + " geomigrate-input/"
		}
		rep.Command = cmd + " && geomigrate migrate " + shellQuote("geomigrate-input/"+base) + " " + dest + " " + flags
	}
	return rep
}

// recipeCaveats names the recipe settings `geomigrate migrate` has no flag
// for and that differ from the default: the command runs with the
// default.
func recipeCaveats(r recipe.Recipe) []string {
	d := recipe.DefaultRecipe()
	var out []string
	check := func(name string, got, want any) {
		if got != want {
			out = append(out, fmt.Sprintf("recipe %s is %v; migrate has no flag for it and runs with %v", name, got, want))
		}
	}
	check("raster_format", r.RasterFormat, d.RasterFormat)
	check("block_size", r.BlockSize, d.BlockSize)
	check("overview_resampling", r.OverviewResampling, d.OverviewResampling)
	check("geometry_policy", r.GeometryPolicy, d.GeometryPolicy)
	if rd := r.WithDefaults(); rd.Curves != d.Curves {
		check("curves", rd.Curves+fmt.Sprintf(" (curve_step_degrees %g)", rd.CurveStepDegrees), d.Curves)
	}
	check("row_group_rows", r.RowGroupRows, d.RowGroupRows)
	check("max_bytes", r.MaxBytes, d.MaxBytes)
	check("max_pixels", r.MaxPixels, d.MaxPixels)
	check("max_features", r.MaxFeatures, d.MaxFeatures)
	check("max_memory", r.MaxMemory, d.MaxMemory)
	return out
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}
