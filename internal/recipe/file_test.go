package recipe

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, text string) *File {
	t.Helper()
	f, err := Parse([]byte(text))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, text string
		want       []string // substrings of the error
	}{
		{"unknown top-level key", "version: 1\nrules: []\ncompresion: ZSTD\n", []string{"line 3", `unknown field "compresion"`}},
		{"unknown key in a rule", "version: 1\nrules:\n  - match: \"**\"\n    raster:\n      compresion: ZSTD\n", []string{"line 5", `unknown field "compresion"`}},
		{"unknown key in defaults", "version: 1\ndefaults:\n  raster:\n    levle: 3\n", []string{"line 4", "levle"}},
		{"bad compression", "version: 1\ndefaults:\n  raster:\n    compression: JXL\n", []string{"line 4", "defaults.raster.compression", `"JXL"`, "LERC_ZSTD"}},
		{"lossy without a threshold", "version: 1\ndefaults:\n  raster:\n    compression: JPEG\n", []string{"line 4", "defaults.raster.compression", "lossless by default", "min_psnr_db"}},
		{"lossy creation option without a threshold", "version: 1\ndefaults:\n  raster:\n    blocksize: 256\n    creation_options: {COMPRESS: JPEG}\n", []string{"line 5", "creation_options.COMPRESS", "lossless by default"}},
		{"lossy profile in a rule without a threshold", "version: 1\nrules:\n  - match: a/*\n    raster:\n      profile: webp\n", []string{"line 5", "rules[0].raster.profile", "lossless by default"}},
		{"threshold on a lossless recipe", "version: 1\ndefaults:\n  raster: {min_psnr_db: 40}\n", []string{"line 3", "lossy compressions"}},
		{"quality on a lossless recipe", "version: 1\ndefaults:\n  raster: {creation_options: {QUALITY: 90}}\n", []string{"line 3", "quality applies"}},
		{"quality out of range", "version: 1\ndefaults:\n  raster: {compression: JPEG, min_psnr_db: 30, quality: 101}\n", []string{"line 3", "quality", "1..100"}},
		{"predictor on a lossy recipe", "version: 1\ndefaults:\n  raster: {compression: JPEG, min_psnr_db: 30, predictor: 2}\n", []string{"line 3", "takes no predictor"}},
		{"blocksize not a multiple of 16", "version: 1\ndefaults:\n  raster: {creation_options: {BLOCKSIZE: 300}}\n", []string{"line 3", "block size 300"}},
		{"compression twice", "version: 1\ndefaults:\n  raster: {compression: ZSTD, creation_options: {COMPRESS: LZW}}\n", []string{"line 3", "given twice"}},
		{"unknown profile", "version: 1\ndefaults:\n  raster: {profile: png}\n", []string{"line 3", "rio-cogeo", "webp"}},
		{"bad predictor", "version: 1\ndefaults:\n  raster: {predictor: 4}\n", []string{"line 3", "predictor", "floating_point"}},
		{"bad resampling in rule", "version: 1\nrules:\n  - match: a/*\n    raster: {overview_resampling: lanczoss}\n", []string{"line 4", "rules[0].raster.overview_resampling", "lanczoss", "rms"}},
		{"bad vector format", "version: 1\nrules:\n  - match: a/*\n  - match: b/*\n    vector:\n      format: Shapefile\n", []string{"line 6", "rules[1].vector.format"}},
		{"bad glob", "version: 1\nexclude:\n  - \"a/[b\"\n", []string{"line 3", "bad glob", `"a/[b"`}},
		{"absolute glob", "version: 1\nrules:\n  - match: /data/*.tif\n", []string{"line 3", "bad glob"}},
		{"rule without match", "version: 1\nrules:\n  - raster: {compression: LZW}\n", []string{"rules[0]", "needs match"}},
		{"missing version", "defaults: {}\n", []string{"version 0", "reads version 1"}},
		{"future version", "version: 2\n", []string{"line 1", "version 2"}},
		{"level wrong type", "version: 1\ndefaults:\n  raster:\n    level: high\n", []string{"line 4"}},
		{"zstd level out of range", "version: 1\ndefaults:\n  raster: {compression: ZSTD, level: 30}\n", []string{"defaults", "zstd level 30"}},
		{"deflate level from defaults breaks a rule", "version: 1\ndefaults:\n  raster: {level: 15}\nrules:\n  - match: a/**\n    raster: {compression: DEFLATE}\n", []string{"line 5", "rules[0]", "deflate level 15"}},
		{"lossy lerc", "version: 1\ndefaults:\n  raster: {compression: LERC, max_z_error: 0.5}\n", []string{"line 3", "lossless"}},
		{"bad nodata", "version: 1\ndefaults:\n  raster: {nodata: none}\n", []string{"line 3", "nodata"}},
		{"bad target crs", "version: 1\ndefaults:\n  raster: {target_crs: \"+proj=merc\"}\n", []string{"line 3", "AUTHORITY:CODE"}},
		{"bad overview levels", "version: 1\ndefaults:\n  raster: {overview_levels: many}\n", []string{"line 3", "overview_levels"}},
		{"reserved creation option", "version: 1\ndefaults:\n  raster:\n    creation_options: {NUM_THREADS: 4}\n", []string{"line 4", "NUM_THREADS", "set by geomigrate"}},
		{"row group size", "version: 1\ndefaults:\n  vector: {row_group_size: 0}\n", []string{"line 3", "positive"}},
		{"bad attribute tables", "version: 1\ndefaults:\n  vector: {attribute_tables: csv}\n", []string{"line 3", "attribute_tables", "parquet"}},
		{"glob of the wrong shape", "version: 1\nrules:\n  - match: {a: b}\n", []string{"line 3", "want a glob or a list of globs"}},
		{"null glob in a list", "version: 1\nexclude:\n  - a/**\n  -\n", []string{"line 4", "want a glob"}},
		{"empty file", "", []string{"empty", "version: 1"}},
		{"not yaml", "version: [1\n", []string{"line 1"}},
		{"duplicate key", "version: 1\nversion: 1\n", []string{"line 2", "already defined"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text))
			if err == nil {
				t.Fatal("parsed")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestExampleRecipeParses(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../examples/recipe.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := mustParse(t, string(b))
	if len(f.Rules) < 4 || len(f.Exclude) == 0 {
		t.Fatalf("example lost its rules: %+v", f)
	}
	book := &Book{File: f}
	r, m, err := book.Resolve(baseRecipe(), "dem/alps/tile_01.tif")
	if err != nil || r.Compression != "LERC_ZSTD" || r.ZSTDLevel != 15 || len(m.Rules) != 1 {
		t.Fatalf("dem tile: %+v %+v %v", r, m, err)
	}
	if book.Excluded("scratch/x.tif") == "" {
		t.Error("scratch/ not excluded")
	}
}

const precedenceFile = `version: 1
defaults:
  raster: {compression: DEFLATE, level: 9, blocksize: 256}
  vector: {row_group_size: 1000}
rules:
  - match: "**/*.tif"
    raster: {compression: ZSTD, level: 12}
  - match: "dem/**"
    exclude: "dem/old/**"
    raster: {level: 3, overview_levels: none, nodata: -9999}
  - match: "dem/special.tif"
    raster: {compression: LZW, predictor: standard, target_crs: epsg:3035}
    vector: {format: flatgeobuf}
  - match: ["roads/**", "rail/**"]
    vector: {format: FlatGeobuf, geometry_policy: Strict, compression: snappy, attribute_tables: Parquet}
    raster:
      creation_options: {bigtiff: "YES"}
`

func TestResolvePrecedence(t *testing.T) {
	t.Parallel()
	book := &Book{File: mustParse(t, precedenceFile)}
	cases := []struct {
		key   string
		rules []int
		check func(r Recipe) bool
	}{
		{"top.tif", []int{0}, func(r Recipe) bool {
			return r.Compression == "ZSTD" && r.ZSTDLevel == 12 && r.BlockSize == 256 && r.DeflateLevel == DefaultDeflateLevel
		}},
		{"top.img", nil, func(r Recipe) bool {
			// Defaults only: DEFLATE takes the level.
			return r.Compression == "DEFLATE" && r.DeflateLevel == 9 && r.ZSTDLevel == DefaultZSTDLevel && r.RowGroupRows == 1000
		}},
		{"dem/a/b.tif", []int{0, 1}, func(r Recipe) bool {
			// Last match wins field by field: compression from rule 0,
			// level from rule 1.
			return r.Compression == "ZSTD" && r.ZSTDLevel == 3 && r.OverviewLevels == OverviewsNone && r.NoData == "-9999"
		}},
		{"dem/old/b.tif", []int{0}, func(r Recipe) bool { return r.ZSTDLevel == 12 && r.NoData == "" }},
		{"dem/special.tif", []int{0, 1, 2}, func(r Recipe) bool {
			// LZW takes no level; the pending 3 is dropped, ZSTD's stays default.
			return r.Compression == "LZW" && r.ZSTDLevel == DefaultZSTDLevel && r.Predictor == "standard" &&
				r.TargetCRS == "EPSG:3035" && r.VectorFormat == FormatFlatGeobuf && r.NoData == "-9999"
		}},
		{"rail/x.shp", []int{3}, func(r Recipe) bool {
			return r.VectorFormat == FormatFlatGeobuf && r.GeometryPolicy == GeometryStrict && r.ParquetCompression == "snappy" && r.AttributeTables == AttributeTablesParquet &&
				reflect.DeepEqual(r.CreationOptions, []string{"BIGTIFF=YES"})
		}},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			r, m, err := book.Resolve(baseRecipe(), c.key)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m.Rules, c.rules) {
				t.Errorf("rules %v, want %v", m.Rules, c.rules)
			}
			if !c.check(r) {
				t.Errorf("resolved %+v", r)
			}
			if r.EngineVersion != "3.6.2" || r.ToolVersion != "v0.1.0" {
				t.Error("versions of the base lost")
			}
		})
	}
}

