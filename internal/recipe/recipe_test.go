package recipe

import (
	"errors"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
)

// goldenHash pins the hash of the default recipe with fixed versions. If it
// changes, every object ever migrated will be converted again: change it only
// on purpose (and bump hashVersion when the canonical form changes meaning).
const goldenHash = "461e406ba20f1a8b61a83e808fba0b2dfdb46f30c00b6c5cec3891b412ea5f20"

func baseRecipe() Recipe {
	r := DefaultRecipe()
	r.EngineVersion = "3.6.2"
	r.ToolVersion = "v0.1.0"
	return r
}

func TestHashGolden(t *testing.T) {
	t.Parallel()
	r := baseRecipe()
	if got := r.Hash(); got != goldenHash {
		t.Fatalf("hash of the default recipe = %s, want %s\ncanonical: %s", got, goldenHash, r.CanonicalJSON())
	}
	if got := r.ShortHash(); got != goldenHash[:16] || len(got) != 16 {
		t.Fatalf("short hash %q", got)
	}
	want := `{"block_size":512,"engine_version":"3.6.2","geometry_policy":"keep","overview_resampling":"auto","raster_format":"COG","row_group_rows":65536,"tool_version":"v0.1.0","v":1,"vector_format":"GeoParquet","zstd_level":3}`
	if got := r.CanonicalJSON(); got != want {
		t.Fatalf("canonical JSON\n got %s\nwant %s", got, want)
	}
}

func TestHashChangesWithOutputFields(t *testing.T) {
	t.Parallel()
	base := baseRecipe().Hash()
	cases := []struct {
		name string
		mod  func(*Recipe)
	}{
		{"vector format", func(r *Recipe) { r.VectorFormat = FormatFlatGeobuf }},
		{"raster format", func(r *Recipe) { r.RasterFormat = "GTiff" }},
		{"block size", func(r *Recipe) { r.BlockSize = 256 }},
		{"zstd level", func(r *Recipe) { r.ZSTDLevel = 15 }},
		{"resampling", func(r *Recipe) { r.OverviewResampling = ResamplingNearest }},
		{"geometry policy", func(r *Recipe) { r.GeometryPolicy = GeometryStrict }},
		{"geometry policy repair", func(r *Recipe) { r.GeometryPolicy = GeometryRepair }},
		{"curves", func(r *Recipe) { r.Curves = CurvesLinearize }},
		{"curve step", func(r *Recipe) { r.Curves, r.CurveStepDegrees = CurvesLinearize, 1 }},
		{"row group", func(r *Recipe) { r.RowGroupRows = 131072 }},
		{"engine version", func(r *Recipe) { r.EngineVersion = "3.8.4" }},
		{"tool version", func(r *Recipe) { r.ToolVersion = "v0.2.0" }},
	}
	seen := map[string]string{base: "base"}
	for _, c := range cases {
		r := baseRecipe()
		c.mod(&r)
		h := r.Hash()
		if prev, dup := seen[h]; dup {
			t.Errorf("%s: hash %s equals that of %s", c.name, h, prev)
		}
		seen[h] = c.name
	}
}

