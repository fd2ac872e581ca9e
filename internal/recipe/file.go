package recipe

// Size: one format's parser: the recipe file's schema, its positioned YAML errors, and its check and apply into a Recipe.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// FileVersion is the only recipe file version this build reads.
const FileVersion = 1

// File is a parsed recipe file (YAML): defaults for every source, and
// rules that override them for the sources their globs match.
//
//	version: 1
//	exclude: ["scratch/**"]
//	defaults:
//	  raster: {compression: ZSTD, level: 9}
//	rules:
//	  - match: "dem/**/*.tif"
//	    raster: {compression: LERC_ZSTD, overview_resampling: average}
//
// Globs match the source key (the path under the directory or bucket given
// to migrate, "/"-separated) with doublestar semantics: "*" stays within a
// path segment, "**" crosses any number of them, so "*.tif" matches only
// top-level files and "**/*.tif" matches at any depth.
//
// Precedence: defaults first, then every matching rule in file order, field
// by field, so the last matching rule that sets a field wins; command-line
// flags (Book.Flags) come last of all.
type File struct {
	Version int `yaml:"version"`
	// data is the file's text, for the line of a value Check refuses.
	data []byte
	// Include, when not empty, limits the run to the keys it matches;
	// Exclude names keys never routed. Both only ever narrow: a file that
	// is not geospatial by its name (internal/formats) is ignored whatever
	// the globs say.
	Include  Globs    `yaml:"include"`
	Exclude  Globs    `yaml:"exclude"`
	Defaults Settings `yaml:"defaults"`
	Rules    []Rule   `yaml:"rules"`
}

// Rule overrides settings for the keys Match matches and Exclude does not.
type Rule struct {
	Match    Globs `yaml:"match"`
	Exclude  Globs `yaml:"exclude"`
	Settings `yaml:",inline"`
}

// Globs is one glob or a list of them.
type Globs []string

// UnmarshalYAML accepts a single string as a list of one.
func (g *Globs) UnmarshalYAML(n ast.Node) error {
	bad := func(n ast.Node) error {
		p := n.GetToken().Position
		return fmt.Errorf("line %d, column %d: want a glob or a list of globs", p.Line, p.Column)
	}
	scalar := func(n ast.Node) (string, bool) {
		sn, ok := n.(ast.ScalarNode)
		if !ok || n.Type() == ast.NullType {
			return "", false
		}
		return fmt.Sprint(sn.GetValue()), true
	}
	if seq, ok := n.(*ast.SequenceNode); ok {
		list := Globs{}
		for _, item := range seq.Values {
			s, ok := scalar(item)
			if !ok {
				return bad(item)
			}
			list = append(list, s)
		}
		*g = list
		return nil
	}
	s, ok := scalar(n)
	if !ok {
		return bad(n)
	}
	*g = Globs{s}
	return nil
}

func (g Globs) match(key string) bool {
	for _, p := range g {
		if ok, _ := doublestar.Match(p, key); ok { // patterns are checked at Parse
			return true
		}
	}
	return false
}

// Settings are the overridable parts of a recipe, by the kind of source
// they apply to. A nil field is not set (the earlier value stays).
type Settings struct {
	Raster RasterSettings `yaml:"raster"`
	Vector VectorSettings `yaml:"vector"`
	// AssignCRS is the CRS of sources that declare none (AUTHORITY:CODE,
	// e.g. "EPSG:4326"): the fix for MissingCRS that needs no edit of the
	// source (gdal_translate / ogr2ogr -a_srs). A source whose CRS differs
	// is refused (docs/decisions/0092).
	AssignCRS *string `yaml:"assign_crs"`
	// Datetime is the STAC datetime of the outputs (RFC 3339 or a date),
	// over the file's own (TIFF DateTime) and the source's Last-Modified.
	Datetime *string `yaml:"datetime"`
	// CSV names the geometry columns of a CSV source.
	CSV CSVSettings `yaml:"csv"`
}

// CSVSettings tell GDAL's CSV driver where a table's geometry is: a WKT
// column (geometry: wkt) or two coordinate columns (geometry: xy). A CSV
// carries no CRS: assign_crs gives it one.
type CSVSettings struct {
	Geometry  *string `yaml:"geometry"`   // wkt, xy
	WKTColumn *string `yaml:"wkt_column"` // geometry: wkt
	XColumn   *string `yaml:"x_column"`   // geometry: xy (longitude, easting)
	YColumn   *string `yaml:"y_column"`   // geometry: xy (latitude, northing)
}