func TestFlagsOverrideFile(t *testing.T) {
	t.Parallel()
	zstd, lvl, fgb := "zstd", 20, "FlatGeobuf"
	book := &Book{File: mustParse(t, precedenceFile), Flags: Settings{
		Raster: RasterSettings{Compression: &zstd, Level: &lvl, CreationOptions: map[string]string{"bigtiff": "NO"}},
		Vector: VectorSettings{Format: &fgb},
	}}
	for _, key := range []string{"top.img", "dem/special.tif", "rail/x.tif"} {
		r, _, err := book.Resolve(baseRecipe(), key)
		if err != nil {
			t.Fatal(err)
		}
		if r.Compression != "ZSTD" || r.ZSTDLevel != 20 || r.VectorFormat != FormatFlatGeobuf ||
			!reflect.DeepEqual(r.CreationOptions, []string{"BIGTIFF=NO"}) {
			t.Errorf("%s: flags did not win: %+v", key, r)
		}
	}
	// --zstd-level sets ZSTD's level, over the file's level, and leaves
	// the codec alone.
	book = &Book{File: mustParse(t, precedenceFile), Flags: Settings{Raster: RasterSettings{ZSTDLevel: &lvl}}}
	for key, codec := range map[string]string{"top.img": "DEFLATE", "dem/a/b.tif": "ZSTD"} {
		r, _, err := book.Resolve(baseRecipe(), key)
		if err != nil || r.Compression != codec || r.ZSTDLevel != 20 {
			t.Errorf("%s with --zstd-level: %+v %v", key, r, err)
		}
	}
	// A Book without a file is the flags over the base.
	r, _, err := (&Book{Flags: Settings{Raster: RasterSettings{Level: &lvl}}}).Resolve(baseRecipe(), "x.tif")
	if err != nil || r.ZSTDLevel != 20 {
		t.Fatalf("%+v %v", r, err)
	}
	// A nil Book is the base.
	r, _, err = (*Book)(nil).Resolve(baseRecipe(), "x.tif")
	if err != nil || r.Hash() != baseRecipe().Hash() {
		t.Fatalf("nil book: %v", err)
	}
}

