package gdal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

const hyparquetDir = "../../scripts/hyparquet"

func gpRecipe() recipe.Recipe {
	r := recipe.DefaultRecipe() // GeoParquet is the default
	r.EngineVersion = engine.Version()
	return r
}

type judged struct {
	Rows          int64          `json:"rows"`
	Geo           map[string]any `json:"geo"`
	GeometryTypes []string       `json:"geometry_types"`
	BBox          []float64      `json:"bbox"`
	First         map[string]any `json:"first_geometry"`
}

// hyparquet is the external judge: it reads every row and decodes every
// geometry. Skips when node or the npm package is missing (`make hyparquet`).
func hyparquet(t *testing.T, path string) judged {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not on PATH (needed by the hyparquet judge)")
	}
	if _, err := os.Stat(filepath.Join(hyparquetDir, "node_modules", "hyparquet")); err != nil {
		t.Skip("hyparquet not installed: run `make hyparquet`")
	}
	out, err := exec.Command(node, filepath.Join(hyparquetDir, "read.mjs"), path).Output()
	if err != nil {
		var se string
		if ee, ok := err.(*exec.ExitError); ok {
			se = string(ee.Stderr)
		}
		t.Fatalf("hyparquet %s: %v\n%s", path, err, se)
	}
	var j judged
	if err := json.Unmarshal(out, &j); err != nil {
		t.Fatalf("hyparquet output: %v\n%s", err, out)
	}
	return j
}

func validateGeoParquet(t *testing.T, p string) geoparquet.Report {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	rep, err := geoparquet.Validate(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("%s: geoparquet.Validate: %v", p, rep.Problems)
	}
	return rep
}

var gpLayerCountRE = regexp.MustCompile(`(?m)^Layer name: (.+)\n(?:.*\n)*?Feature Count: (\d+)`)

// ogrinfoCounts are the feature counts per layer according to ogrinfo.
func ogrinfoCounts(t *testing.T, src string) map[string]int64 {
	t.Helper()
	out, err := exec.Command("ogrinfo", "-ro", "-so", "-al", src).CombinedOutput()
	if err != nil {
		t.Fatalf("ogrinfo %s: %v\n%s", src, err, out)
	}
	m := map[string]int64{}
	for _, g := range gpLayerCountRE.FindAllStringSubmatch(string(out), -1) {
		n, _ := strconv.ParseInt(g[2], 10, 64)
		m[g[1]] = n
	}
	return m
}

// firstVertex digs the first coordinate pair out of GeoJSON coordinates.
func firstVertex(c any) ([]float64, bool) {
	a, ok := c.([]any)
	if !ok || len(a) == 0 {
		return nil, false
	}
	if x, ok := a[0].(float64); ok {
		y, _ := a[1].(float64)
		return []float64{x, y}, true
	}
	return firstVertex(a[0])
}