// CSV geometry encodings.
const (
	CSVGeometryWKT = "wkt"
	CSVGeometryXY  = "xy"
)

// RasterSettings use the vocabulary of `gdal_translate -of COG -co` and
// rio-cogeo.
type RasterSettings struct {
	// Profile is a rio-cogeo profile name (Profiles): a compression.
	Profile     *string  `yaml:"profile"`
	Compression *string  `yaml:"compression"` // Compressions
	Level       *int     `yaml:"level"`       // ZSTD 1..22 (LEVEL), DEFLATE 1..12
	MaxZError   *float64 `yaml:"max_z_error"` // LERC; only 0 (lossless) is accepted
	Predictor   *string  `yaml:"predictor"`   // auto, none (1, no), standard (2), floating_point (3)
	BlockSize   *int     `yaml:"blocksize"`   // BLOCKSIZE
	// Quality and MinPSNR: JPEG and WEBP only (Recipe.Quality).
	Quality *int     `yaml:"quality"`
	MinPSNR *float64 `yaml:"min_psnr_db"`
	// OverviewResampling: OverviewResamplings (near for nearest).
	OverviewResampling *string `yaml:"overview_resampling"`
	// OverviewLevels: "auto" (down to one tile), "none", or a count
	// (OVERVIEW_COUNT).
	OverviewLevels *string `yaml:"overview_levels"`
	// NoData is assigned to every band (gdal_translate -a_nodata): a
	// number, nan, inf or -inf; "keep" keeps the source's.
	NoData *string `yaml:"nodata"`
	// TargetCRS reprojects through GDAL's warper: an authority code
	// ("EPSG:3035"), "web-optimized" (EPSG:3857 on the Web Mercator
	// zoom-level grid, like rio-cogeo --web-optimized) or "keep".
	TargetCRS *string `yaml:"target_crs"`
	// CreationOptions are passed through to the COG driver
	// (gdal_translate -co KEY=VALUE); they win over the settings above.
	CreationOptions map[string]string `yaml:"creation_options"`
	// ZSTDLevel is --zstd-level: the ZSTD level wherever ZSTD is used,
	// whatever the codec (not in the file, whose "level" is the codec's).
	ZSTDLevel *int `yaml:"-"`
}

// VectorSettings use the vocabulary of ogr2ogr and gpq.
type VectorSettings struct {
	Format         *string `yaml:"format"`          // GeoParquet, FlatGeobuf (case-insensitive)
	GeometryPolicy *string `yaml:"geometry_policy"` // keep, repair, strict
	// Curves: refuse (default) or linearize; CurveStepDegrees is the
	// largest angle one segment of a linearised arc spans.
	Curves           *string  `yaml:"curves"`
	CurveStepDegrees *float64 `yaml:"curve_step_degrees"`
	RowGroupSize     *int     `yaml:"row_group_size"` // GeoParquet rows per row group
	Compression      *string  `yaml:"compression"`    // GeoParquet: zstd, snappy, gzip, brotli, lz4, none
	// AttributeTables: refuse (default) or parquet, for layers without a
	// geometry column (docs/decisions/0091).
	AttributeTables *string `yaml:"attribute_tables"`
}

// Compressions of a COG a recipe names (GDAL's COMPRESS values). Whether
// the engine's COG driver writes one is checked before a run
// (Capabilities.Compressions): GDAL 3.6's has no PACKBITS, a GDAL built
// without libwebp no WEBP.
var Compressions = []string{"ZSTD", "DEFLATE", "LZW", "LERC", "LERC_DEFLATE", "LERC_ZSTD", "NONE", "LZMA", "PACKBITS", "JPEG", "WEBP"}

// LossyCompressions are chosen only with a threshold (Recipe.MinPSNR).
var LossyCompressions = []string{"JPEG", "WEBP"}

// Profiles are rio-cogeo's profile names with the compression each means
// (rio-cogeo's profiles are tiled 512 x 512, as a recipe is by default).
var Profiles = map[string]string{
	"zstd": "ZSTD", "deflate": "DEFLATE", "lzw": "LZW", "lzma": "LZMA", "packbits": "PACKBITS", "raw": "NONE",
	"jpeg": "JPEG", "ycbcr": "JPEG", "webp": "WEBP", "lerc": "LERC", "lerc_deflate": "LERC_DEFLATE", "lerc_zstd": "LERC_ZSTD",
}

