package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/geomigrate/geomigrate/internal/asljudge"
	"github.com/geomigrate/geomigrate/internal/localrun"
)

// TestRealArchives migrates the real-archives corpus (one case per class of
// realarchives_cases_test.go, generated with GDAL's tools) with `geomigrate
// migrate` as a user runs it, then checks each file's end in the run report
// and has outside judges compare every output with its source: GDAL/OGR
// (scripts/judge/gdaljudge.py) for rasters and FlatGeobuf, hyparquet
// (scripts/hyparquet/rows.mjs) for GeoParquet, whose `geo` metadata must
// also validate against the official GeoParquet 1.1.0 schema. A difference
// the judge finds is accepted only when a warning of the report names it.
func TestRealArchives(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	j := findArchiveJudges(t, root)
	geoSchema := compileGeoSchema(t)

	type row struct{ name, result string }
	var summary []row
	strict := os.Getenv("GEOMIGRATE_REAL_ARCHIVES_STRICT") == "1"
	for _, c := range archiveCases {
		ok := t.Run(c.Name, func(t *testing.T) {
			rec := &recorder{t: t}
			runArchiveCase(rec, j, geoSchema, c)
			switch {
			case len(rec.problems) == 0 && c.Pending != "" && !strict:
				t.Errorf("case passes although marked pending on %q: remove its Pending mark", c.Pending)
			case len(rec.problems) == 0:
			case c.Pending != "" && !strict:
				t.Logf("PENDING (%s), %d problem(s):\n  %s", c.Pending, len(rec.problems), strings.Join(rec.problems, "\n  "))
				t.Skipf("pending on %s", c.Pending)
			default:
				t.Errorf("%d problem(s):\n  %s", len(rec.problems), strings.Join(rec.problems, "\n  "))
			}
		})
		result := "pass"
		switch {
		case !ok:
			result = "FAIL"
		case c.Pending != "" && !strict:
			result = "pending: " + c.Pending
		}
		summary = append(summary, row{c.Name, result})
	}
	var b strings.Builder
	for _, r := range summary {
		fmt.Fprintf(&b, "\n  %-28s %s", r.name, r.result)
	}
	t.Logf("real archives:%s", b.String())
}

// recorder collects a case's problems, so that a pending case can report
// them all without failing.
type recorder struct {
	t        *testing.T
	problems []string
}

