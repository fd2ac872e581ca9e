package migration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/stac"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// fakeEngine "converts" by prefixing the source bytes; a source starting
// with "BAD:<Code>" is refused with that data error code. Like the real
// engine it checks its output against the source and records that in
// Output.Fidelity (unless noFidelity); recipe is the last recipe it got.
type fakeEngine struct {
	calls      int
	noFidelity bool
	recipe     recipe.Recipe
	// sha256, when set, is given as the output's digest (Output.SHA256),
	// as the real engine gives the one it took while checking.
	sha256 string
}

func (e *fakeEngine) Version() string { return "fake-1" }

func (e *fakeEngine) Convert(ctx context.Context, src, workDir string, r recipe.Recipe) ([]recipe.Output, error) {
	e.calls++
	e.recipe = r
	b, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	if code, ok := bytes.CutPrefix(b, []byte("BAD:")); ok {
		return nil, fault.Data(fault.Code(strings.TrimSpace(string(code))), "fake refusal of %s", filepath.Base(src))
	}
	out := filepath.Join(workDir, "out.tif")
	if err := os.WriteFile(out, append([]byte("COG:"), b...), 0o644); err != nil {
		return nil, err
	}
	info := recipe.Formats[recipe.FormatCOG]
	o := recipe.Output{Path: out, Format: info.Format, Extension: info.Extension, ContentType: info.ContentType, Kind: info.Kind}
	if !e.noFidelity {
		written, err := os.ReadFile(out)
		if err != nil || !bytes.Equal(written, append([]byte("COG:"), b...)) {
			return nil, fault.Systemic("fake fidelity", fmt.Errorf("output differs from source: %v", err))
		}
		o.Fidelity = &recipe.Fidelity{Checks: []string{"bytes"}}
	}
	o.SHA256 = e.sha256
	return []recipe.Output{o}, nil
}

// fakeValidator accepts the fake engine's outputs ("COG:" + source) and
// nothing else.
func fakeValidator(path, format string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(b, []byte("COG:")) {
		return errors.New("not a fake COG")
	}
	return nil
}

type fixture struct {
	store    *memstore.Store
	tracker  *statestore.Tracker
	engine   *fakeEngine
	cfg      Config
	hash     *HashCheck
	convert  *Convert
	promote  *Promote
	classify *Classify
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{store: memstore.New("src", "dest"), engine: &fakeEngine{}}
	f.tracker = statestore.NewTracker(statestoretest.NewMemory())
	f.cfg = Config{DestBucket: "dest", WorkDir: t.TempDir(), Recipe: recipe.Recipe{EngineVersion: "fake-1", ToolVersion: "test"}}
	quiet := slog.New(slog.DiscardHandler)
	f.hash = NewHashCheck(f.cfg, f.store, f.tracker, StoreFingerprinter{Store: f.store, Threshold: 1 << 20}, quiet)
	f.convert = NewConvert(f.cfg, f.store, f.tracker, f.engine, fakeValidator, quiet)
	f.promote = NewPromote(f.cfg, f.store, f.tracker, quiet)
	f.classify = NewClassify(f.tracker, nil, quiet)
	return f
}

func (f *fixture) put(t *testing.T, key, body string) {
	t.Helper()
	_, err := f.store.Put(context.Background(), objectstore.PutRequest{Bucket: "src", Key: key, Body: strings.NewReader(body), Size: int64(len(body))})
	if err != nil {
		t.Fatal(err)
	}
}

func inv(exec string, attempt int) Invocation {
	return Invocation{Execution: exec, State: "S", Attempt: attempt}
}