// Predictors: auto picks 2 or 3 for continuous data and none for
// categorical data.
var Predictors = []string{"auto", "none", "standard", "floating_point"}

// predictorName maps GDAL's and TIFF's spellings of a predictor onto a
// recipe's: 1 and NO are none, 2 standard, 3 floating_point. GDAL's YES
// (2 or 3 by data type, categorical data included) has no recipe name.
func predictorName(s string) (string, bool) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "1", "no", "false":
		return "none", true
	case "2":
		return "standard", true
	case "3":
		return "floating_point", true
	default:
		return v, slices.Contains(Predictors, v)
	}
}

// resamplingName maps GDAL's "near" onto nearest.
func resamplingName(s string) string {
	if v := strings.ToLower(s); v != "near" {
		return v
	}
	return ResamplingNearest
}

// lifted is s with GDAL's and rio-cogeo's spellings moved onto the
// recipe's fields: profile onto compression, and the creation options
// COMPRESS, PREDICTOR (but YES), QUALITY, LEVEL and BLOCKSIZE onto
// compression, predictor, quality, level and blocksize, so that a recipe's checks (a lossy
// codec needs a threshold, a level its range) see them. A setting given
// twice in one place is refused.
func (s RasterSettings) lifted(at string) (RasterSettings, error) {
	twice := func(what, other string) error {
		return &fieldError{at, fmt.Sprintf("%s is given twice (%s and %s): give one", what, what, other)}
	}
	if s.Profile != nil {
		c, ok := Profiles[strings.ToLower(*s.Profile)]
		if !ok {
			return s, &fieldError{at + ".profile", fmt.Sprintf("%q: want one of rio-cogeo's profiles %s", *s.Profile, strings.Join(slices.Sorted(maps.Keys(Profiles)), ", "))}
		}
		if s.Compression != nil {
			return s, twice("compression", "profile")
		}
		s.Compression = &c
	}
	if len(s.CreationOptions) == 0 {
		return s, nil
	}
	co := maps.Clone(s.CreationOptions)
	s.CreationOptions = co
	for k, v := range co {
		switch strings.ToUpper(k) {
		case "COMPRESS":
			if s.Compression != nil {
				return s, twice("compression", "creation_options.COMPRESS")
			}
			c := strings.ToUpper(v)
			s.Compression = &c
		case "PREDICTOR":
			p, ok := predictorName(v)
			if !ok || strings.EqualFold(v, "yes") {
				continue // YES, or a value the COG driver's list judges
			}
			if s.Predictor != nil {
				return s, twice("predictor", "creation_options.PREDICTOR")
			}
			s.Predictor = &p
		case "QUALITY":
			q, err := strconv.Atoi(v)
			if err != nil {
				return s, &fieldError{at + ".creation_options." + k, fmt.Sprintf("%q: want a quality 1..100", v)}
			}
			if s.Quality != nil {
				return s, twice("quality", "creation_options.QUALITY")
			}
			s.Quality = &q
		case "BLOCKSIZE":
			n, err := strconv.Atoi(v)
			if err != nil {
				return s, &fieldError{at + ".creation_options." + k, fmt.Sprintf("%q: want a tile size in pixels", v)}
			}
			if s.BlockSize != nil {
				return s, twice("blocksize", "creation_options.BLOCKSIZE")
			}
			s.BlockSize = &n
		case "LEVEL":
			l, err := strconv.Atoi(v)
			if err != nil {
				return s, &fieldError{at + ".creation_options." + k, fmt.Sprintf("%q: want a level", v)}
			}
			if s.Level != nil {
				return s, twice("level", "creation_options.LEVEL")
			}
			s.Level = &l
		default:
			continue
		}
		delete(co, k)
	}
	return s, nil
}

// ParquetCompressions are the GeoParquet column codecs.
var ParquetCompressions = []string{"zstd", "snappy", "gzip", "brotli", "lz4", "none"}

// WebOptimized is the TargetCRS preset for EPSG:3857 on the zoom-level grid.
const WebOptimized = "web-optimized"

