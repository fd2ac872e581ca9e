package plan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/geomigrate/geomigrate/internal/cost"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// tiffMagic starts the bytes the test preflight takes for a raster; any
// other body it refuses as corrupt, and "systemic" fails as GDAL itself
// failing would.
const tiffMagic = "II*\x00"

// contentPreflight is the GDAL port over the bytes it is given: it reads
// the whole source (by path or through the ReaderAt, as the plan chose)
// and decides on them, so a test sees which bytes reached it and how.
type contentPreflight struct {
	mu    sync.Mutex
	calls []string // "path NAME" or "reader NAME", NAME the base name
}

func (p *contentPreflight) Version() string { return "test-gdal" }

func (p *contentPreflight) Preflight(_ context.Context, src string, _ recipe.Recipe) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	return p.decide("path "+filepath.Base(src), b)
}

func (p *contentPreflight) PreflightReader(_ context.Context, ra io.ReaderAt, size int64, name string, _ recipe.Recipe) (string, error) {
	b := make([]byte, size)
	if _, err := ra.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return p.decide("reader "+name, b)
}

func (p *contentPreflight) decide(call string, b []byte) (string, error) {
	p.mu.Lock()
	p.calls = append(p.calls, call)
	p.mu.Unlock()
	switch {
	case bytes.HasPrefix(b, []byte(tiffMagic)):
		return "GTiff", nil
	case string(b) == "systemic":
		return "", fault.Systemic("test preflight", errors.New("the engine failed"))
	}
	return "", fault.Data(fault.CorruptSource, "not a raster")
}

// localStore is a memstore whose objects are also files under dir, as the
// directory store's are: preflight may read them in place.
type localStore struct {
	*memstore.Store
	dir string
}

func (s localStore) LocalPath(bucket, key string) (string, error) {
	return filepath.Join(s.dir, bucket, filepath.FromSlash(key)), nil
}

// fixture is one plan's world: the stores, the state, the HashCheck that
// sets up state (writing), and the source the plan reads.
type fixture struct {
	store   objectstore.Store
	mem     *memstore.Store
	dir     string // where localStore keeps its files; "" for S3-like
	tracker *statestore.Tracker
	cfg     migration.Config
}

func newFixture(t *testing.T, local bool) *fixture {
	t.Helper()
	f := &fixture{mem: memstore.New("src", "src2", "dest"), tracker: statestore.NewTracker(statestoretest.NewMemory())}
	f.store = f.mem
	if local {
		f.dir = t.TempDir()
		f.store = localStore{Store: f.mem, dir: f.dir}
	}
	f.cfg = migration.Config{DestBucket: "dest", WorkDir: t.TempDir(), Recipe: recipe.Recipe{EngineVersion: "test-gdal", ToolVersion: "test"}}
	return f
}

func (f *fixture) hashCheck(cfg migration.Config) *migration.HashCheck {
	return migration.NewHashCheck(cfg, f.store, f.tracker, migration.StoreFingerprinter{Store: f.store, Threshold: 1 << 20}, slog.New(slog.DiscardHandler))
}