// converted puts body at key in the source bucket and runs HashCheck and
// Convert on it as execution exec.
func (f *fixture) converted(t *testing.T, exec, key, body string) (HashCheckOutput, ConvertOutput) {
	t.Helper()
	f.put(t, key, body)
	hc := f.check(t, exec, key)
	conv, err := f.convert.Handle(context.Background(), ConvertInput{Job: hc.Job, Context: inv(exec, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return hc, conv
}

// check runs HashCheck on a key of the source bucket as execution exec.
func (f *fixture) check(t *testing.T, exec, key string) HashCheckOutput {
	t.Helper()
	out, err := f.hash.Handle(context.Background(), HashCheckInput{Source: Source{Bucket: "src", Key: key}, Context: inv(exec, 0)})
	if err != nil {
		t.Fatalf("hashcheck %s: %v", key, err)
	}
	return out
}

// migrate runs HashCheck → Convert → Promote the way the state machine
// does on the happy path.
func (f *fixture) migrate(t *testing.T, exec, key string) HashCheckOutput {
	t.Helper()
	ctx := context.Background()
	hc, err := f.hash.Handle(ctx, HashCheckInput{Source: Source{Bucket: "src", Key: key}, Context: inv(exec, 0)})
	if err != nil {
		t.Fatalf("hashcheck %s: %v", key, err)
	}
	if hc.Decision != DecisionConvert {
		return hc
	}
	conv, err := f.convert.Handle(ctx, ConvertInput{Job: hc.Job, Context: inv(exec, 0)})
	if err != nil {
		t.Fatalf("convert %s: %v", key, err)
	}
	if _, err := f.promote.Handle(ctx, PromoteInput{Job: hc.Job, Converted: conv, Context: inv(exec, 0)}); err != nil {
		t.Fatalf("promote %s: %v", key, err)
	}
	return hc
}

func TestMigrateThenSkip(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.put(t, "a/dem.img", "raster-bytes")
	hc := f.migrate(t, "exec-1", "a/dem.img")
	if hc.Decision != DecisionConvert || hc.Job.DestKey != "a/dem.tif" {
		t.Fatalf("first run: %+v", hc)
	}
	obj, err := f.store.Head(ctx, "dest", "a/dem.tif")
	if err != nil {
		t.Fatal(err)
	}
	if obj.Metadata[objectstore.MetaSourceSHA256] != hc.Job.SourceSHA256 || obj.Metadata[objectstore.MetaRecipe] != hc.Job.RecipeHash {
		t.Fatalf("final object metadata = %v", obj.Metadata)
	}
	// The output, its STAC item, the root catalog and the dataset's
	// collection; no staging.
	if keys := f.store.Keys("dest"); !slices.Equal(keys, []string{"a/dem.tif", "a/dem.tif" + stac.ItemSuffix, CatalogKey(""), CollectionKey("", "src")}) {
		t.Fatalf("dest holds %v; staging must be gone", keys)
	}
	rec, err := f.tracker.Get(ctx, hc.Job.ID)
	if err != nil || rec.Status != statestore.Completed || rec.DestKey != "a/dem.tif" {
		t.Fatalf("state = %+v, %v", rec, err)
	}
	again := f.migrate(t, "exec-2", "a/dem.img")
	if again.Decision != DecisionSkip || again.Reason != ReasonAlreadyMigrated || f.engine.calls != 1 {
		t.Fatalf("second run = %s/%s after %d conversions", again.Decision, again.Reason, f.engine.calls)
	}
	// Changed content is a new job and converts again.
	f.put(t, "a/dem.img", "raster-bytes-v2")
	if third := f.migrate(t, "exec-3", "a/dem.img"); third.Decision != DecisionConvert || f.engine.calls != 2 {
		t.Fatalf("changed source: %s after %d conversions", third.Decision, f.engine.calls)
	}
}

func TestHashCheckDecisions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		setup      func(t *testing.T, f *fixture)
		src        Source
		exec       string
		wantDecide string
		wantReason string
		wantCode   fault.Code
	}{
		{name: "new source is claimed", setup: func(t *testing.T, f *fixture) { f.put(t, "x.tif", "x") },
			src: Source{Bucket: "src", Key: "x.tif"}, exec: "e1", wantDecide: DecisionConvert},
		{name: "URL-encoded key is decoded", setup: func(t *testing.T, f *fixture) { f.put(t, "my dir/x ü.tif", "x") },
			src: Source{Bucket: "src", Key: "my+dir/x+%C3%BC.tif", KeyEncoding: "url"}, exec: "e1", wantDecide: DecisionConvert},
		{name: "raw key kept when the event did not encode", setup: func(t *testing.T, f *fixture) { f.put(t, "a+b.tif", "x") },
			src: Source{Bucket: "src", Key: "a+b.tif", KeyEncoding: "url"}, exec: "e1", wantDecide: DecisionConvert},
		{name: "lease held by another execution", setup: func(t *testing.T, f *fixture) {
			f.put(t, "x.tif", "x")
			f.check(t, "other", "x.tif")
		}, src: Source{Bucket: "src", Key: "x.tif"}, exec: "e1", wantDecide: DecisionSkip, wantReason: ReasonInProgress},
		{name: "retried hashcheck of the lease holder", setup: func(t *testing.T, f *fixture) {
			f.put(t, "x.tif", "x")
			f.check(t, "e1", "x.tif")
		}, src: Source{Bucket: "src", Key: "x.tif"}, exec: "e1", wantDecide: DecisionConvert},
		{name: "destination already carries the hash: adopted", setup: func(t *testing.T, f *fixture) {
			f.put(t, "x.tif", "x")
			hc, _ := f.hash.check(ctx, HashCheckInput{Source: Source{Bucket: "src", Key: "x.tif"}, Context: inv("probe", 0)})
			f.tracker = statestore.NewTracker(statestoretest.NewMemory())
			f.hash = NewHashCheck(f.cfg, f.store, f.tracker, StoreFingerprinter{Store: f.store}, slog.New(slog.DiscardHandler))
			_, err := f.store.Put(ctx, objectstore.PutRequest{Bucket: "dest", Key: "x.tif", Body: strings.NewReader("cog"), Size: 3,
				Metadata: map[string]string{objectstore.MetaSourceSHA256: hc.Job.SourceSHA256, objectstore.MetaRecipe: hc.Job.RecipeHash}})
			if err != nil {
				t.Fatal(err)
			}
		}, src: Source{Bucket: "src", Key: "x.tif"}, exec: "e1", wantDecide: DecisionSkip, wantReason: ReasonAlreadyMigrated},
		{name: "sidecar is not a source", setup: func(t *testing.T, f *fixture) { f.put(t, "roads.dbf", "x") },
			src: Source{Bucket: "src", Key: "roads.dbf"}, exec: "e1", wantDecide: DecisionSkip, wantReason: ReasonSidecar},
		{name: "console folder marker is skipped, not a data error", setup: func(t *testing.T, f *fixture) { f.put(t, "incoming/2024/", "") },
			src: Source{Bucket: "src", Key: "incoming/2024/", KeyEncoding: "url"}, exec: "e1", wantDecide: DecisionSkip, wantReason: ReasonFolderMarker},
		{name: "URL-encoded folder marker, deleted since, is still skipped", setup: func(t *testing.T, f *fixture) {},
			src: Source{Bucket: "src", Key: "my+folder%2F", KeyEncoding: "url"}, exec: "e1", wantDecide: DecisionSkip, wantReason: ReasonFolderMarker},
		{name: "missing source is a data error", setup: func(t *testing.T, f *fixture) {},
			src: Source{Bucket: "src", Key: "gone.tif"}, exec: "e1", wantCode: fault.SourceNotFound},
		{name: "pipeline outputs are not sources", setup: func(t *testing.T, f *fixture) {
			_, _ = f.store.Put(ctx, objectstore.PutRequest{Bucket: "dest", Key: "_staging/x.tif", Body: strings.NewReader("x"), Size: 1})
		}, src: Source{Bucket: "dest", Key: "_staging/x.tif"}, exec: "e1", wantCode: fault.InvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			tt.setup(t, f)
			out, err := f.hash.Handle(ctx, HashCheckInput{Source: tt.src, Context: inv(tt.exec, 0)})
			if tt.wantCode != "" {
				var de *fault.DataError
				if !errors.As(err, &de) || de.Code != tt.wantCode {
					t.Fatalf("err = %v, want DataError %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.Decision != tt.wantDecide || out.Reason != tt.wantReason {
				t.Fatalf("decision = %s/%s, want %s/%s", out.Decision, out.Reason, tt.wantDecide, tt.wantReason)
			}
		})
	}
}

func TestPromoteIsIdempotentAndConditional(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	hc, conv := f.converted(t, "e1", "x.tif", "x")
	in := PromoteInput{Job: hc.Job, Converted: conv, Context: inv("e1", 0)}
	if _, err := f.promote.Handle(ctx, in); err != nil {
		t.Fatal(err)
	}
	// A retry after success (the response was lost) changes nothing.
	in.Context.Attempt = 1
	if _, err := f.promote.Handle(ctx, in); err != nil {
		t.Fatalf("second promote: %v", err)
	}
	// Another source mapping to the same final key is refused, not overwritten.
	f.put(t, "x.img", "y")
	hc2 := f.check(t, "e2", "x.img")
	conv2, err := f.convert.Handle(ctx, ConvertInput{Job: hc2.Job, Context: inv("e2", 0)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.promote.Handle(ctx, PromoteInput{Job: hc2.Job, Converted: conv2, Context: inv("e2", 0)})
	var de *fault.DataError
	if !errors.As(err, &de) || de.Code != fault.DestinationTaken {
		t.Fatalf("err = %v, want DestinationConflict", err)
	}
	rc, err := f.store.Open(ctx, "dest", "x.tif")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "COG:x" {
		t.Fatalf("final key holds %q", b)
	}
}

func TestConvertRefusesAChangedSource(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.put(t, "x.tif", "x")
	hc := f.check(t, "e1", "x.tif")
	f.put(t, "x.tif", "x2")
	_, err := f.convert.Handle(ctx, ConvertInput{Job: hc.Job, Context: inv("e1", 0)})
	var de *fault.DataError
	if !errors.As(err, &de) || de.Code != fault.SourceChanged {
		t.Fatalf("err = %v, want SourceChanged", err)
	}
	if f.engine.calls != 0 {
		t.Errorf("the engine converted a download that was hashed as it came and did not match (%d calls)", f.engine.calls)
	}
	if keys := f.store.Keys("dest"); len(keys) != 0 {
		t.Fatalf("dest holds %v after a refused conversion", keys)
	}
}

// TestBoundaryErrorsKeepTheirTypeName checks what aws-lambda-go will report
// as errorType: the bare taxonomy type, never a wrapper.
func TestBoundaryErrorsKeepTheirTypeName(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.put(t, "bad.tif", "BAD:MissingCRS")
	hc := f.check(t, "e1", "bad.tif")
	_, err := f.convert.Handle(ctx, ConvertInput{Job: hc.Job, Context: inv("e1", 2)})
	if got := reflect.TypeOf(err).Elem().Name(); got != "DataError" {
		t.Fatalf("errorType = %s (%v)", got, err)
	}
	msg, attempt := fault.ParseAttempt(err.Error())
	if attempt != 3 || !strings.HasPrefix(msg, "MissingCRS: ") {
		t.Fatalf("message %q attempt %d", msg, attempt)
	}
}

func lambdaCauseOf(t *testing.T, typ, msg string) string {
	b, err := json.Marshal(map[string]any{"errorMessage": msg, "errorType": typ, "stackTrace": []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestClassify(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name         string
		err          CaughtError
		claimed      bool
		wantTier     fault.Tier
		wantRoute    string
		wantStatus   statestore.Status
		wantCode     string
		wantAttempts int
	}{
		{"data error goes to remediation", CaughtError{"DataError", lambdaCauseOf(t, "DataError", "MissingCRS: no CRS [attempt 1]")}, true,
			fault.TierDataSpecific, RouteRemediation, statestore.Remedial, "MissingCRS", 1},
		{"exhausted transient goes to the DLQ", CaughtError{"TransientError", lambdaCauseOf(t, "TransientError", "objectstore.Put: SlowDown [attempt 5]")}, true,
			fault.TierTransient, RouteDeadLetter, statestore.Quarantined, "", 5},
		{"systemic goes to the DLQ", CaughtError{"SystemicError", lambdaCauseOf(t, "SystemicError", "AccessDenied [attempt 1]")}, true,
			fault.TierSystemic, RouteDeadLetter, statestore.Quarantined, "", 1},
		{"lambda service error", CaughtError{"Lambda.ServiceException", "Lambda is unavailable"}, true,
			fault.TierTransient, RouteDeadLetter, statestore.Quarantined, "", 0},
		{"task timeout", CaughtError{"States.Timeout", ""}, true,
			fault.TierSystemic, RouteDeadLetter, statestore.Quarantined, "", 0},
		{"unknown error type", CaughtError{"errorString", lambdaCauseOf(t, "errorString", "boom")}, true,
			fault.TierUnknown, RouteDeadLetter, statestore.Quarantined, "", 0},
		{"failure before the claim still gets a record", CaughtError{"DataError", lambdaCauseOf(t, "DataError", "SourceNotFound: gone [attempt 1]")}, false,
			fault.TierDataSpecific, RouteRemediation, statestore.Remedial, "SourceNotFound", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.put(t, "x.tif", "x")
			in := ClassifyInput{Source: Source{Bucket: "src", Key: "x.tif"}, Error: tt.err, Context: inv("e1", 0)}
			if tt.claimed {
				hc, err := f.hash.Handle(ctx, HashCheckInput{Source: in.Source, Context: inv("e1", 0)})
				if err != nil {
					t.Fatal(err)
				}
				in.Job = hc.Job
			}
			out, err := f.classify.Handle(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			m := out.Message
			if out.Tier != string(tt.wantTier) || out.Route != tt.wantRoute || m.Code != tt.wantCode || m.Attempts != tt.wantAttempts {
				t.Fatalf("got tier %s route %s code %q attempts %d", out.Tier, out.Route, m.Code, m.Attempts)
			}
			if m.Hint == "" || m.Key != "x.tif" || m.Replay.Key != "x.tif" || m.Execution != "e1" {
				t.Fatalf("message lacks what a replay needs: %+v", m)
			}
			rec, err := f.tracker.Get(ctx, m.JobID)
			if err != nil || rec.Status != tt.wantStatus || rec.ErrorName != tt.err.Error {
				t.Fatalf("state = %+v, %v", rec, err)
			}
		})
	}
}

// TestSameBytesUnderTwoKeysAreTwoMigrations: identical files at two keys
// each get their own output; the second is not mistaken for done.
func TestSameBytesUnderTwoKeysAreTwoMigrations(t *testing.T) {
	f := newFixture(t)
	f.put(t, "a/x.tif", "same")
	f.put(t, "b/x.tif", "same")
	for _, k := range []string{"a/x.tif", "b/x.tif"} {
		if hc := f.migrate(t, "e-"+k, k); hc.Decision != DecisionConvert {
			t.Fatalf("%s: %s/%s", k, hc.Decision, hc.Reason)
		}
	}
	want := []string{"a/x.tif", "a/x.tif" + stac.ItemSuffix, "b/x.tif", "b/x.tif" + stac.ItemSuffix, CatalogKey(""), CollectionKey("", "src")}
	if keys := f.store.Keys("dest"); !slices.Equal(keys, want) {
		t.Fatalf("dest holds %v, want %v", keys, want)
	}
}

// TestInvalidOutputNeverReachesStaging: an output the validator rejects is
// never staged. A COG that fails validation is a data outcome (GDAL wrote
// it from what the source holds: odd overviews, tiling or masks), routed
// to remediation; a GeoParquet or FlatGeobuf our own code wrote is the
// pipeline's fault (systemic).
func TestInvalidOutputNeverReachesStaging(t *testing.T) {
	for _, c := range []struct {
		format string
		data   bool
	}{
		{recipe.FormatCOG, true},
		{recipe.FormatGeoParquet, false},
		{recipe.FormatFlatGeobuf, false},
	} {
		t.Run(c.format, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.put(t, "x.tif", "x")
			f.convert = NewConvert(f.cfg, f.store, f.tracker, formatEngine{f.engine, c.format}, func(path, format string) error {
				return errors.New("out.tif is not a valid " + format + ": overviews after data")
			}, slog.New(slog.DiscardHandler))
			hc := f.check(t, "e1", "x.tif")
			_, err := f.convert.Handle(ctx, ConvertInput{Job: hc.Job, Context: inv("e1", 0)})
			if !strings.Contains(err.Error(), "overviews after data") {
				t.Fatalf("err = %v, want it to name the problem", err)
			}
			var se *fault.SystemicError
			if got := fault.CodeOf(err); c.data && got != fault.CorruptSource {
				t.Errorf("err = %v (code %q), want a DataError CorruptSource", err, got)
			} else if !c.data && !errors.As(err, &se) {
				t.Errorf("err = %v, want a SystemicError", err)
			}
			if keys := f.store.Keys("dest"); len(keys) != 0 {
				t.Fatalf("staged %v", keys)
			}
		})
	}
}

// formatEngine is fakeEngine with its outputs labelled format.
type formatEngine struct {
	*fakeEngine
	format string
}

func (e formatEngine) Convert(ctx context.Context, src, workDir string, r recipe.Recipe) ([]recipe.Output, error) {
	outs, err := e.fakeEngine.Convert(ctx, src, workDir, r)
	for i := range outs {
		outs[i].Format = e.format
	}
	return outs, err
}

// rangeEngine reads the source through ranged reads only, its first half
// then its second; during may change the store between the two, after
// may change it after both.
type rangeEngine struct {
	fakeEngine
	ranged        int
	during, after func()
}

func (e *rangeEngine) ConvertReader(ctx context.Context, ra io.ReaderAt, size int64, name, workDir string, r recipe.Recipe) ([]recipe.Output, error) {
	e.ranged++
	b := make([]byte, size)
	half := size / 2
	if _, err := ra.ReadAt(b[:half], 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if e.during != nil {
		e.during()
	}
	if _, err := ra.ReadAt(b[half:], half); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if e.after != nil {
		e.after()
	}
	src := filepath.Join(workDir, "src-"+name)
	if err := os.WriteFile(src, b, 0o644); err != nil {
		return nil, err
	}
	return e.fakeEngine.Convert(ctx, src, workDir, r)
}

// TestConvertReadsRemoteSourcesByRange: every ranged read is of the
// version HashCheck fingerprinted (If-Match its ETag, no HEAD before or
// after): a source overwritten or deleted between two reads fails the
// conversion; one overwritten after the last read converts, since every
// byte converted was of the version the output's lineage names.
func TestConvertReadsRemoteSourcesByRange(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name          string
		during, after func(f *fixture)
		wantCode      fault.Code
	}{
		{name: "unchanged source converts"},
		{name: "source overwritten mid-conversion", during: func(f *fixture) { f.put(t, "x.tif", "x-v2-longer") }, wantCode: fault.SourceChanged},
		{name: "source deleted mid-conversion", during: func(f *fixture) { _ = f.store.Delete(ctx, "src", "x.tif") }, wantCode: fault.SourceNotFound},
		{name: "source overwritten after its last read", after: func(f *fixture) { f.put(t, "x.tif", "x-v2-longer") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			eng := &rangeEngine{}
			if tt.during != nil {
				eng.during = func() { tt.during(f) }
			}
			if tt.after != nil {
				eng.after = func() { tt.after(f) }
			}
			cfg := f.cfg
			// One request per byte: the second half is read after during.
			cfg.SourceReadAhead = objectstore.ReadAhead{WholeObjectMax: -1, BlockSize: 1, MaxBlocks: 1}
			store := &readCounting{Store: f.store, reads: map[string]int{}}
			conv := NewConvert(cfg, store, f.tracker, eng, fakeValidator, slog.New(slog.DiscardHandler))
			f.put(t, "x.tif", "xy-pixels")
			hc := f.check(t, "e1", "x.tif")
			_, err := conv.Handle(ctx, ConvertInput{Job: hc.Job, Context: inv("e1", 0)})
			if eng.ranged != 1 {
				t.Fatalf("ConvertReader called %d times", eng.ranged)
			}
			if tt.wantCode == "" {
				if err != nil {
					t.Fatal(err)
				}
				if n, h := store.reads["src/x.tif"], store.heads["src/x.tif"]; n != len("xy-pixels") || h != 0 {
					t.Errorf("Convert read the source %d times and HEADed it %d times, want one read per byte and no HEAD", n, h)
				}
				return
			}
			var de *fault.DataError
			if !errors.As(err, &de) || de.Code != tt.wantCode {
				t.Fatalf("err = %v, want %s", err, tt.wantCode)
			}
		})
	}
}

// TestSidecarsArePartOfTheSourceIdentity: editing only roads.dbf changes
// roads.shp's output, so it must be a new job, not a skip.
func TestSidecarsArePartOfTheSourceIdentity(t *testing.T) {
	f := newFixture(t)
	f.put(t, "roads.shp", "geometry")
	f.put(t, "roads.dbf", "attributes-v1")
	if hc := f.migrate(t, "e1", "roads.shp"); hc.Decision != DecisionConvert {
		t.Fatalf("first: %s", hc.Decision)
	}
	if hc := f.migrate(t, "e2", "roads.shp"); hc.Decision != DecisionSkip {
		t.Fatalf("unchanged: %s/%s", hc.Decision, hc.Reason)
	}
	f.put(t, "roads.dbf", "attributes-v2")
	if hc := f.migrate(t, "e3", "roads.shp"); hc.Decision != DecisionConvert {
		t.Fatalf("after editing the .dbf: %s/%s", hc.Decision, hc.Reason)
	}
	// A sidecar of another file with a similar name does not count.
	f.put(t, "roads2.dbf", "other")
	if hc := f.migrate(t, "e4", "roads.shp"); hc.Decision != DecisionSkip {
		t.Fatalf("unrelated sidecar: %s/%s", hc.Decision, hc.Reason)
	}
}

// TestSourcesWithSidecarsAreDownloadedNotRanged: a world file carries the
// georeferencing a ranged read of the GeoTIFF alone would miss.
func TestSourcesWithSidecarsAreDownloadedNotRanged(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	eng := &rangeEngine{}
	conv := NewConvert(f.cfg, f.store, f.tracker, eng, fakeValidator, slog.New(slog.DiscardHandler))
	f.put(t, "x.tif", "pixels")
	f.put(t, "x.tfw", "1\n0\n0\n-1\n0\n0\n")
	hc := f.check(t, "e1", "x.tif")
	if _, err := conv.Handle(ctx, ConvertInput{Job: hc.Job, Context: inv("e1", 0)}); err != nil {
		t.Fatal(err)
	}
	if eng.ranged != 0 || eng.calls != 1 {
		t.Fatalf("ranged %d, downloaded %d; want the download path", eng.ranged, eng.calls)
	}
}

// TestASidecarEventMigratesItsMainFile: on S3 an edit of roads.dbf arrives
// as an event for roads.dbf; it must migrate roads.shp again.
func TestASidecarEventMigratesItsMainFile(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.put(t, "orphan.prj", "GEOGCS")
	out, err := f.hash.Handle(ctx, HashCheckInput{Source: Source{Bucket: "src", Key: "orphan.prj"}, Context: inv("e0", 0)})
	if err != nil || out.Decision != DecisionSkip || out.Reason != ReasonSidecar {
		t.Fatalf("sidecar without a main file: %s/%s %v", out.Decision, out.Reason, err)
	}
	f.put(t, "roads.shp", "geometry")
	f.put(t, "roads.dbf", "attributes-v1")
	f.migrate(t, "e1", "roads.shp")
	f.put(t, "roads.dbf", "attributes-v2")
	out, err = f.hash.Handle(ctx, HashCheckInput{Source: Source{Bucket: "src", Key: "roads.dbf"}, Context: inv("e2", 0)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Decision != DecisionConvert || out.Source.Key != "roads.shp" || out.Job.SourceKey != "roads.shp" {
		t.Fatalf("sidecar event: %s/%s for %s", out.Decision, out.Reason, out.Job.SourceKey)
	}
}

// TestOutputWithoutFidelityNeverReachesStaging: an output the engine did
// not compare with its source is not staged (SystemicError).
func TestOutputWithoutFidelityNeverReachesStaging(t *testing.T) {
	f := newFixture(t)
	f.engine.noFidelity = true
	f.put(t, "x.tif", "x")
	hc := f.check(t, "e1", "x.tif")
	_, err := f.convert.Handle(context.Background(), ConvertInput{Job: hc.Job, Context: inv("e1", 0)})
	var se *fault.SystemicError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "fidelity") {
		t.Fatalf("err = %v, want a SystemicError about the missing fidelity record", err)
	}
	if keys := f.store.Keys("dest"); len(keys) != 0 {
		t.Fatalf("staged %v", keys)
	}
}

// TestFidelityAndLineageTravelWithTheOutput: the engine is given the
// job's source hash (its recipe's lineage names the job's hash and recipe
// hash), and the fidelity record reaches the artifact and the object
// metadata of the staged and the promoted object.
func TestFidelityAndLineageTravelWithTheOutput(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	hc, conv := f.converted(t, "e1", "x.tif", "x")
	lin := f.engine.recipe.Lineage()
	if lin.SourceSHA256 != hc.Job.SourceSHA256 || lin.RecipeHash != hc.Job.RecipeHash || lin.Fingerprint != hc.Job.Fingerprint ||
		lin.ToolVersion != "test" || lin.EngineVersion != "fake-1" {
		t.Errorf("engine's lineage %+v for job %s / %s", lin, hc.Job.SourceSHA256, hc.Job.RecipeHash)
	}
	a := conv.Outputs[0]
	if a.Fidelity == nil || strings.Join(a.Fidelity.Checks, ",") != "bytes" {
		t.Fatalf("artifact fidelity %+v", a.Fidelity)
	}
	staged, err := f.store.Head(ctx, "dest", a.StagingKey)
	if err != nil || staged.Metadata[MetaFidelity] != a.Fidelity.Summary() {
		t.Fatalf("staged metadata %v (%v)", staged.Metadata, err)
	}
	if _, err := f.promote.Handle(ctx, PromoteInput{Job: hc.Job, Converted: conv, Context: inv("e1", 0)}); err != nil {
		t.Fatal(err)
	}
	final, err := f.store.Head(ctx, "dest", a.DestKey)
	if err != nil || final.Metadata[MetaFidelity] != "equal:bytes" {
		t.Fatalf("final metadata %v (%v)", final.Metadata, err)
	}
}

// deleteFailing fails every Delete, as a store with a transient outage
// after the copies went through.
type deleteFailing struct{ objectstore.Store }

func (deleteFailing) Delete(context.Context, string, string) error {
	return fault.Transient("test.Delete", errors.New("503 SlowDown"))
}

// TestPromoteCompletesWhenStagingCannotBeRemoved: the outputs are final and
// the job COMPLETED although removing the staged copies fails; they are
// left to the staging expiry instead of sending a migrated file to the
// dead-letter queue.
func TestPromoteCompletesWhenStagingCannotBeRemoved(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	hc, conv := f.converted(t, "e1", "x.tif", "x")
	p := NewPromote(f.cfg, deleteFailing{f.store}, f.tracker, slog.New(slog.DiscardHandler))
	if _, err := p.Handle(ctx, PromoteInput{Job: hc.Job, Converted: conv, Context: inv("e1", 0)}); err != nil {
		t.Fatalf("promote: %v", err)
	}
	rec, err := f.tracker.Get(ctx, hc.Job.ID)
	if err != nil || rec.Status != statestore.Completed {
		t.Fatalf("job %+v, %v; want COMPLETED", rec.Status, err)
	}
	if _, err := f.store.Head(ctx, "dest", conv.Outputs[0].DestKey); err != nil {
		t.Fatalf("final key: %v", err)
	}
	if _, err := f.store.Head(ctx, "dest", conv.Outputs[0].StagingKey); err != nil {
		t.Fatalf("staged copy: %v; want it left for the expiry", err)
	}
	// The state machine's retry of Promote (its earlier attempt ended
	// after COMPLETED, before its deletes) finds the job completed and
	// removes what is left.
	if _, err := f.promote.Handle(ctx, PromoteInput{Job: hc.Job, Converted: conv, Context: inv("e1", 1)}); err != nil {
		t.Fatalf("retried promote: %v", err)
	}
	if _, err := f.store.Head(ctx, "dest", conv.Outputs[0].StagingKey); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("staged copy after the retry: %v; want it removed", err)
	}
	if _, err := f.store.Head(ctx, "dest", conv.Outputs[0].DestKey); err != nil {
		t.Fatalf("final key after the retry: %v", err)
	}
}

// An output's digest that the engine took while checking it is the one
// staged (the file is not read again for it); without one Convert hashes
// the file itself.
func TestConvertTakesTheEnginesDigest(t *testing.T) {
	const body = "pixels"
	sum := sha256.Sum256([]byte("COG:" + body))
	fileSum := hex.EncodeToString(sum[:])
	for name, c := range map[string]struct{ given, want string }{
		"engine's": {given: strings.Repeat("ab", 32), want: strings.Repeat("ab", 32)},
		"hashed":   {given: "", want: fileSum},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.engine.sha256 = c.given
			_, conv := f.converted(t, "e1", "a.tif", body)
			if got := conv.Outputs[0].SHA256; got != c.want {
				t.Errorf("staged SHA-256 %s, want %s", got, c.want)
			}
			if conv.Outputs[0].Size != int64(len("COG:"+body)) {
				t.Errorf("staged size %d", conv.Outputs[0].Size)
			}
		})
	}
}

// TestPromoteKnowsItsSourceInEveryLineageForm: the src-key lineage value
// is US-ASCII (objectstore.MetaValue), and an output written before, with
// the UTF-8 key as it stood (returned RFC 2047-encoded by S3, or as it
// stands by the other stores), is still recognised as this source's: a
// new version of it is promoted over it, not refused as another source's.
func TestPromoteKnowsItsSourceInEveryLineageForm(t *testing.T) {
	for name, stored := range map[string]string{
		"as written now":    objectstore.MetaValue("src/München.tif"),
		"UTF-8 as it stood": "src/München.tif",
		"RFC 2047 from S3":  mime.BEncoding.Encode("UTF-8", "src/München.tif"),
		"another source's":  mime.BEncoding.Encode("UTF-8", "src/München.img"),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if _, err := f.store.Put(ctx, objectstore.PutRequest{Bucket: "dest", Key: "München.tif", Body: strings.NewReader("old"), Size: 3,
				Metadata: map[string]string{objectstore.MetaSourceKey: stored, objectstore.MetaSourceSHA256: "old", objectstore.MetaRecipe: "old"}}); err != nil {
				t.Fatal(err)
			}
			hc, conv := f.converted(t, "e1", "München.tif", "new")
			_, err := f.promote.Handle(ctx, PromoteInput{Job: hc.Job, Converted: conv, Context: inv("e1", 0)})
			if name == "another source's" {
				var de *fault.DataError
				if !errors.As(err, &de) || de.Code != fault.DestinationTaken {
					t.Fatalf("err = %v, want DestinationConflict", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			head, err := f.store.Head(ctx, "dest", "München.tif")
			if err != nil {
				t.Fatal(err)
			}
			if got := head.Metadata[objectstore.MetaSourceKey]; got != "src/M%C3%BCnchen.tif" {
				t.Errorf("lineage %q, want the US-ASCII form", got)
			}
		})
	}
}