// Parse reads a recipe file, strictly: an unknown key, a value of the wrong
// type or outside its set, or a bad glob is an error that names its line.
func Parse(data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.DisallowUnknownField())
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("recipe.Parse: the file is empty: a recipe file starts with version: 1")
		}
		return nil, yamlError(err)
	}
	if err := f.check(); err != nil {
		return nil, locate("recipe.Parse", data, err)
	}
	f.data = data
	return &f, nil
}

// fieldError is a problem with one value, at its YAML path.
type fieldError struct {
	path string // goccy path: $.rules[0].raster.compression
	msg  string
}

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

// yamlError shortens the library's error (which quotes the source) to
// "line:column: message".
func yamlError(err error) error {
	var te interface {
		GetMessage() string
		GetToken() *token.Token
	}
	if errors.As(err, &te) && te.GetToken() != nil {
		p := te.GetToken().Position
		return fmt.Errorf("recipe.Parse: line %d, column %d: %s", p.Line, p.Column, te.GetMessage())
	}
	return fmt.Errorf("recipe.Parse: %w", err)
}

// locate adds the line of the value a fieldError names.
func locate(where string, data []byte, err error) error {
	var fe *fieldError
	if !errors.As(err, &fe) {
		return fmt.Errorf("%s: %w", where, err)
	}
	name := strings.TrimPrefix(strings.TrimPrefix(fe.path, "$"), ".")
	if name == "" {
		name = "file"
	}
	if file, err := parser.ParseBytes(data, 0); err == nil {
		// The nearest node that exists: "match: x" is the list match[0].
		for at := fe.path; at != "$" && at != ""; at = parentPath(at) {
			p, err := yaml.PathString(at)
			if err != nil {
				break
			}
			if n, err := p.FilterFile(file); err == nil && n != nil {
				return fmt.Errorf("%s: line %d: %s: %s", where, lineOf(n), name, fe.msg)
			}
		}
	}
	return fmt.Errorf("%s: %s: %s", where, name, fe.msg)
}

func parentPath(p string) string {
	if i := strings.LastIndexAny(p, ".["); i > 0 {
		return p[:i]
	}
	return ""
}

func lineOf(n ast.Node) int {
	if t := n.GetToken(); t != nil {
		return t.Position.Line
	}
	return 0
}

func (f *File) check() error {
	if f.Version != FileVersion {
		return &fieldError{"$.version", fmt.Sprintf("version %d: this geomigrate reads version %d", f.Version, FileVersion)}
	}
	if err := checkGlobs("$.include", f.Include); err != nil {
		return err
	}
	if err := checkGlobs("$.exclude", f.Exclude); err != nil {
		return err
	}
	if err := f.Defaults.check("$.defaults"); err != nil {
		return err
	}
	if err := trial(f.Defaults); err != nil {
		return &fieldError{f.Defaults.Raster.settingPath("$.defaults", err), err.Error()}
	}
	for i, r := range f.Rules {
		at := fmt.Sprintf("$.rules[%d]", i)
		if len(r.Match) == 0 {
			return &fieldError{at, "a rule needs match: (a glob or a list of globs)"}
		}
		if err := checkGlobs(at+".match", r.Match); err != nil {
			return err
		}
		if err := checkGlobs(at+".exclude", r.Exclude); err != nil {
			return err
		}
		if err := r.Settings.check(at); err != nil {
			return err
		}
		// Each rule on top of the defaults must make a valid recipe: a
		// level out of range for the rule's codec is found here, not on
		// the first file it matches.
		if err := trial(f.Defaults, r.Settings); err != nil {
			return &fieldError{r.Settings.Raster.settingPath(at, err), "with the defaults: " + err.Error()}
		}
	}
	return nil
}

// settingPath is where a combination a block makes is best pointed at:
// for a refused lossy choice the compression the block sets, else the
// block.
func (s RasterSettings) settingPath(at string, err error) string {
	var le lossyError
	if !errors.As(err, &le) {
		return at
	}
	switch {
	case s.Compression != nil:
		return at + ".raster.compression"
	case s.Profile != nil:
		return at + ".raster.profile"
	}
	for k := range s.CreationOptions {
		if strings.EqualFold(k, "COMPRESS") {
			return at + ".raster.creation_options." + k
		}
	}
	return at
}