func (f *fixture) put(t *testing.T, bucket, key, body string) migration.Source {
	t.Helper()
	_, err := f.mem.Put(context.Background(), objectstore.PutRequest{Bucket: bucket, Key: key, Body: strings.NewReader(body), Size: int64(len(body))})
	if err != nil {
		t.Fatal(err)
	}
	if f.dir != "" {
		p := filepath.Join(f.dir, bucket, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return migration.Source{Bucket: bucket, Key: key}
}

func (f *fixture) source(inputs []migration.Source, pre []File) Source {
	return Source{Inputs: inputs, Pre: pre, Store: f.store, HashCheck: f.hashCheck, Config: f.cfg, Local: f.dir != "",
		DestWhere: func(key string) string { return "s3://dest/" + key }}
}

// want is what the plan must say of one file, and the cost path it is
// charged (cost.Path "" for none).
type want struct {
	bucket, key, action, reason, stage, preflight, driver string
	code                                                  fault.Code
	bytes                                                 int64
	path                                                  cost.Path
}

func TestPlanDecisions(t *testing.T) {
	raster := tiffMagic + strings.Repeat("r", 96) // 100 bytes
	tests := []struct {
		name  string
		local bool
		setup func(t *testing.T, f *fixture) ([]migration.Source, []File)
		want  []want
		calls []string // the preflights run, sorted
		check func(t *testing.T, r *Report)
	}{
		{name: "a GeoTIFF on S3 is preflighted by ranged reads",
			setup: func(t *testing.T, f *fixture) ([]migration.Source, []File) {
				return []migration.Source{f.put(t, "src", "dem/a.tif", raster)}, nil
			},
			want:  []want{{bucket: "src", key: "dem/a.tif", action: ActionConvert, preflight: "passed", driver: "GTiff", bytes: 100, path: cost.Converted}},
			calls: []string{"reader a.tif"}},
		{name: "a local GeoTIFF is preflighted in place",
			local: true,
			setup: func(t *testing.T, f *fixture) ([]migration.Source, []File) {
				return []migration.Source{f.put(t, "src", "dem/a.tif", raster)}, nil
			},
			want:  []want{{bucket: "src", key: "dem/a.tif", action: ActionConvert, preflight: "passed", driver: "GTiff", bytes: 100, path: cost.Converted}},
			calls: []string{"path a.tif"}},
		{name: "a shapefile counts its sidecars and is not downloaded to preflight",
			setup: func(t *testing.T, f *fixture) ([]migration.Source, []File) {
				in := f.put(t, "src", "roads/roads.shp", "0123456789")
				f.put(t, "src", "roads/roads.dbf", "01234")
				f.put(t, "src", "roads/roads.prj", "012")
				f.put(t, "src", "roads/other.tif", raster)         // not a sidecar of roads.shp
				f.put(t, "src", "roads/deeper/roads.dbf", "01234") // not in its directory
				return []migration.Source{in}, nil
			},
			want: []want{{bucket: "src", key: "roads/roads.shp", action: ActionConvert, bytes: 18, path: cost.Converted,
				preflight: "not run: the source would have to be downloaded (several files, or a library that opens the file itself)"}}},
		{name: "a corrupt source is refused at preflight",
			setup: func(t *testing.T, f *fixture) ([]migration.Source, []File) {
				return []migration.Source{f.put(t, "src", "empty.tif", "junk")}, nil
			},
			want:  []want{{bucket: "src", key: "empty.tif", action: ActionRefuse, stage: "preflight", code: fault.CorruptSource, bytes: 4, path: cost.Remediation}},
			calls: []string{"reader empty.tif"},
			check: func(t *testing.T, r *Report) {
				if f := r.Files[0]; f.Error != "DataError" || !strings.Contains(f.Reason, "not a raster") || f.Preflight != "" {
					t.Errorf("refusal %+v", f)
				}
			}},
		{name: "a key with a newline is refused by HashCheck and charged the rejected walk",
			setup: func(t *testing.T, f *fixture) ([]migration.Source, []File) {
				return []migration.Source{{Bucket: "src", Key: "bad\nname.tif"}}, nil
			},
			want: []want{{bucket: "src", key: "bad\nname.tif", action: ActionRefuse, stage: "hashcheck", code: fault.InvalidKey, path: cost.Rejected}},
			check: func(t *testing.T, r *Report) {
				if r.Estimate.SQSRequests != 1 || r.Files[0].RecipeHash != "" {
					t.Errorf("SQS requests %d (want the one remediation message), recipe %q", r.Estimate.SQSRequests, r.Files[0].RecipeHash)
				}
			}},
		{name: "a file that is not geospatial is ignored, skipped on its name on AWS",
			setup: func(t *testing.T, f *fixture) ([]migration.Source, []File) {
				return []migration.Source{f.put(t, "src", "README.txt", "notes")}, nil
			},
			want: []want{{bucket: "src", key: "README.txt", action: ActionIgnore, reason: migration.ReasonNotGeospatial, path: cost.Skipped}}},
		{name: "a file another execution holds is skipped, with its size",
			setup: func(t *testing.T, f *fixture) ([]migration.Source, []File) {
				in := f.put(t, "src", "a.tif", raster)
				in2 := migration.HashCheckInput{Source: in, Context: migration.Invocation{Execution: "other", State: "HashCheck"}}
				if _, err := f.hashCheck(f.cfg).Handle(context.Background(), in2); err != nil {
					t.Fatal(err)
				}
				return []migration.Source{in}, nil
			},
			want: []want{{bucket: "src", key: "a.tif", action: ActionSkip, reason: migration.ReasonInProgress, bytes: 100, path: cost.Skipped}}},
		{name: "two sources of one output key clash and are both refused; the rest converts",
			setup: func(t *testing.T, f *fixture) ([]migration.Source, []File) {
				return []migration.Source{f.put(t, "src", "dem.tif", raster), f.put(t, "src2", "dem.tif", raster), f.put(t, "src2", "other.tif", raster)}, nil
			},
			want: []want{
				{bucket: "src", key: "dem.tif", action: ActionRefuse, stage: "hashcheck", code: fault.DestinationTaken, path: cost.Rejected},
				{bucket: "src2", key: "dem.tif", action: ActionRefuse, stage: "hashcheck", code: fault.DestinationTaken, path: cost.Rejected},
				{bucket: "src2", key: "other.tif", action: ActionConvert, preflight: "passed", driver: "GTiff", bytes: 100, path: cost.Converted},
			},
			calls: []string{"reader other.tif"},
			check: func(t *testing.T, r *Report) {
				want := []Clash{{Dest: "s3://dest/dem.tif", Sources: []string{"src/dem.tif", "src2/dem.tif"}}}
				if len(r.Clashes) != 1 || r.Clashes[0].Dest != want[0].Dest || !slices.Equal(r.Clashes[0].Sources, want[0].Sources) {
					t.Errorf("clashes %+v, want %+v", r.Clashes, want)
				}
			}},
		{name: "what the listing decided follows the inputs, in order",
			setup: func(t *testing.T, f *fixture) ([]migration.Source, []File) {
				var ins []migration.Source
				for i := range 5 {
					ins = append(ins, f.put(t, "src", fmt.Sprintf("d%d/x.tif", i), raster))
				}
				return ins, []File{{Dataset: "src", Bucket: "src", Key: "link.tif", Format: ".tif", Action: ActionIgnore, Reason: "a link, not followed"}}
			},
			want: []want{
				{bucket: "src", key: "d0/x.tif", action: ActionConvert, preflight: "passed", driver: "GTiff", bytes: 100, path: cost.Converted},
				{bucket: "src", key: "d1/x.tif", action: ActionConvert, preflight: "passed", driver: "GTiff", bytes: 100, path: cost.Converted},
				{bucket: "src", key: "d2/x.tif", action: ActionConvert, preflight: "passed", driver: "GTiff", bytes: 100, path: cost.Converted},
				{bucket: "src", key: "d3/x.tif", action: ActionConvert, preflight: "passed", driver: "GTiff", bytes: 100, path: cost.Converted},
				{bucket: "src", key: "d4/x.tif", action: ActionConvert, preflight: "passed", driver: "GTiff", bytes: 100, path: cost.Converted},
				{bucket: "src", key: "link.tif", action: ActionIgnore, reason: "a link, not followed"}, // not an object on S3: not charged
			},
			calls: []string{"reader x.tif", "reader x.tif", "reader x.tif", "reader x.tif", "reader x.tif"}},
	}
	ctx := context.Background()
	model, err := cost.DefaultModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.local)
			inputs, pre := tt.setup(t, f)
			engine := &contentPreflight{}
			r, err := Run(ctx, f.source(inputs, pre), engine, model, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Files) != len(tt.want) {
				t.Fatalf("%d file(s) planned, want %d: %+v", len(r.Files), len(tt.want), r.Files)
			}
			var transitions int64
			var counts Counts
			for i, w := range tt.want {
				got := r.Files[i]
				if got.Bucket != w.bucket || got.Key != w.key || got.Action != w.action || got.Stage != w.stage || got.Code != string(w.code) ||
					got.Bytes != w.bytes || got.Preflight != w.preflight || got.Driver != w.driver || (w.reason != "" && got.Reason != w.reason) {
					t.Errorf("file %d: %+v\nwant %+v", i, got, w)
				}
				if (got.RecipeHash == "") != (w.action == ActionIgnore || w.stage == "hashcheck") {
					t.Errorf("file %d (%s): recipe hash %q", i, w.action, got.RecipeHash)
				}
				if w.path != "" {
					transitions += int64(model.Walks[w.path].Transitions)
				}
				counts.add(got)
			}
			if r.Totals != counts || r.Estimate.Transitions != transitions {
				t.Errorf("totals %+v, want %+v; %d transitions, want %d", r.Totals, counts, r.Estimate.Transitions, transitions)
			}
			slices.Sort(engine.calls)
			if !slices.Equal(engine.calls, tt.calls) {
				t.Errorf("preflights %q, want %q", engine.calls, tt.calls)
			}
			if r.GDAL != "test-gdal" || r.RecipeHash != f.hashCheck(f.cfg).Recipe().ShortHash() || r.Model.Prices.Region != model.Prices.Region || r.Model.Settings != model.Settings {
				t.Errorf("report header: GDAL %q, recipe %q, model %+v", r.GDAL, r.RecipeHash, r.Model.Settings)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// TestPlanCountsByFormatDatasetAndRecipe: every file is counted once in
// its format, its dataset and (once its recipe is known) its recipe.
func TestPlanCountsByFormatDatasetAndRecipe(t *testing.T) {
	ctx := context.Background()
	model, err := cost.DefaultModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, false)
	raster := tiffMagic + "rrrr"
	inputs := []migration.Source{f.put(t, "src", "a.tif", raster), f.put(t, "src", "b.tif", "junk"), f.put(t, "src2", "c.tif", raster), f.put(t, "src2", "notes.txt", "n")}
	inputs[2].DatasetID = "landcover"
	r, err := Run(ctx, f.source(inputs, nil), &contentPreflight{}, model, 2)
	if err != nil {
		t.Fatal(err)
	}
	hash := r.Files[0].RecipeHash
	tests := []struct {
		name string
		in   map[string]*Counts
		key  string
		want Counts
	}{
		{"format .tif", r.ByFormat, ".tif", Counts{Files: 3, Bytes: 20, Convert: 2, ConvertBytes: 16, Refuse: 1, RefuseBytes: 4}},
		{"format .txt", r.ByFormat, ".txt", Counts{Files: 1, Ignore: 1}},
		{"dataset of the bucket", r.ByDataset, "src", Counts{Files: 2, Bytes: 12, Convert: 1, ConvertBytes: 8, Refuse: 1, RefuseBytes: 4}},
		{"dataset named by the listing", r.ByDataset, "landcover", Counts{Files: 1, Bytes: 8, Convert: 1, ConvertBytes: 8}},
		{"recipe", r.ByRecipe, hash, Counts{Files: 3, Bytes: 20, Convert: 2, ConvertBytes: 16, Refuse: 1, RefuseBytes: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in[tt.key]; got == nil || *got != tt.want {
				t.Errorf("%s: %+v, want %+v", tt.key, got, tt.want)
			}
		})
	}
	if len(r.ByRecipe) != 1 || len(r.ByDataset) != 3 || len(r.ByFormat) != 2 {
		t.Errorf("by recipe %d, by dataset %d, by format %d entries", len(r.ByRecipe), len(r.ByDataset), len(r.ByFormat))
	}
}

// TestPlanFailures: a failure that is not the data's (the store, GDAL itself)
// fails the plan, naming the file; so does a configuration Validate
// refuses.
func TestPlanFailures(t *testing.T) {
	ctx := context.Background()
	model, err := cost.DefaultModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, f *fixture) Source
		want  string
	}{
		{"GDAL fails", func(t *testing.T, f *fixture) Source {
			return f.source([]migration.Source{f.put(t, "src", "x.tif", "systemic")}, nil)
		}, "plan src/x.tif: preflight: "},
		{"the source bucket is gone", func(t *testing.T, f *fixture) Source {
			return f.source([]migration.Source{{Bucket: "nobucket", Key: "x.tif"}}, nil)
		}, "plan nobucket/x.tif: "},
		{"no destination bucket", func(t *testing.T, f *fixture) Source {
			s := f.source(nil, nil)
			s.Config.DestBucket = ""
			return s
		}, "destination bucket is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, false)
			r, err := Run(ctx, tt.setup(t, f), &contentPreflight{}, model, 1)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %+v, %v; want an error with %q", r, err, tt.want)
			}
		})
	}
}