func TestIncludeExclude(t *testing.T) {
	t.Parallel()
	book := &Book{File: mustParse(t, "version: 1\ninclude: [\"data/**\"]\nexclude: [\"data/tmp/**\", \"**/*.bak.tif\"]\n")}
	cases := map[string]string{
		"data/a.tif":       "",
		"data/x/y.gpkg":    "",
		"data/tmp/a.tif":   "excluded by the recipe",
		"data/a.bak.tif":   "excluded by the recipe",
		"other/a.tif":      "not included by the recipe",
		"a.tif":            "not included by the recipe",
		"data/deep/b.tiff": "",
	}
	for key, want := range cases {
		if got := book.Excluded(key); got != want {
			t.Errorf("%s: %q, want %q", key, got, want)
		}
	}
	if (*Book)(nil).Excluded("x") != "" || (&Book{}).Excluded("x") != "" {
		t.Error("no file excluded something")
	}
}

// TestHashChangesOnlyForMatchedKeys: editing one rule changes the recipe
// hash of exactly the keys that rule matches.
func TestHashChangesOnlyForMatchedKeys(t *testing.T) {
	t.Parallel()
	before := mustParse(t, precedenceFile)
	after := mustParse(t, strings.Replace(precedenceFile, "raster: {level: 3, overview_levels: none, nodata: -9999}", "raster: {level: 4, overview_levels: none, nodata: -9999}", 1))
	keys := map[string]bool{ // key → matched by the edited rule (rule 1) with an effect
		"top.tif": false, "top.img": false, "dem/a/b.tif": true, "dem/x.img": true, "dem/old/b.tif": false,
		// LZW ignores the level: the edit does not change its output.
		"dem/special.tif": false, "rail/x.shp": false, "roads/r.gpkg": false,
	}
	for key, changed := range keys {
		r1, _, err1 := (&Book{File: before}).Resolve(baseRecipe(), key)
		r2, _, err2 := (&Book{File: after}).Resolve(baseRecipe(), key)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if got := r1.Hash() != r2.Hash(); got != changed {
			t.Errorf("%s: hash changed %v, want %v", key, got, changed)
		}
	}
}