func TestHashIgnoresBudgetsAndDefaults(t *testing.T) {
	t.Parallel()
	base := baseRecipe().Hash()
	r := baseRecipe()
	r.MaxBytes, r.MaxPixels, r.MaxFeatures, r.MaxMemory = 1, 2, 3, 4
	if r.Hash() != base {
		t.Error("budgets changed the hash")
	}
	zero := Recipe{EngineVersion: "3.6.2", ToolVersion: "v0.1.0"}
	if zero.Hash() != base {
		t.Error("zero fields and explicit defaults hash differently")
	}
	// A step without linearisation writes the same bytes.
	step := baseRecipe()
	step.CurveStepDegrees = 1
	if step.Hash() != base {
		t.Error("a curve step without curves: linearize changed the hash")
	}
	for range 3 {
		if baseRecipe().Hash() != base {
			t.Fatal("hash not stable")
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultRecipe().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []Recipe{
		{RasterFormat: "PNG"}, {VectorFormat: "Shapefile"}, {BlockSize: 100}, {ZSTDLevel: 23},
		{OverviewResampling: "lanczos2"}, {GeometryPolicy: "ignore"}, {MaxBytes: -1},
		{Curves: "keep"}, {CurveStepDegrees: -1}, {CurveStepDegrees: 91},
	}
	for _, r := range bad {
		err := r.Validate()
		var s *fault.SystemicError
		if !errors.As(err, &s) {
			t.Errorf("%+v: want SystemicError, got %v", r, err)
		}
	}
}

func TestDestKey(t *testing.T) {
	t.Parallel()
	cog := Output{Format: FormatCOG, Extension: ".tif"}
	pq := Output{Format: FormatGeoParquet, Extension: ".parquet"}
	cases := []struct {
		src   string
		out   Output
		multi bool
		want  string
	}{
		{"a/b/dem.img", cog, false, "a/b/dem.tif"},
		{"a/b/dem.tif", cog, false, "a/b/dem.tif"},
		{"dem", cog, false, "dem.tif"},
		{"roads.shp", pq, false, "roads.parquet"},
		{"in/roads.shp.zip", pq, false, "in/roads.parquet"},
		{"x.gpkg", withLayer(pq, "roads"), true, "x/roads.parquet"},
		{"d/x.gpkg", withLayer(pq, "roads"), true, "d/x/roads.parquet"},
		{"d/x.gpkg", withLayer(pq, "../../etc/passwd"), true, "d/x/_.._etc_passwd-3754d6cb.parquet"},
		{"d/x.gpkg", withLayer(pq, ".."), true, "d/x/layer-5ec1f7e7.parquet"},
		{"d/x.gpkg", withLayer(pq, "routes"), false, "d/x.parquet"},
		{"d/x.gpkg", Output{Format: FormatFlatGeobuf, Layer: "a b"}, true, "d/x/a_b-c8687a08.fgb"},
		{"/abs/path.tif", cog, false, "/abs/path.tif"},
		{"a.b/c", cog, false, "a.b/c.tif"},
	}
	for _, c := range cases {
		if got := DestKey(c.src, c.out, c.multi); got != c.want {
			t.Errorf("DestKey(%q, %q, %v) = %q, want %q", c.src, c.out.Layer, c.multi, got, c.want)
		}
		// Under a prefix, every output of a source starts with its stem.
		for _, prefix := range []string{"", "out/", "_staging/job-1/"} {
			key, stem := OutputKey(prefix, c.src, c.out, c.multi), OutputStem(prefix, c.src)
			if key != prefix+c.want || !strings.HasPrefix(key, stem) {
				t.Errorf("OutputKey(%q, %q) = %q, OutputStem = %q; want %q under the stem", prefix, c.src, key, stem, prefix+c.want)
			}
		}
	}
	if got := OutputStem("_staging/j/", "a/b/dem.img"); got != "_staging/j/a/b/dem" {
		t.Errorf("OutputStem = %q", got)
	}
}

// SafeName is one-to-one: names that differ give segments that differ.
func TestSafeNameOneToOne(t *testing.T) {
	t.Parallel()
	names := []string{"a_b", "a/b", "a b", "a\\b", "a:b", "A_B", ".a_b", "a_b.", "", "layer", "..", "straße", "a_b-deadbeef"}
	seen := map[string]string{}
	for _, n := range names {
		s := SafeName(n)
		if prev, ok := seen[s]; ok {
			t.Errorf("SafeName(%q) = SafeName(%q) = %q", n, prev, s)
		}
		seen[s] = n
		if s == "" || strings.ContainsAny(s, "/\\:\x00 ") || strings.HasPrefix(s, ".") {
			t.Errorf("SafeName(%q) = %q is not a safe segment", n, s)
		}
		if SafeName(n) != s {
			t.Errorf("SafeName(%q) is not deterministic", n)
		}
	}
	for _, n := range []string{"roads", "a_b", "straße", "v1.2"} {
		if SafeName(n) != n {
			t.Errorf("safe name %q changed to %q", n, SafeName(n))
		}
	}
}

func withLayer(o Output, l string) Output { o.Layer = l; return o }

// TestOutputFormatsAgreeWithTheRegistry: the extension each output format
// is written with names that format in internal/formats, and every output
// format the registry knows is one written here.
func TestOutputFormatsAgreeWithTheRegistry(t *testing.T) {
	t.Parallel()
	for name, f := range Formats {
		if name == FormatParquet {
			// An attribute table shares .parquet with GeoParquet: its
			// format is carried in Output.Format, never read from the name.
			continue
		}
		if got := formats.OutputFormat("x" + f.Extension); got != name {
			t.Errorf("%s is written as %s, which the registry calls %q", name, f.Extension, got)
		}
	}
	for _, row := range formats.Table() {
		if _, ok := Formats[row.Output]; row.Output != "" && !ok {
			t.Errorf("registry: %s names output format %q, which is not written", row.Ext, row.Output)
		}
	}
}

func TestOverviewResamplingFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		recipe      string
		categorical bool
		want        string
	}{
		{"", true, ResamplingNearest}, // auto by default
		{"", false, ResamplingAverage},
		{ResamplingAuto, true, ResamplingNearest},
		{ResamplingAuto, false, ResamplingAverage},
		{ResamplingCubic, true, ResamplingCubic}, // an explicit choice stands
		{ResamplingMode, false, ResamplingMode},
	} {
		r := Recipe{OverviewResampling: c.recipe}
		if got := r.OverviewResamplingFor(c.categorical); got != c.want {
			t.Errorf("%q, categorical %v: %q, want %q", c.recipe, c.categorical, got, c.want)
		}
	}
}