// trial applies settings in order over the defaults and validates the
// result.
func trial(settings ...Settings) error {
	r := Recipe{}.WithDefaults()
	for _, s := range settings {
		if err := s.apply(&r); err != nil {
			return err
		}
	}
	r.settleLevel()
	if err := r.Validate(); err != nil {
		var le lossyError
		if errors.As(err, &le) {
			return le
		}
		return errors.New(unwrapMsg(err))
	}
	return nil
}

func unwrapMsg(err error) string {
	if u := errors.Unwrap(err); u != nil {
		return u.Error()
	}
	return err.Error()
}

func checkGlobs(at string, g Globs) error {
	for i, p := range g {
		if p == "" || !doublestar.ValidatePattern(p) || strings.HasPrefix(p, "/") {
			return &fieldError{fmt.Sprintf("%s[%d]", at, i), fmt.Sprintf("bad glob %q (globs are relative keys such as \"dem/**/*.tif\")", p)}
		}
	}
	return nil
}

func oneOf(at string, v *string, set []string, fold bool) error {
	if v == nil {
		return nil
	}
	for _, s := range set {
		if *v == s || (fold && strings.EqualFold(*v, s)) {
			return nil
		}
	}
	return &fieldError{at, fmt.Sprintf("%q: want one of %s", *v, strings.Join(set, ", "))}
}

// check validates each value on its own (enums, ranges); combinations
// are checked by Recipe.Validate.
func (s Settings) check(at string) error {
	r, err := s.Raster.lifted(at + ".raster")
	if err != nil {
		return err
	}
	if err := r.check(at + ".raster"); err != nil {
		return err
	}
	if err := s.Vector.check(at + ".vector"); err != nil {
		return err
	}
	return s.checkReading(at)
}

// check validates the raster values (after lifted) at ra.
func (r RasterSettings) check(ra string) error {
	if err := oneOf(ra+".compression", r.Compression, Compressions, true); err != nil {
		return err
	}
	if r.Predictor != nil {
		if _, ok := predictorName(*r.Predictor); !ok {
			return &fieldError{ra + ".predictor", fmt.Sprintf("%q: want one of %s (or GDAL's 1, 2, 3)", *r.Predictor, strings.Join(Predictors, ", "))}
		}
	}
	if r.OverviewResampling != nil {
		name := resamplingName(*r.OverviewResampling)
		if err := oneOf(ra+".overview_resampling", &name, OverviewResamplings, true); err != nil {
			return err
		}
	}
	if q := r.Quality; q != nil && (*q < 1 || *q > 100) {
		return &fieldError{ra + ".quality", fmt.Sprintf("%d: want 1..100", *q)}
	}
	if p := r.MinPSNR; p != nil && !(*p > 0 && *p <= 200) {
		return &fieldError{ra + ".min_psnr_db", fmt.Sprintf("%v: want more than 0 and at most 200 dB", *p)}
	}
	if r.OverviewLevels != nil {
		if _, err := parseLevels(*r.OverviewLevels); err != nil {
			return &fieldError{ra + ".overview_levels", err.Error()}
		}
	}
	if r.NoData != nil {
		if _, err := parseNoData(*r.NoData); err != nil {
			return &fieldError{ra + ".nodata", err.Error()}
		}
	}
	if r.TargetCRS != nil {
		if _, err := parseTargetCRS(*r.TargetCRS); err != nil {
			return &fieldError{ra + ".target_crs", err.Error()}
		}
	}
	if r.MaxZError != nil && *r.MaxZError != 0 {
		return &fieldError{ra + ".max_z_error", "only 0 (lossless) is accepted: every output is checked pixel for pixel against its source"}
	}
	for k, val := range r.CreationOptions {
		if _, err := CreationOption(k + "=" + val); err != nil {
			return &fieldError{ra + ".creation_options." + k, err.Error()}
		}
	}
	return nil
}