func (r *recorder) errorf(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// archiveJudges are the outside readers' commands.
type archiveJudges struct {
	gdaljudge, rows string
}

func findArchiveJudges(t *testing.T, root string) archiveJudges {
	t.Helper()
	j := archiveJudges{
		gdaljudge: filepath.Join(root, "scripts/judge/gdaljudge.py"),
		rows:      filepath.Join(root, "scripts/hyparquet/rows.mjs"),
	}
	var missing []string
	for _, tool := range []string{"gdal_translate", "gdaladdo", "ogr2ogr", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, python, "-c", "from osgeo import gdal, ogr, osr; import numpy; from osgeo_utils.samples import validate_cloud_optimized_geotiff").CombinedOutput(); err != nil {
		missing = append(missing, "python3-gdal with numpy ("+strings.TrimSpace(string(out))+")")
	}
	if _, err := os.Stat(filepath.Join(root, "scripts/hyparquet/node_modules/hyparquet")); err != nil {
		missing = append(missing, "hyparquet (make hyparquet)")
	}
	if len(missing) > 0 {
		msg := "real-archives judges missing: " + strings.Join(missing, ", ")
		if os.Getenv(asljudge.RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + " (" + asljudge.RequireEnv + "=1 makes this a failure)")
	}
	return j
}

func compileGeoSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile("testdata/geoparquet/geoparquet-v1.1.0-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	// Not vendored (testdata/geoparquet/README.md): the CRS is judged by
	// GDAL instead.
	if err := c.AddResource("https://proj.org/schemas/v0.7/projjson.schema.json", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	const url = "https://geoparquet.org/releases/v1.1.0/schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// external runs a judge with a deadline and returns its stdout.
func external(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

type judgeDiff struct {
	Property string `json:"property"`
	Detail   string `json:"detail"`
}

type judgeVerdict struct {
	Checked     []string    `json:"checked"`
	Differences []judgeDiff `json:"differences"`
}

func runArchiveCase(r *recorder, j archiveJudges, geoSchema *jsonschema.Schema, c archiveCase) {
	t := r.t
	base := t.TempDir()
	src, dest := filepath.Join(base, "src"), filepath.Join(base, "out")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	c.Make(&gen{t: t}, src)

	var recipeArgs []string
	if c.Recipe != "" {
		p := filepath.Join(base, "recipe.yaml")
		if err := os.WriteFile(p, []byte(c.Recipe), 0o644); err != nil {
			t.Fatal(err)
		}
		recipeArgs = []string{"--recipe", p}
	}
	if len(c.Plan) > 0 {
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := realMain(ctx, append([]string{"plan", src, "--dest", dest}, recipeArgs...), &out, &errOut)
		cancel()
		if err != nil {
			r.errorf("geomigrate plan: %v\n%s", err, lastLines(errOut.String(), 10))
		}
		for _, w := range c.Plan {
			if !strings.Contains(out.String(), w) {
				r.errorf("geomigrate plan does not name %q:\n%s", w, lastLines(out.String(), 40))
			}
		}
	}
	args := append([]string{"migrate", src, "--dest", dest, "--progress", "plain"}, recipeArgs...)
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := realMain(ctx, args, &out, &errOut); err != nil {
		r.errorf("geomigrate migrate: %v\n%s%s", err, lastLines(out.String(), 5), lastLines(errOut.String(), 10))
		return
	}
	report, err := readRunReport(out.String())
	if err != nil {
		r.errorf("%v", err)
		return
	}
	byKey := map[string]localrun.Outcome{}
	for _, o := range report.Files {
		byKey[o.Key] = o
	}
	for key, o := range byKey {
		if _, ok := c.Files[key]; !ok {
			r.errorf("%s: unexpected in the report (status %s, code %s, outputs %v)", key, o.Status, o.Code, o.Outputs)
		}
	}
	keys := make([]string, 0, len(c.Files))
	for k := range c.Files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		want := c.Files[key]
		o, listed := byKey[key]
		if want.Status == "sidecar" {
			if listed && (o.Status != localrun.StatusIgnored || len(o.Outputs) > 0) {
				r.errorf("%s: a sidecar, yet a job of its own (status %s, code %s, outputs %v)", key, o.Status, o.Code, o.Outputs)
			}
			continue
		}
		if !listed {
			r.errorf("%s: not in the report", key)
			continue
		}
		checkOutcome(r, key, want, o)
		if o.Status != localrun.StatusCompleted {
			continue
		}
		for i, output := range o.Outputs {
			layer := ""
			if i < len(o.Fidelity) && o.Fidelity[i] != nil {
				layer = o.Fidelity[i].Layer
			}
			judgeOutput(r, j, geoSchema, src, dest, key, output, layer, want, o)
		}
		for _, w := range want.STAC {
			found := false
			for _, item := range o.STACItems {
				b, err := os.ReadFile(filepath.Join(dest, item))
				if err == nil && strings.Contains(string(b), w) {
					found = true
				}
			}
			if !found {
				r.errorf("%s: no STAC item mentions %q (items %v)", key, w, o.STACItems)
			}
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

func readRunReport(stdout string) (*localrun.Report, error) {
	i := strings.LastIndex(stdout, "report: ")
	if i < 0 {
		return nil, fmt.Errorf("no report path in the output:\n%s", lastLines(stdout, 10))
	}
	path := strings.TrimSpace(strings.SplitN(stdout[i+len("report: "):], "\n", 2)[0])
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep localrun.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("run report %s: %w", path, err)
	}
	return &rep, nil
}

func checkOutcome(r *recorder, key string, want fileWant, o localrun.Outcome) {
	if o.Status != want.Status {
		r.errorf("%s: status %s (code %s: %s), want %s %s", key, o.Status, o.Code, firstLine(o.Message+" "+o.Error), want.Status, want.Code)
		return
	}
	if want.Code != "" && o.Code != want.Code {
		r.errorf("%s: code %s (%s), want %s", key, o.Code, firstLine(o.Message), want.Code)
	}
	text := strings.ToLower(o.Message + " " + o.Hint + " " + o.Error)
	for _, w := range want.Message {
		if !strings.Contains(text, strings.ToLower(w)) {
			r.errorf("%s: the message does not name %q: %s", key, w, firstLine(o.Message))
		}
	}
	warned := func(word string) bool {
		for _, w := range o.Warnings {
			if strings.Contains(strings.ToLower(w), strings.ToLower(word)) {
				return true
			}
		}
		return false
	}
	for _, w := range want.Warn {
		if !warned(w) {
			r.errorf("%s: no warning names %q (warnings %q)", key, w, o.Warnings)
		}
	}
	if len(want.WarnAny) > 0 && !slices.ContainsFunc(want.WarnAny, warned) {
		r.errorf("%s: no warning names any of %q (warnings %q)", key, want.WarnAny, o.Warnings)
	}
	if len(want.Checks) > 0 {
		have := map[string]bool{}
		for _, f := range o.Fidelity {
			if f != nil {
				for _, c := range f.Checks {
					have[c] = true
				}
			}
		}
		for _, c := range want.Checks {
			if !have[c] {
				r.errorf("%s: fidelity.checks lacks %q (has %v)", key, c, keysOf(have))
			}
		}
	}
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// judgeOutput has the outside judges compare one output with its source.
func judgeOutput(r *recorder, j archiveJudges, geoSchema *jsonschema.Schema, src, dest, key, output, layer string, want fileWant, o localrun.Outcome) {
	srcName := filepath.Join(src, filepath.FromSlash(key))
	if want.Judge != "" {
		srcName = strings.ReplaceAll(want.Judge, "{dir}", src)
	}
	outPath := filepath.Join(dest, filepath.FromSlash(output))
	var args []string
	switch strings.ToLower(filepath.Ext(output)) {
	case ".tif", ".tiff":
		args = []string{j.gdaljudge, "raster", srcName, outPath}
	case ".fgb":
		args = []string{j.gdaljudge, "vector", srcName, outPath}
	case ".parquet", ".geoparquet":
		rows, err := external("node", j.rows, outPath)
		if err != nil {
			r.errorf("%s → %s: %v", key, output, err)
			return
		}
		geo, err := external("node", j.rows, "--geo", outPath)
		if err != nil {
			r.errorf("%s → %s: %v", key, output, err)
			return
		}
		validateGeo(r, geoSchema, key, output, geo)
		dir := r.t.TempDir()
		rowsPath, geoPath := filepath.Join(dir, "rows.jsonl"), filepath.Join(dir, "geo.json")
		if err := os.WriteFile(rowsPath, rows, 0o644); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(geoPath, geo, 0o644); err != nil {
			r.t.Fatal(err)
		}
		args = []string{j.gdaljudge, "vector", srcName, "--rows", rowsPath, "--geo", geoPath}
	default:
		r.errorf("%s → %s: no judge for this output format", key, output)
		return
	}
	if layer != "" && args[1] == "vector" {
		args = append(args, "--src-layer", layer)
	}
	if want.AssignCRS != "" {
		args = append(args, "--assign-crs", want.AssignCRS)
	}
	for _, oo := range want.Open {
		args = append(args, "--open-option", oo)
	}
	b, err := external(python, args...)
	if err != nil {
		r.errorf("%s → %s: %v", key, output, err)
		return
	}
	var v judgeVerdict
	if err := json.Unmarshal(b, &v); err != nil {
		r.errorf("%s → %s: judge output: %v: %s", key, output, err, b)
		return
	}
	for _, d := range v.Differences {
		if !differenceWarned(d.Property, want.Allow, o.Warnings) {
			r.errorf("%s → %s: %s differs, no warning names it: %s", key, output, d.Property, d.Detail)
		}
	}
}

// differenceWarned: a difference is accepted when a warning names what
// differs: the words of want.Allow for the property (or a prefix of it),
// (their prefix), else the property's last segment as a whole word (a field's name, a metadata
// domain, "mask", "gcps" as GCP); a geometry difference only through Allow,
// and never one whose Allow entry lists no words.
func differenceWarned(prop string, allow map[string][]string, warnings []string) bool {
	words, ok := allow[prop]
	if !ok {
		for p, w := range allow {
			if strings.HasSuffix(p, ":") && strings.HasPrefix(prop, p) {
				words, ok = w, true
			}
		}
	}
	if !ok {
		if strings.HasPrefix(prop, "geometry") || prop == "features" || prop == "rows" || prop == "cog" {
			return false
		}
		last := regexp.QuoteMeta(prop[strings.LastIndex(prop, ":")+1:])
		switch {
		case last == "gcps":
			last = "GCP"
		case strings.HasPrefix(prop, "metadata:band"), strings.HasPrefix(last, "band"):
			last = regexp.QuoteMeta(prop[:strings.Index(prop, ":")])
		}
		// The property's own name, as a whole word (a plural too).
		words = []string{last + `s?\b`}
	} else {
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = regexp.QuoteMeta(w)
		}
		words = quoted
	}
	for _, w := range warnings {
		for _, word := range words {
			re := regexp.MustCompile(`(?i)\b` + word)
			if re.MatchString(w) {
				return true
			}
		}
	}
	return false
}

// validateGeo validates a file's `geo` metadata (as hyparquet read it)
// against the official schema; a file without one is no GeoParquet (the
// plain Parquet of an attribute table) and has nothing to validate.
func validateGeo(r *recorder, s *jsonschema.Schema, key, output string, geo []byte) {
	if strings.TrimSpace(string(geo)) == "null" {
		if filepath.Ext(output) == ".geoparquet" {
			r.errorf("%s → %s: no geo metadata", key, output)
		}
		return
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(geo))
	if err != nil {
		r.errorf("%s → %s: geo metadata is not JSON: %v", key, output, err)
		return
	}
	if err := s.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			r.errorf("%s → %s: geo metadata fails the GeoParquet 1.1.0 schema: %v", key, output, ve)
			return
		}
		r.errorf("%s → %s: %v", key, output, err)
	}
}

// TestDifferenceWarned pins which warnings accept which differences.
func TestDifferenceWarned(t *testing.T) {
	for _, c := range []struct {
		prop     string
		allow    map[string][]string
		warnings []string
		want     bool
	}{
		{"mask", nil, []string{"the mask of the source was dropped"}, true},
		{"mask:band2", nil, []string{"per-band mask kept as a dataset mask"}, true},
		{"mask", nil, []string{"promoted to multi"}, false},
		{"metadata:RPC", nil, []string{"RPC domain not written"}, true},
		{"metadata:band1:default", nil, []string{"band metadata dropped"}, true},
		{"gcps", nil, []string{"GCPs not carried"}, true},
		{"field:ts", nil, []string{"field ts normalised to UTC"}, true},
		{"field:ts", nil, []string{"field tsx normalised to UTC"}, false},
		{"field:id", nil, []string{"field grid written as text"}, false},
		{"geometry:M", nil, []string{"geometry M values dropped"}, false},
		{"geometry:type", map[string][]string{"geometry:": {"lineari"}}, []string{"3 curves linearised"}, true},
		{"geometry", map[string][]string{"geometry": {"repair"}}, []string{"2 geometries repaired"}, true},
		{"features", nil, []string{"features dropped"}, false},
		{"field:ints", map[string][]string{"field:": nil}, []string{"field ints (IntegerList) written as text"}, false},
	} {
		if got := differenceWarned(c.prop, c.allow, c.warnings); got != c.want {
			t.Errorf("differenceWarned(%q, %v, %q) = %v, want %v", c.prop, c.allow, c.warnings, got, c.want)
		}
	}
}

// TestArchiveJudgesSeeDifferences: the outside judge finds what it is
// meant to find, on pairs altered on purpose with GDAL (a judge that finds
// nothing proves nothing).
func TestArchiveJudgesSeeDifferences(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	j := findArchiveJudges(t, root)
	dir := t.TempDir()
	g := &gen{t: t}
	g.py(dir, pyRaster+`
gdal.SetConfigOption('GDAL_TIFF_INTERNAL_MASK', 'NO')
ds = raster('a.tif', bands=2)
ds.SetMetadata({'KEEP': 'me'})
ds.SetMetadata({'X': '1'}, 'EXTRA')
ds.CreateMaskBand(gdal.GMF_PER_DATASET)
m = np.full((200, 300), 255, dtype=np.uint8); m[:, :50] = 0
ds.GetRasterBand(1).GetMaskBand().WriteArray(m)
ds.GetRasterBand(2).SetUnitType('m')
ds = None
src = gdal.Open('a.tif')
gdal.Translate('b.tif', src, format='COG', options=['-mask', 'none'])
gdal.Translate('c.tif', src, format='GTiff', options=['-mask', 'none'])
c = gdal.Open('c.tif', gdal.GA_Update)
a = c.GetRasterBand(1).ReadAsArray(); a[199, 299] += 1; c.GetRasterBand(1).WriteArray(a)
c.SetMetadata({}, '')
c.GetRasterBand(2).SetUnitType('')
c = None
`+pyLayers+`
ds = ogr.GetDriverByName('GPKG').CreateDataSource('a.gpkg')
l = ds.CreateLayer('t', srs(4326), ogr.wkbLineStringZM)
fields(l, [('n', ogr.OFTInteger, 0), ('s', ogr.OFTString, 0)])
for i in range(4):
    feature(l, 'LINESTRING ZM (0 %d 1 2,1 %d 3 4)' % (i, i), n=i, s='v%d' % i)
ds = None
ds = ogr.GetDriverByName('FlatGeobuf').CreateDataSource('b.fgb')
l = ds.CreateLayer('t', srs(4326), ogr.wkbLineString25D)
fields(l, [('n', ogr.OFTInteger, 0), ('s', ogr.OFTString, 0)])
for i in range(4):
    feature(l, 'LINESTRING Z (0 %d 1,1 %d 3)' % (i, i), n=i, s='v%d' % (i if i < 3 else 9))
ds = None
`)
	verdict := func(args ...string) map[string]bool {
		t.Helper()
		b, err := external(python, append([]string{j.gdaljudge}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var v judgeVerdict
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		props := map[string]bool{}
		for _, d := range v.Differences {
			props[d.Property] = true
		}
		return props
	}
	for _, c := range []struct {
		args       []string
		want, none []string
	}{
		// A COG without the mask: the mask differs, and the COG driver
		// does not carry a domain of its own.
		{[]string{"raster", filepath.Join(dir, "a.tif"), filepath.Join(dir, "b.tif")}, []string{"mask", "metadata:EXTRA"}, []string{"pixels", "unit", "metadata:default", "cog"}},
		// One pixel, the default domain and a band's unit changed; not a COG.
		{[]string{"raster", filepath.Join(dir, "a.tif"), filepath.Join(dir, "c.tif")}, []string{"mask", "pixels", "metadata:default", "unit", "cog"}, nil},
		{[]string{"raster", filepath.Join(dir, "a.tif"), filepath.Join(dir, "a.tif")}, nil, []string{"mask", "pixels", "metadata:default", "metadata:EXTRA", "unit", "gcps", "crs"}},
		// M values dropped and one value changed.
		{[]string{"vector", filepath.Join(dir, "a.gpkg"), filepath.Join(dir, "b.fgb")}, []string{"geometry:M", "field:s"}, []string{"field:n", "features"}},
	} {
		got := verdict(c.args...)
		for _, w := range c.want {
			if !got[w] {
				t.Errorf("%v: the judge misses %q (found %v)", c.args[1:], w, got)
			}
		}
		for _, n := range c.none {
			if got[n] {
				t.Errorf("%v: the judge finds %q different (found %v)", c.args[1:], n, got)
			}
		}
	}
}