// ogrFirstVertices lists the first vertex (x, y as OGR hands them out,
// traditional GIS order) of every feature of a source layer.
func ogrFirstVertices(t *testing.T, src, layer string) [][2]float64 {
	t.Helper()
	ds, err := godal.Open(src, godal.VectorOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	l := ds.LayerByName(layer)
	if l == nil {
		t.Fatalf("no layer %s in %s", layer, src)
	}
	var out [][2]float64
	for f := l.NextFeature(); f != nil; f = l.NextFeature() {
		g := f.Geometry()
		if !isNull(g) && !g.Empty() {
			gj, err := g.GeoJSON()
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			_ = json.Unmarshal([]byte(gj), &m)
			if v, ok := firstVertex(m["coordinates"]); ok {
				out = append(out, [2]float64{v[0], v[1]})
			}
		}
		f.Close()
	}
	return out
}

func TestGeoParquetVectorSamples(t *testing.T) {
	for _, s := range samples {
		if s.Bad || s.Kind != recipe.Vector {
			continue
		}
		t.Run(filepath.Base(s.Path), func(t *testing.T) {
			work := t.TempDir()
			outs, err := engine.Convert(context.Background(), s.Path, work, gpRecipe())
			if err != nil {
				t.Fatal(err)
			}
			counts := ogrinfoCounts(t, s.Path)
			if len(outs) != len(counts) {
				t.Errorf("%d outputs for %d layers", len(outs), len(counts))
			}
			for _, o := range outs {
				if o.Format != recipe.FormatGeoParquet || o.Extension != ".parquet" || filepath.Ext(o.Path) != ".parquet" {
					t.Errorf("output %+v", o)
				}
				rep := validateGeoParquet(t, o.Path)
				if rep.Rows != counts[o.Layer] || o.Stats["features"] != counts[o.Layer] {
					t.Errorf("layer %s: %d rows (stats %d), ogrinfo counts %d", o.Layer, rep.Rows, o.Stats["features"], counts[o.Layer])
				}
				// A layer of points only has no covering (its bbox would
				// repeat its coordinates); every other layer has one.
				points := len(rep.GeometryTypes) > 0
				for _, g := range rep.GeometryTypes {
					points = points && (g == "Point" || g == "Point Z")
				}
				if rep.Covering == points {
					t.Errorf("%s: covering column %v for geometry types %v", o.Path, rep.Covering, rep.GeometryTypes)
				}
				j := hyparquet(t, o.Path)
				if j.Rows != counts[o.Layer] {
					t.Errorf("hyparquet reads %d rows of %s, ogrinfo counts %d", j.Rows, o.Layer, counts[o.Layer])
				}
				// Coordinates: the first row (after Hilbert ordering) is one of
				// the source features, x = lon and y = lat.
				v, ok := firstVertex(j.First["coordinates"])
				if !ok {
					t.Fatalf("first geometry %v", j.First)
				}
				found := false
				for _, w := range ogrFirstVertices(t, s.Path, o.Layer) {
					if math.Abs(w[0]-v[0]) < 1e-9 && math.Abs(w[1]-v[1]) < 1e-9 {
						found = true
					}
				}
				if !found || v[0] < 13 || v[0] > 14 || v[1] < 52 || v[1] > 53 {
					t.Errorf("layer %s: first vertex %v is not an OGR vertex in lon/lat order", o.Layer, v)
				}
				// EPSG:4326 sources are written as OGC:CRS84 (no "crs" key).
				col, _ := j.Geo["columns"].(map[string]any)[j.Geo["primary_column"].(string)].(map[string]any)
				if _, has := col["crs"]; has || !rep.CRS84 {
					t.Errorf("layer %s: crs %v, want it omitted (CRS84)", o.Layer, col["crs"])
				}
			}
		})
	}
}

func TestGeoParquetPromotesMixedPolygons(t *testing.T) {
	outs, err := engine.Convert(context.Background(), sample(t, "parks.geojson").Path, t.TempDir(), gpRecipe())
	if err != nil {
		t.Fatal(err)
	}
	rep := validateGeoParquet(t, outs[0].Path)
	if strings.Join(rep.GeometryTypes, ",") != "MultiPolygon" {
		t.Errorf("geometry types %v, want MultiPolygon only", rep.GeometryTypes)
	}
	if !strings.Contains(strings.Join(outs[0].Warnings, "\n"), "promoted to multi") {
		t.Errorf("warnings %v", outs[0].Warnings)
	}
}

func TestGeoParquetDeterministic(t *testing.T) {
	for _, name := range []string{"city.gpkg", "parks.geojson", "places.shp"} {
		src := sample(t, name).Path
		a, b := map[string]string{}, map[string]string{}
		for _, m := range []map[string]string{a, b} {
			outs, err := engine.Convert(context.Background(), src, t.TempDir(), gpRecipe())
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outs {
				m[o.Layer] = sha(t, o.Path)
			}
		}
		for k := range a {
			if a[k] != b[k] {
				t.Errorf("%s layer %s: %s vs %s", name, k, a[k], b[k])
			}
		}
	}
}

func TestGeoParquetProjectedCRSAndTypes(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "typed.geojson")
	// A projected CRS (PROJJSON written), Z, and every field type.
	const typed = `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"i":1,"big":5000000000,"r":1.5,"s":"ä","d":"2024-02-29","dt":"2024-02-29T12:30:15.250+02:00","b":true,"l":[1,2]},"geometry":{"type":"Point","coordinates":[13.4,52.5,34.0]}},
{"type":"Feature","properties":{"i":null,"big":null,"r":null,"s":null,"d":null,"dt":null,"b":null,"l":null},"geometry":{"type":"Point","coordinates":[13.5,52.6,35.0]}}]}`
	if err := sampledata.FromGeoJSON(typed, src, []string{"-f", "GeoJSON", "-nln", "typed", "-t_srs", "EPSG:32633"}); err != nil {
		t.Fatal(err)
	}
	outs, err := engine.Convert(context.Background(), src, t.TempDir(), gpRecipe())
	if err != nil {
		t.Fatal(err)
	}
	o := outs[0]
	rep := validateGeoParquet(t, o.Path)
	if rep.CRS84 || strings.Join(rep.GeometryTypes, ",") != "Point Z" {
		t.Errorf("CRS84=%v types=%v", rep.CRS84, rep.GeometryTypes)
	}
	j := hyparquet(t, o.Path)
	col := j.Geo["columns"].(map[string]any)["geometry"].(map[string]any)
	id, _ := col["crs"].(map[string]any)["id"].(map[string]any)
	if fmt.Sprint(id["authority"], ":", id["code"]) != "EPSG:32633" {
		t.Errorf("crs id %v", id)
	}
	if v, _ := firstVertex(j.First["coordinates"]); len(v) != 2 || v[0] < 100000 || v[1] < 5000000 {
		t.Errorf("first vertex %v is not easting/northing", v)
	}
	// The list is a LIST column now; the +02:00 offset is normalised to
	// UTC, with a warning naming the field.
	if w := strings.Join(o.Warnings, "\n"); strings.Contains(w, "written as text") || !strings.Contains(w, `field "dt"`) || !strings.Contains(w, "offsets are not kept") {
		t.Errorf("warnings %v", o.Warnings)
	}
}