// check validates the vector values at va.
func (v VectorSettings) check(va string) error {
	if err := oneOf(va+".format", v.Format, []string{FormatGeoParquet, FormatFlatGeobuf}, true); err != nil {
		return err
	}
	if err := oneOf(va+".geometry_policy", v.GeometryPolicy, []string{GeometryKeep, GeometryRepair, GeometryStrict}, true); err != nil {
		return err
	}
	if err := oneOf(va+".curves", v.Curves, []string{CurvesRefuse, CurvesLinearize}, true); err != nil {
		return err
	}
	if d := v.CurveStepDegrees; d != nil && !(*d > 0 && *d <= 90) {
		return &fieldError{va + ".curve_step_degrees", fmt.Sprintf("%v: want more than 0 and at most 90 degrees", *d)}
	}
	if err := oneOf(va+".compression", v.Compression, ParquetCompressions, true); err != nil {
		return err
	}
	if err := oneOf(va+".attribute_tables", v.AttributeTables, []string{AttributeTablesRefuse, AttributeTablesParquet}, true); err != nil {
		return err
	}
	if v.RowGroupSize != nil && *v.RowGroupSize < 1 {
		return &fieldError{va + ".row_group_size", fmt.Sprintf("%d: want a positive number of rows", *v.RowGroupSize)}
	}
	return nil
}

// checkReading validates how sources are read: the CRS to assign, the
// datetime, and CSV geometry columns.
func (s Settings) checkReading(at string) error {
	if s.AssignCRS != nil {
		if _, err := parseAssignCRS(*s.AssignCRS); err != nil {
			return &fieldError{at + ".assign_crs", err.Error()}
		}
	}
	if s.Datetime != nil {
		if _, err := ParseDatetime(*s.Datetime); err != nil {
			return &fieldError{at + ".datetime", err.Error()}
		}
	}
	if err := oneOf(at+".csv.geometry", s.CSV.Geometry, []string{CSVGeometryWKT, CSVGeometryXY}, true); err != nil {
		return err
	}
	for name, c := range map[string]*string{"wkt_column": s.CSV.WKTColumn, "x_column": s.CSV.XColumn, "y_column": s.CSV.YColumn} {
		if c != nil && !csvColumnOK(*c) {
			return &fieldError{at + ".csv." + name, fmt.Sprintf("%q: want a column name (no comma, quote or line break)", *c)}
		}
	}
	return nil
}