// TestDefaultsOfNewSettingsKeepTheHash: a file that spells out the
// defaults resolves to the recipe hash of no file at all, so adopting a
// recipe file re-converts nothing that it does not change.
func TestDefaultsOfNewSettingsKeepTheHash(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `version: 1
defaults:
  raster: {compression: zstd, level: 3, predictor: auto, blocksize: 512, overview_resampling: auto, overview_levels: auto, nodata: keep, target_crs: keep}
  vector: {format: geoparquet, geometry_policy: keep, row_group_size: 65536, compression: zstd}
`)
	r, _, err := (&Book{File: f}).Resolve(baseRecipe(), "a/b.tif")
	if err != nil {
		t.Fatal(err)
	}
	if r.Hash() != goldenHash {
		t.Fatalf("hash %s, want the golden %s\n%s", r.Hash(), goldenHash, r.CanonicalJSON())
	}
}

func TestNewSettingsChangeTheHash(t *testing.T) {
	t.Parallel()
	seen := map[string]string{baseRecipe().Hash(): "base"}
	for name, mod := range map[string]func(*Recipe){
		"compression":      func(r *Recipe) { r.Compression = "DEFLATE" },
		"deflate level":    func(r *Recipe) { r.Compression, r.DeflateLevel = "DEFLATE", 9 },
		"predictor":        func(r *Recipe) { r.Predictor = "none" },
		"overview levels":  func(r *Recipe) { r.OverviewLevels = 2 },
		"no overviews":     func(r *Recipe) { r.OverviewLevels = OverviewsNone },
		"nodata":           func(r *Recipe) { r.NoData = "0" },
		"target crs":       func(r *Recipe) { r.TargetCRS = "EPSG:3035" },
		"web optimized":    func(r *Recipe) { r.TargetCRS = WebOptimized },
		"creation option":  func(r *Recipe) { r.CreationOptions = []string{"BIGTIFF=YES"} },
		"parquet codec":    func(r *Recipe) { r.ParquetCompression = "snappy" },
		"attribute tables": func(r *Recipe) { r.AttributeTables = AttributeTablesParquet },
	} {
		r := baseRecipe()
		mod(&r)
		if err := r.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		h := r.Hash()
		if prev, dup := seen[h]; dup {
			t.Errorf("%s: hash equals that of %s", name, prev)
		}
		seen[h] = name
	}
}