func TestCountsAdd(t *testing.T) {
	tests := []struct {
		action string
		want   Counts
	}{
		{ActionConvert, Counts{Files: 1, Bytes: 7, Convert: 1, ConvertBytes: 7}},
		{ActionSkip, Counts{Files: 1, Bytes: 7, Skip: 1, SkipBytes: 7}},
		{ActionRefuse, Counts{Files: 1, Bytes: 7, Refuse: 1, RefuseBytes: 7}},
		{ActionIgnore, Counts{Files: 1, Bytes: 7, Ignore: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			var c Counts
			c.add(File{Action: tt.action, Bytes: 7})
			if c != tt.want {
				t.Errorf("%+v, want %+v", c, tt.want)
			}
		})
	}
}

func TestErrorTypeName(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fault.Data(fault.CorruptSource, "bad"), "DataError"},
		{fmt.Errorf("convert: %w", fault.Data(fault.UnsafeSource, "bad")), "DataError"},
		{fault.Systemic("op", errors.New("down")), "SystemicError"},
		{fault.Transient("op", errors.New("slow")), "TransientError"},
		{errors.New("plain"), "error"},
	}
	for _, tt := range tests {
		if got := errorTypeName(tt.err); got != tt.want {
			t.Errorf("errorTypeName(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

func TestFormatOf(t *testing.T) {
	tests := []struct{ key, want string }{
		{"dem/a.tif", ".tif"},
		{"dem/A.TIF", ".tif"},
		{"roads.shp", ".shp"},
		{"notes.TXT", ".txt"},
		{"Makefile", "(none)"},
		{"dir.d/file", "(none)"},
	}
	for _, tt := range tests {
		if got := FormatOf(tt.key); got != tt.want {
			t.Errorf("FormatOf(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// TestSidecarSizes: a main file's size adds its sidecars' beside it, its
// directory listed once.
func TestSidecarSizes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	for key, body := range map[string]string{
		"roads.shp": "0123456789", "roads.dbf": "01234", "roads.shx": "01", "other.dbf": "0123",
		"sub/roads.dbf": "0123456", "sub/a.tif": "0123",
	} {
		f.put(t, "src", key, body)
	}
	lists := &listCounter{Store: f.mem}
	s := sidecarSizes{store: lists, dirs: map[string][]objectstore.Object{}}
	tests := []struct {
		key            string
		size           int64
		want, sidecars int
	}{
		{"roads.shp", 10, 17, 2},
		{"roads.shp", 10, 17, 2}, // listed already
		{"sub/a.tif", 4, 4, 0},
		{"sub/roads.shp", 3, 10, 1}, // the size given, plus sub/roads.dbf
	}
	for _, tt := range tests {
		got, n := s.total(ctx, "src", tt.key, tt.size)
		if got != int64(tt.want) || n != tt.sidecars {
			t.Errorf("total(%s, %d) = %d, %d; want %d, %d", tt.key, tt.size, got, n, tt.want, tt.sidecars)
		}
	}
	if lists.n != 2 {
		t.Errorf("%d listings for 2 directories", lists.n)
	}
}

// listCounter counts List calls.
type listCounter struct {
	objectstore.Store
	n int
}

func (l *listCounter) List(ctx context.Context, bucket, prefix string, fn func(objectstore.Object) error) error {
	l.n++
	return l.Store.List(ctx, bucket, prefix, fn)
}