func TestGeoParquetGeometryPolicy(t *testing.T) {
	src := writeFile(t, t.TempDir(), "bowtie.geojson", bowtie)
	r := gpRecipe()
	r.GeometryPolicy = recipe.GeometryStrict
	if _, err := engine.Convert(context.Background(), src, t.TempDir(), r); fault.CodeOf(err) != fault.InvalidGeometry {
		t.Fatalf("strict: %v, want InvalidGeometry", err)
	}
	r.GeometryPolicy = recipe.GeometryRepair
	outs, err := engine.Convert(context.Background(), src, t.TempDir(), r)
	if err != nil {
		t.Fatal(err)
	}
	o := outs[0]
	if o.Stats["repaired"] != 1 || !strings.Contains(strings.Join(o.Warnings, "\n"), "repaired") {
		t.Errorf("stats %v warnings %v", o.Stats, o.Warnings)
	}
	if rep := validateGeoParquet(t, o.Path); strings.Join(rep.GeometryTypes, ",") != "MultiPolygon" {
		t.Errorf("types %v", rep.GeometryTypes)
	}
}

func TestGeoParquetNonUTF8IsSchemaMismatch(t *testing.T) {
	dir := t.TempDir()
	shp := filepath.Join(dir, "latin1.shp")
	if err := sampledata.FromGeoJSON(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"name":"x"},"geometry":{"type":"Point","coordinates":[13.4,52.5]}}]}`,
		shp, []string{"-f", "ESRI Shapefile", "-a_srs", "EPSG:4326"}); err != nil {
		t.Fatal(err)
	}
	// Patch the one DBF value to 0xE9 ('é' in Latin-1) and declare UTF-8.
	dbf := filepath.Join(dir, "latin1.dbf")
	b, err := os.ReadFile(dbf)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndexByte(b, 'x')
	b[i] = 0xE9
	if err := os.WriteFile(dbf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "latin1.cpg"), []byte("UTF-8"), 0o644)
	_, err = engine.Convert(context.Background(), shp, t.TempDir(), gpRecipe())
	if fault.CodeOf(err) != fault.SchemaMismatch || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("non-UTF-8 attribute: %v, want SchemaMismatch mentioning UTF-8", err)
	}
}

func TestLayerHandleLayout(t *testing.T) {
	ds, err := godal.Open(sample(t, "city.gpkg").Path, godal.VectorOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	for _, l := range ds.Layers() {
		if got := layerNameOf(l); got != l.Name() {
			t.Fatalf("layerHandle: name %q, want %q (godal's Layer layout changed)", got, l.Name())
		}
		if crs, err := canonicalCRS(l.SpatialRef()); err != nil || crs.Auth != "EPSG" || crs.Code != "4326" || !crs.Canonical || crs.SwapXY {
			t.Fatalf("canonicalCRS: %+v %v", crs, err)
		}
	}
}

// fgbCRS is the CRS WKT in a FlatGeobuf header (as text in the file).
func fgbCRS(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("GEOGCRS["))
	if i < 0 {
		t.Fatalf("%s: no GEOGCRS in the header", p)
	}
	j := bytes.Index(b[i:], []byte(`ID["EPSG",4326]]`))
	if j < 0 {
		t.Fatalf("%s: CRS text not terminated", p)
	}
	return string(b[i : i+j])
}

// TestCRSTextDeterministicUnderStress converts city.gpkg (EPSG:4326) 200
// times, to FlatGeobuf and GeoParquet, from goroutines that each die with
// their locked OS thread (so fresh threads, with fresh GDAL/PROJ state,
// keep appearing), interleaved with conversions of the other samples, and
// each thread first reads the SRS of a projected GeoTIFF: on PROJ 9.1 that
// is what turns EPSG:4326 on that thread into a DATUM-based definition
// (see crs.go). The CRS text of every output must be identical.
func TestCRSTextDeterministicUnderStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	city := sample(t, "city.gpkg").Path
	others := []string{sample(t, "temperature_f32.tif").Path, sample(t, "places.shp").Path,
		sample(t, "parks.geojson").Path, sample(t, "elevation.asc").Path}
	poison := sample(t, "dem_utm33.tif").Path
	fgb := gpRecipe()
	fgb.VectorFormat = recipe.FormatFlatGeobuf

	const total, workers = 200, 8
	var mu sync.Mutex
	wkts := map[string]int{}
	parquet := map[string]int{}
	jobs := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, total)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				done := make(chan struct{})
				go func() { // one goroutine per job, dying locked: a thread per job
					defer close(done)
					runtime.LockOSThread()
					if ds, err := godal.Open(poison, godal.RasterOnly()); err == nil {
						_ = ds.Projection()
						ds.Close()
					}
					r := gpRecipe()
					if i%2 == 0 {
						r = fgb
					}
					work, err := os.MkdirTemp(t.TempDir(), "w")
					if err != nil {
						errs <- err
						return
					}
					defer os.RemoveAll(work)
					if i%5 == 0 {
						if _, err := engine.Convert(context.Background(), others[(i/5)%len(others)], work, r); err != nil {
							errs <- err
							return
						}
					}
					outs, err := engine.Convert(context.Background(), city, work, r)
					if err != nil {
						errs <- err
						return
					}
					for _, o := range outs {
						if o.Format == recipe.FormatFlatGeobuf {
							w := fgbCRS(t, o.Path)
							mu.Lock()
							wkts[w]++
							mu.Unlock()
						} else {
							s := sha(t, o.Path)
							mu.Lock()
							parquet[o.Layer+" "+s]++
							mu.Unlock()
						}
					}
				}()
				<-done
			}
		}()
	}
	for i := 0; i < total; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(wkts) != 1 {
		for w, n := range wkts {
			t.Errorf("%d× %.160s…", n, w)
		}
		t.Fatalf("%d different FlatGeobuf CRS texts", len(wkts))
	}
	for w := range wkts {
		if !strings.Contains(w, "ENSEMBLE[") {
			t.Errorf("FlatGeobuf CRS is not the EPSG definition: %.200s", w)
		}
	}
	if len(parquet) != 2 {
		t.Fatalf("GeoParquet outputs of 2 layers: %d distinct (layer, sha256): %v", len(parquet), parquet)
	}
}

func TestCanonicalPROJJSONStable(t *testing.T) {
	// The PROJJSON of a projected CRS, exported on threads in every state.
	dir := t.TempDir()
	src := filepath.Join(dir, "utm.geojson")
	if err := sampledata.FromGeoJSON(sampledata.PlacesGeoJSON, src, []string{"-f", "GeoJSON", "-t_srs", "EPSG:32633"}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // dies with the goroutine
			for i := 0; i < 5; i++ {
				ds, err := godal.Open(src, godal.VectorOnly())
				if err != nil {
					t.Error(err)
					return
				}
				crs, err := canonicalCRS(ds.Layers()[0].SpatialRef())
				ds.Close()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[string(crs.PROJJSON)] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 1 {
		t.Fatalf("%d different PROJJSON texts for one CRS", len(seen))
	}
}

// bench1MGPKG writes a 1,000,000-point GeoPackage (EPSG:4326, three
// attributes) once per process, through a CSV and GDAL's CSV driver.
var (
	bench1MOnce sync.Once
	bench1MPath string
	bench1MErr  error
)

func bench1MGPKG(b *testing.B) string {
	b.Helper()
	bench1MOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gp-bench-")
		if err != nil {
			bench1MErr = err
			return
		}
		csv := filepath.Join(dir, "pts.csv")
		var sb strings.Builder
		sb.WriteString("id,name,value,x,y\n")
		for i := 0; i < 1_000_000; i++ {
			// a deterministic scatter over Europe
			x := -10 + 40*math.Mod(float64(i)*0.6180339887, 1)
			y := 35 + 30*math.Mod(float64(i)*0.7548776662, 1)
			fmt.Fprintf(&sb, "%d,p%d,%.3f,%.6f,%.6f\n", i, i%1000, float64(i%977)/7, x, y)
		}
		if bench1MErr = os.WriteFile(csv, []byte(sb.String()), 0o644); bench1MErr != nil {
			return
		}
		src, err := godal.Open(csv, godal.VectorOnly(), godal.Drivers("CSV"),
			godal.DriverOpenOption("X_POSSIBLE_NAMES=x", "Y_POSSIBLE_NAMES=y", "AUTODETECT_TYPE=YES", "KEEP_GEOM_COLUMNS=NO"))
		if err != nil {
			bench1MErr = err
			return
		}
		defer src.Close()
		p := filepath.Join(dir, "points_1m.gpkg")
		out, err := src.VectorTranslate(p, []string{"-f", "GPKG", "-a_srs", "EPSG:4326", "-nln", "points", "-gt", "65536"},
			godal.ConfigOption("OGR_SQLITE_SYNCHRONOUS=OFF"))
		if err != nil {
			bench1MErr = err
			return
		}
		bench1MErr = out.Close()
		os.Remove(csv)
		bench1MPath = p
	})
	if bench1MErr != nil {
		b.Fatal(bench1MErr)
	}
	return bench1MPath
}

// BenchmarkGeoParquet1M converts a 1,000,000-point GeoPackage layer to
// GeoParquet through the engine (preflight scan included) and reports
// rows/s, bytes written, the peak Go heap and the fidelity check's share
// of the conversion time (check/convert).
func BenchmarkGeoParquet1M(b *testing.B) {
	src := bench1MGPKG(b)
	r := gpRecipe()
	var peak uint64
	var written int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	runtime.GC()
	go func() { // sample the heap while converting
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak {
				peak = ms.HeapAlloc
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var checkNs int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		work := b.TempDir()
		outs, err := engine.Convert(context.Background(), src, work, r)
		if err != nil {
			b.Fatal(err)
		}
		checkNs += fidelityNs(b, outs)
		written = outs[0].Stats["bytes"]
		if outs[0].Stats["features"] != 1_000_000 {
			b.Fatalf("stats %v", outs[0].Stats)
		}
	}
	b.StopTimer()
	close(stop)
	<-sampled
	b.ReportMetric(float64(1_000_000*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(written), "bytes")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	reportCheckShare(b, checkNs, float64(b.Elapsed().Nanoseconds()))
}