func TestCreationOption(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want, err string }{
		{"bigtiff=YES", "BIGTIFF=YES", ""},
		{" GEOTIFF_VERSION=1.1", "GEOTIFF_VERSION=1.1", ""},
		{"NOVALUE", "", "KEY=VALUE"},
		{"=x", "", "KEY=VALUE"},
		{"TILING_SCHEME=GoogleMapsCompatible", "", "target_crs"},
		{"MAX_Z_ERROR=1", "", "lossless"},
	}
	for _, c := range cases {
		got, err := CreationOption(c.in)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: %q %v", c.in, got, err)
		}
	}
}

// TestReadmeRecipeParses keeps the README's example recipe a working one.
func TestReadmeRecipeParses(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "### Recipe files")
	if !ok {
		t.Fatal("README has no Recipe files section")
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no yaml block in the Recipe files section")
	}
	f := mustParse(t, block)
	r, m, err := (&Book{File: f}).Resolve(baseRecipe(), "basemap/ortho.tif")
	if err != nil || r.TargetCRS != WebOptimized || len(m.Rules) != 1 {
		t.Fatalf("%+v %+v %v", r, m, err)
	}
}

// FuzzParse: any input is parsed or refused with an error, never a panic,
// and what parses resolves (or fails) cleanly for any key.
func FuzzParse(f *testing.F) {
	for _, s := range []string{precedenceFile, e2eSeed, "version: 1\n", "version: 1\nrules:\n  - match: a/*\n", "version: [1\n"} {
		f.Add([]byte(s), "dem/a/b.tif")
	}
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		r, _, err := (&Book{File: file}).Resolve(baseRecipe(), key)
		if err == nil && r.Validate() != nil {
			t.Fatalf("Resolve returned an invalid recipe: %v", r.Validate())
		}
	})
}

const e2eSeed = `version: 1
exclude: ["scratch/**"]
defaults:
  raster: {compression: ZSTD, level: 9, nodata: nan, overview_levels: none}
  vector: {format: flatgeobuf}
rules:
  - match: ["dem/**", "x/*.tif"]
    exclude: dem/old/**
    raster: {compression: DEFLATE, level: 6, creation_options: {BIGTIFF: "YES"}}
`

// TestAssignCRSAndCSVRules: the settings parse per glob, are checked, and
// enter the recipe hash (a replay after adding them converts again).
func TestAssignCRSAndCSVRules(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`version: 1
rules:
  - match: "raw/**"
    assign_crs: "epsg:4326"
  - match: "raw/**/*.csv"
    csv: {geometry: XY, x_column: lon, y_column: lat}
`))
	if err != nil {
		t.Fatal(err)
	}
	b := &Book{File: f}
	base := DefaultRecipe()
	plain, _, _ := b.Resolve(base, "other/a.tif")
	tif, _, err := b.Resolve(base, "raw/a.tif")
	if err != nil || tif.AssignCRS != "EPSG:4326" || tif.CSVGeometry != "" {
		t.Fatalf("raw/a.tif: %+v, %v", tif, err)
	}
	csv, _, err := b.Resolve(base, "raw/x/b.csv")
	if err != nil || csv.CSVGeometry != CSVGeometryXY || csv.CSVXColumn != "lon" || csv.CSVYColumn != "lat" || csv.AssignCRS != "EPSG:4326" {
		t.Fatalf("raw/x/b.csv: %+v, %v", csv, err)
	}
	if plain.Hash() == tif.Hash() || tif.Hash() == csv.Hash() {
		t.Error("assign_crs or csv does not change the recipe hash")
	}
	if plain.Hash() != DefaultRecipe().Hash() {
		t.Error("a recipe without them changed its hash")
	}
	for _, bad := range []string{
		"rules: [{match: a, assign_crs: WGS84}]",
		"rules: [{match: a, assign_crs: web-optimized}]",
		"rules: [{match: a, csv: {geometry: wkb}}]",
		"rules: [{match: a, csv: {geometry: xy, x_column: lon}}]",
		"rules: [{match: a, csv: {geometry: wkt}}]",
		`rules: [{match: a, csv: {geometry: wkt, wkt_column: "a,b"}}]`,
	} {
		if _, err := Parse([]byte("version: 1\n" + bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