// parseLevels: "auto" → 0, "none" → OverviewsNone, N ≥ 1 → N.
func parseLevels(s string) (int, error) {
	switch strings.ToLower(s) {
	case "auto":
		return 0, nil
	case "none", "0":
		return OverviewsNone, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 30 {
		return 0, fmt.Errorf("%q: want auto, none or a number of levels 1..30", s)
	}
	return n, nil
}

// parseNoData: "keep" → "", else the canonical text of a float64.
func parseNoData(s string) (string, error) {
	if strings.EqualFold(s, "keep") {
		return "", nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return "", fmt.Errorf("%q: want a number, nan, inf, -inf or keep", s)
	}
	return formatNoData(f), nil
}

func formatNoData(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// parseTargetCRS: "keep" → "", "web-optimized", or AUTHORITY:CODE
// upper-cased. Other CRS definitions (WKT, PROJ strings) are refused: a
// code is what a recipe hash can compare.
func parseTargetCRS(s string) (string, error) {
	switch strings.ToLower(s) {
	case "keep", "":
		return "", nil
	case WebOptimized:
		return WebOptimized, nil
	}
	auth, code, ok := strings.Cut(s, ":")
	if ok && auth != "" && code != "" && !strings.ContainsAny(s, " \t\n") {
		if _, err := strconv.Atoi(code); err == nil {
			return strings.ToUpper(auth) + ":" + code, nil
		}
	}
	return "", fmt.Errorf("%q: want AUTHORITY:CODE (EPSG:3035), web-optimized or keep", s)
}

// parseAssignCRS: AUTHORITY:CODE upper-cased ("" for none); a code, like
// target_crs, is what a recipe hash can compare.
func parseAssignCRS(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	crs, err := parseTargetCRS(s)
	if err != nil || crs == "" || crs == WebOptimized {
		return "", fmt.Errorf("%q: want AUTHORITY:CODE (EPSG:4326)", s)
	}
	return crs, nil
}

// csvColumnOK: a name GDAL's CSV open options can carry (they are
// comma-separated lists).
func csvColumnOK(c string) bool {
	return strings.TrimSpace(c) != "" && !strings.ContainsAny(c, ",\"\n\r")
}

// CreationOption checks a KEY=VALUE raster creation option and returns it
// with the key upper-cased. Keys the engine sets itself from the recipe
// are refused (set the recipe field instead); whether the COG driver knows
// the option is checked by the engine, which has the driver's list.
func CreationOption(kv string) (string, error) {
	k, v, ok := strings.Cut(kv, "=")
	k = strings.ToUpper(strings.TrimSpace(k))
	if !ok || k == "" || strings.ContainsAny(k, " \t\n=") || strings.ContainsAny(v, "\n\r") {
		return "", fmt.Errorf("creation option %q: want KEY=VALUE", kv)
	}
	if reserved[k] {
		return "", fmt.Errorf("creation option %s is set by geomigrate itself (%s)", k, reservedWhy(k))
	}
	return k + "=" + v, nil
}

var reserved = map[string]bool{
	"NUM_THREADS": true, "TILING_SCHEME": true, "TARGET_SRS": true, "RES": true, "EXTENT": true,
	"OVERVIEWS": true, "SPARSE_OK": true, "OVERVIEW_QUALITY": true, "OVERVIEW_COMPRESS": true, "MAX_Z_ERROR": true,
}

func reservedWhy(k string) string {
	switch k {
	case "TILING_SCHEME", "TARGET_SRS", "RES", "EXTENT":
		return "use target_crs"
	case "OVERVIEW_COMPRESS", "OVERVIEW_QUALITY":
		return "overviews are compressed as the full resolution is: set compression and quality"
	case "MAX_Z_ERROR":
		return "LERC outputs are lossless; a lossy output is JPEG or WEBP with min_psnr_db"
	}
	return "it is not part of the recipe"
}

// apply writes the set fields of s over r.
func (s Settings) apply(r *Recipe) error {
	ra, err := s.Raster.lifted("raster")
	if err != nil {
		return err
	}
	if err := ra.apply(r); err != nil {
		return err
	}
	s.Vector.apply(r)
	return s.applyReading(r)
}

// apply writes the set raster fields (after lifted) over r.
func (ra RasterSettings) apply(r *Recipe) error {
	if ra.Compression != nil {
		r.Compression = strings.ToUpper(*ra.Compression)
	}
	if ra.Quality != nil {
		r.Quality = *ra.Quality
	}
	if ra.MinPSNR != nil {
		r.MinPSNR = *ra.MinPSNR
	}
	if ra.Level != nil {
		// "level" is the codec's: kept aside until the codec is known
		// (a later rule may change the compression).
		r.level = ra.Level
	}
	if ra.ZSTDLevel != nil {
		r.settleLevel() // a file's pending level gives way
		r.ZSTDLevel = *ra.ZSTDLevel
	}
	if ra.Predictor != nil {
		r.Predictor, _ = predictorName(*ra.Predictor)
	}
	if ra.BlockSize != nil {
		r.BlockSize = *ra.BlockSize
	}
	if ra.OverviewResampling != nil {
		r.OverviewResampling = resamplingName(*ra.OverviewResampling)
	}
	if ra.OverviewLevels != nil {
		n, err := parseLevels(*ra.OverviewLevels)
		if err != nil {
			return err
		}
		r.OverviewLevels = n
	}
	if ra.NoData != nil {
		nd, err := parseNoData(*ra.NoData)
		if err != nil {
			return err
		}
		r.NoData = nd
	}
	if ra.TargetCRS != nil {
		crs, err := parseTargetCRS(*ra.TargetCRS)
		if err != nil {
			return err
		}
		r.TargetCRS = crs
	}
	if len(ra.CreationOptions) > 0 {
		return ra.mergeCreationOptions(r)
	}
	return nil
}

// mergeCreationOptions sets ra's creation options over r's, one value
// per key, sorted by key.
func (ra RasterSettings) mergeCreationOptions(r *Recipe) error {
	opts := map[string]string{}
	for _, kv := range r.CreationOptions {
		k, val, _ := strings.Cut(kv, "=")
		opts[k] = val
	}
	for k, val := range ra.CreationOptions {
		kv, err := CreationOption(k + "=" + val)
		if err != nil {
			return err
		}
		k, val, _ = strings.Cut(kv, "=")
		opts[k] = val
	}
	r.CreationOptions = r.CreationOptions[:0:0]
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		r.CreationOptions = append(r.CreationOptions, k+"="+opts[k])
	}
	return nil
}

// apply writes the set vector fields over r.
func (v VectorSettings) apply(r *Recipe) {
	if v.Format != nil {
		for _, f := range []string{FormatGeoParquet, FormatFlatGeobuf} {
			if strings.EqualFold(*v.Format, f) {
				r.VectorFormat = f
			}
		}
	}
	if v.GeometryPolicy != nil {
		r.GeometryPolicy = strings.ToLower(*v.GeometryPolicy)
	}
	if v.Curves != nil {
		r.Curves = strings.ToLower(*v.Curves)
	}
	if v.CurveStepDegrees != nil {
		r.CurveStepDegrees = *v.CurveStepDegrees
	}
	if v.RowGroupSize != nil {
		r.RowGroupRows = *v.RowGroupSize
	}
	if v.Compression != nil {
		r.ParquetCompression = strings.ToLower(*v.Compression)
	}
	if v.AttributeTables != nil {
		r.AttributeTables = strings.ToLower(*v.AttributeTables)
	}
}

// applyReading writes the set reading fields (CRS to assign, datetime,
// CSV geometry) over r.
func (s Settings) applyReading(r *Recipe) error {
	if s.AssignCRS != nil {
		crs, err := parseAssignCRS(*s.AssignCRS)
		if err != nil {
			return err
		}
		r.AssignCRS = crs
	}
	if s.Datetime != nil {
		d, err := ParseDatetime(*s.Datetime)
		if err != nil {
			return err
		}
		r.Datetime = d
	}
	if c := s.CSV; c.Geometry != nil {
		r.CSVGeometry = strings.ToLower(*c.Geometry)
	}
	if c := s.CSV; c.WKTColumn != nil {
		r.CSVWKTColumn = *c.WKTColumn
	}
	if c := s.CSV; c.XColumn != nil {
		r.CSVXColumn = *c.XColumn
	}
	if c := s.CSV; c.YColumn != nil {
		r.CSVYColumn = *c.YColumn
	}
	return nil
}

// settleLevel gives a pending "level" to the codec that is finally chosen.
func (r *Recipe) settleLevel() {
	if r.level == nil {
		return
	}
	switch r.WithDefaults().Compression {
	case "DEFLATE", "LERC_DEFLATE":
		r.DeflateLevel = *r.level
	case "ZSTD", "LERC_ZSTD":
		r.ZSTDLevel = *r.level
	}
	// LZW, LERC and NONE take no level: a default level meant for
	// ZSTD does not apply to them.
	r.level = nil
}

// Match is how a key was resolved: which rules applied, or why it is not
// routed at all.
type Match struct {
	Excluded string `json:"excluded,omitempty"` // why the key is not routed ("" when it is)
	Rules    []int  `json:"rules,omitempty"`    // indexes of the rules that applied, in order
}

// Book is a recipe file with the command line's overrides: what resolves
// the recipe of each source key. A nil *Book or one without a File
// resolves every key to the base recipe with the flags applied.
type Book struct {
	File  *File
	Flags Settings
}

// Excluded says why key is not routed under the file's include and
// exclude globs, or "".
func (b *Book) Excluded(key string) string {
	if b == nil || b.File == nil {
		return ""
	}
	f := b.File
	switch {
	case f.Exclude.match(key):
		return "excluded by the recipe"
	case len(f.Include) > 0 && !f.Include.match(key):
		return "not included by the recipe"
	}
	return ""
}

// Resolve is the recipe of key: base (versions, budgets and the deployment's
// settings), then the file's defaults, every rule matching key in order,
// and the flags. The result is validated.
func (b *Book) Resolve(base Recipe, key string) (Recipe, Match, error) {
	r := base.WithDefaults()
	var m Match
	if b != nil && b.File != nil {
		m.Excluded = b.Excluded(key)
		if err := b.File.Defaults.apply(&r); err != nil {
			return Recipe{}, m, fmt.Errorf("recipe.Resolve: defaults: %w", err)
		}
		for i, rule := range b.File.Rules {
			if rule.Match.match(key) && !rule.Exclude.match(key) {
				if err := rule.Settings.apply(&r); err != nil {
					return Recipe{}, m, fmt.Errorf("recipe.Resolve: rule %d: %w", i+1, err)
				}
				m.Rules = append(m.Rules, i)
			}
		}
	}
	if b != nil {
		if err := b.Flags.apply(&r); err != nil {
			return Recipe{}, m, fmt.Errorf("recipe.Resolve: flags: %w", err)
		}
	}
	r.settleLevel()
	r = r.WithDefaults()
	if err := r.Validate(); err != nil {
		return Recipe{}, m, err
	}
	return r, m, nil
}
