package gdal

// Nothing lost, nothing altered, nothing fetched (docs/decisions/0012). Each
// test here failed on the code before its fix.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/hostile"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// GDAL 3.6's FlatGeobuf writer skips features without geometry (it cannot
// encode them), so a FlatGeobuf output would hold 1 of 2 features: the
// source is refused instead. GeoParquet keeps them as null rows.
func TestNullGeometriesKeptOrRefused(t *testing.T) {
	src := writeFile(t, t.TempDir(), "some.geojson", someNulls)

	work := t.TempDir()
	outs, err := engine.Convert(context.Background(), src, work, fgbRecipe()) // FlatGeobuf
	var d *fault.DataError
	if !errors.As(err, &d) || d.Code != fault.UnsupportedFormat {
		n := -1
		if err == nil {
			n = ogrCount(t, outs[0].Path)
		}
		t.Errorf("FlatGeobuf with a null geometry: %v (output holds %d features), want DataError UnsupportedFormat", err, n)
	} else if !strings.Contains(err.Error(), "GeoParquet") {
		t.Errorf("message does not say what to do: %v", err)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("work dir not empty after a refusal: %v", entries)
	}

	outs, err = engine.Convert(context.Background(), src, t.TempDir(), gpRecipe())
	if err != nil {
		t.Fatalf("GeoParquet: %v", err)
	}
	rep := validateGeoParquet(t, outs[0].Path)
	if rep.Rows != 2 || outs[0].Stats["features"] != 2 || outs[0].Stats["null_geometries"] != 1 {
		t.Errorf("GeoParquet holds %d rows, stats %v; want 2 rows, 1 null geometry", rep.Rows, outs[0].Stats)
	}
}

// writeGPKGLayers writes a GeoPackage with one point layer per name.
func writeGPKGLayers(t *testing.T, p string, names ...string) {
	t.Helper()
	ds, err := godal.CreateVector(godal.GeoPackage, p)
	if err != nil {
		t.Fatal(err)
	}
	sr, err := godal.NewSpatialRefFromEPSG(4326)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	for i, name := range names {
		l, err := ds.CreateLayer(name, sr, godal.GTPoint)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k <= i; k++ {
			g, err := godal.NewGeometryFromWKT(fmt.Sprintf("POINT (%d %d)", i+1, k+1), sr)
			if err != nil {
				t.Fatal(err)
			}
			f, err := l.NewFeature(g)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			g.Close()
		}
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
}

// Two layers whose names map to the same safe name must give two outputs
// with two different file names and destination keys.
func TestLayerNamesOneToOne(t *testing.T) {
	src := filepath.Join(t.TempDir(), "city.gpkg")
	writeGPKGLayers(t, src, "a/b", "a_b", "a b")
	for _, r := range []recipe.Recipe{fgbRecipe(), gpRecipe()} {
		t.Run(r.VectorFormat, func(t *testing.T) {
			outs, err := engine.Convert(context.Background(), src, t.TempDir(), r)
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 3 {
				t.Fatalf("%d outputs for 3 layers", len(outs))
			}
			files, keys, layers := map[string]bool{}, map[string]bool{}, map[string]bool{}
			for _, o := range outs {
				files[filepath.Base(o.Path)] = true
				keys[recipe.DestKey("in/city.gpkg", o, true)] = true
				layers[o.Layer] = true
				want := map[string]int64{"a/b": 1, "a_b": 2, "a b": 3}[o.Layer]
				if o.Stats["features"] != want {
					t.Errorf("layer %q: %d features, want %d", o.Layer, o.Stats["features"], want)
				}
			}
			if len(files) != 3 || len(keys) != 3 || len(layers) != 3 {
				t.Errorf("outputs are not one-to-one with layers: files %v, keys %v", files, keys)
			}
			if !keys["in/city/a_b.parquet"] && !keys["in/city/a_b.fgb"] {
				t.Errorf("a layer whose name is already safe keeps it: %v", keys)
			}
		})
	}
}

// A GeoJSON whose CRS is a URL made GDAL fetch it, whatever the proxy
// setting said, once no_proxy matched. No content may cause network access:
// the source is refused as UnsafeSource and the server sees nothing.
func TestNoNetworkFromContent(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AUTHORITY["EPSG","4326"]]`)
	}))
	defer srv.Close()
	for _, k := range []string{"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("no_proxy", "*")
	t.Setenv("NO_PROXY", "*")

	dir := t.TempDir()
	point := `"features":[{"type":"Feature","properties":{"id":1},"geometry":{"type":"Point","coordinates":[1,2]}}]}`
	cases := map[string]string{
		"link.geojson":  `{"type":"FeatureCollection","crs":{"type":"link","properties":{"href":"` + srv.URL + `/crs.wkt","type":"ogcwkt"}},` + point,
		"name.geojson":  `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"` + srv.URL + `/name"}},` + point,
		"proj.geojson":  `{"type":"FeatureCollection","crs":{"type":"link","properties":{"href":"` + srv.URL + `/crs.proj4","type":"proj4"}},` + point,
		"https.geojson": `{"type":"FeatureCollection","crs":{"type":"link","properties":{"href":"` + strings.Replace(srv.URL, "http:", "https:", 1) + `/crs","type":"ogcwkt"}},` + point,
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, r := range []recipe.Recipe{fgbRecipe(), gpRecipe()} {
			src := writeFile(t, dir, name, cases[name])
			before := hits.Load()
			_, err := engine.Convert(context.Background(), src, t.TempDir(), r)
			if n := hits.Load() - before; n != 0 {
				t.Errorf("%s (%s): the loopback server received %d requests", name, r.VectorFormat, n)
			}
			if fault.CodeOf(err) != fault.UnsafeSource {
				t.Errorf("%s (%s): %v, want DataError UnsafeSource", name, r.VectorFormat, err)
			}
		}
	}
}

// A Byte land-cover grid of 4 classes without a colour table: overviews of
// categorical data must hold only the classes of the source.
func TestCategoricalOverviews(t *testing.T) {
	const w, h = 1024, 1024
	classes := []byte{11, 42, 71, 90}
	px := make([]byte, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			// irregular patches, so that every overview level mixes classes
			px[y*w+x] = classes[((x/7)*3+(y/5)*5+(x*y)/97)%len(classes)]
		}
	}
	src := filepath.Join(t.TempDir(), "landcover.tif")
	if err := sampledata.WriteRaster(src, sampledata.Raster{Width: w, Height: h, Type: godal.Byte, EPSG: 32633,
		GeoTransform: [6]float64{500000, 30, 0, 5100000, 0, -30}, Data: px}); err != nil {
		t.Fatal(err)
	}
	want := map[byte]bool{}
	for _, c := range classes {
		want[c] = true
	}
	outs, err := engine.Convert(context.Background(), src, t.TempDir(), fgbRecipe())
	if err != nil {
		t.Fatal(err)
	}
	validateCOG(t, outs[0].Path)
	ds, err := godal.Open(outs[0].Path, godal.RasterOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	ovrs := ds.Bands()[0].Overviews()
	if len(ovrs) == 0 {
		t.Fatal("no overviews")
	}
	for i, o := range ovrs {
		st := o.Structure()
		buf := make([]byte, st.SizeX*st.SizeY)
		if err := o.Read(0, 0, buf, st.SizeX, st.SizeY); err != nil {
			t.Fatal(err)
		}
		invented := map[byte]bool{}
		for _, v := range buf {
			if !want[v] {
				invented[v] = true
			}
		}
		if len(invented) > 0 {
			t.Errorf("overview %d (%dx%d) holds %d values not in the source", i, st.SizeX, st.SizeY, len(invented))
		}
	}
	if got := ds.Metadata(resamplingMetadataKey); got != "NEAREST" {
		t.Errorf("metadata %s = %q, want NEAREST", resamplingMetadataKey, got)
	}
	if outs[0].OverviewResampling != recipe.ResamplingNearest {
		t.Errorf("Output.OverviewResampling = %q", outs[0].OverviewResampling)
	}

	// Continuous data keeps AVERAGE.
	outs, err = engine.Convert(context.Background(), sample(t, "dem_utm33.tif").Path, t.TempDir(), fgbRecipe())
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].OverviewResampling != recipe.ResamplingAverage {
		t.Errorf("DEM: Output.OverviewResampling = %q, want average", outs[0].OverviewResampling)
	}
}

// The size bombs (internal/hostile) are small files that declare huge
// structures: refused from their header with BudgetExceeded, before GDAL
// allocates anything for them. Run before the fix under `ulimit -v`, these
// ended as SystemicError (GDAL out of memory) or, without a limit, drove the
// process to tens of GB.
func TestDeclaredSizeBudgets(t *testing.T) {
	for _, c := range hostile.SizeBombs() {
		t.Run(c.Description, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), c.Name)
			if err := os.WriteFile(p, c.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			_, err := engine.Convert(context.Background(), p, work, fgbRecipe())
			if fault.CodeOf(err) != fault.BudgetExceeded {
				t.Fatalf("%T %v, want DataError BudgetExceeded", err, err)
			}
			t.Log(err)
			if entries, _ := os.ReadDir(work); len(entries) != 0 {
				t.Errorf("work dir not empty: %v", entries)
			}
		})
	}
}

// The memory budget is the smaller of the recipe's and the machine's, and
// it applies to ranged reads too.
func TestMemoryBudgetSources(t *testing.T) {
	small, err := New(WithMemoryLimit(1 << 20))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // restore the shared engine's process-wide settings
		if _, err := New(WithTmpDir(engine.Config().TmpDir)); err != nil {
			t.Fatal(err)
		}
	}()
	dem := sample(t, "dem_utm33.tif").Path
	if _, err := small.Convert(context.Background(), dem, t.TempDir(), fgbRecipe()); fault.CodeOf(err) != fault.BudgetExceeded {
		t.Errorf("1 MiB machine: %v, want BudgetExceeded", err)
	}
	r := fgbRecipe()
	r.MaxMemory = 1 << 20
	if _, err := engine.Convert(context.Background(), dem, t.TempDir(), r); fault.CodeOf(err) != fault.BudgetExceeded {
		t.Errorf("1 MiB recipe: %v, want BudgetExceeded", err)
	}
	if _, err := engine.Convert(context.Background(), dem, t.TempDir(), fgbRecipe()); err != nil {
		t.Errorf("default budget: %v", err)
	}

	b := hostile.SizeBombs()[0].Data // 60,000 bands
	_, err = engine.ConvertReader(context.Background(), bytes.NewReader(b), int64(len(b)), "bands.tif", t.TempDir(), fgbRecipe())
	if fault.CodeOf(err) != fault.BudgetExceeded {
		t.Errorf("ConvertReader: %v, want BudgetExceeded", err)
	}
}

// A raster attribute table or category names (here in the .aux.xml
// sidecar) make a band categorical whatever its values; this also pins
// bandHandle to godal's Band layout.
func TestCategoricalByMetadata(t *testing.T) {
	aux := map[string]string{
		"rat": `<PAMDataset><PAMRasterBand band="1"><GDALRasterAttributeTable>
<FieldDefn index="0"><Name>Value</Name><Type>0</Type><Usage>5</Usage></FieldDefn>
<FieldDefn index="1"><Name>Class</Name><Type>2</Type><Usage>2</Usage></FieldDefn>
<Row index="0"><F>1</F><F>forest</F></Row></GDALRasterAttributeTable></PAMRasterBand></PAMDataset>`,
		"categories": `<PAMDataset><PAMRasterBand band="1"><CategoryNames><Category>water</Category><Category>forest</Category></CategoryNames></PAMRasterBand></PAMDataset>`,
		"none":       `<PAMDataset><PAMRasterBand band="1"><Description>plain</Description></PAMRasterBand></PAMDataset>`,
	}
	want := map[string]string{"rat": recipe.ResamplingNearest, "categories": recipe.ResamplingNearest, "none": recipe.ResamplingAverage}
	for name, xml := range aux {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "grid.tif")
			copyFile(t, sample(t, "dem_utm33.tif").Path, src) // ~200 distinct values: continuous by its values
			writeFile(t, dir, "grid.tif.aux.xml", xml)
			outs, err := engine.Convert(context.Background(), src, t.TempDir(), fgbRecipe())
			if err != nil {
				t.Fatal(err)
			}
			if outs[0].OverviewResampling != want[name] {
				t.Errorf("resampling %q, want %q", outs[0].OverviewResampling, want[name])
			}
		})
	}
}

// childEnv makes the test binary, run again by TestConvertUnderMemoryLimit,
// the memory-limited child that converts the files of the named directory.
const childEnv = "GEOMIGRATE_TEST_MEMLIMIT_DIR"

// budget64MiB starts the name of a file the child converts under a
// max_memory of 64 MiB.
const budget64MiB = "budget64m-"

// toFlatGeobuf starts the name of a vector file the child converts to
// FlatGeobuf (the others go to GeoParquet).
const toFlatGeobuf = "fgb-"

// The size bombs and two good samples, converted in a child process whose
// address space is limited to 3 GiB (a 3 GiB Lambda): the child must not
// die, every bomb must be BudgetExceeded and the samples must convert.
// Before the fix the bombs ended as SystemicError ("cannot allocate").
func TestConvertUnderMemoryLimit(t *testing.T) {
	const limit = 3 << 30
	if testing.Short() && os.Getenv(childEnv) == "" {
		t.Skip("-short: the conversions under a 3 GiB address space (about 30 s) run in make test")
	}
	if dir := os.Getenv(childEnv); dir != "" {
		lim := syscall.Rlimit{Cur: limit, Max: limit}
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
			t.Fatal(err)
		}
		e, err := New(WithTmpDir(engine.Config().TmpDir))
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Config().MemoryLimit; got > limit {
			t.Errorf("MemoryLimit %d ignores RLIMIT_AS %d", got, limit)
		}
		var names []string
		for _, pat := range []string{"*.tif", "*.zip", "*.shp", "*.geojson", "*.gpkg"} {
			m, _ := filepath.Glob(filepath.Join(dir, pat))
			names = append(names, m...)
		}
		for _, p := range names {
			r := fgbRecipe()
			r.VectorFormat = recipe.FormatGeoParquet
			if strings.HasPrefix(filepath.Base(p), toFlatGeobuf) {
				r.VectorFormat = recipe.FormatFlatGeobuf // the writer whose index grows with the count
			}
			if strings.HasPrefix(filepath.Base(p), budget64MiB) {
				r.MaxMemory = 64 << 20
			}
			_, err := e.Convert(context.Background(), p, t.TempDir(), r)
			fmt.Printf("RESULT %s %s\n", filepath.Base(p), strings.ReplaceAll(codeOf(err), "\n", " "))
			if err != nil {
				fmt.Printf("DETAIL %s %s\n", filepath.Base(p), strings.ReplaceAll(err.Error(), "\n", " "))
			}
		}
		return
	}
	dir := t.TempDir()
	want := map[string]string{}
	for _, b := range hostile.SizeBombs() {
		if err := os.WriteFile(filepath.Join(dir, b.Name), b.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		want[b.Name] = string(fault.BudgetExceeded)
	}
	// Vector bombs. The zipped Shapefile of 16,000,000 points (~125 MB)
	// would need ~4 GB for FlatGeobuf's index (the GeoParquet writer, which
	// spills, converts it in minutes: make bench-rss measures that). The
	// GeoJSON polygon of 4,000,000 vertices (~86 MB) would take ~2 GB
	// parsed. The polygon Shapefile (16 MB of WKB) is not over 3 GiB:
	// the child converts it under a 64 MiB max_memory, to show the running
	// total refusing it inside the limited process.
	f, err := os.Create(filepath.Join(dir, toFlatGeobuf+"points-16m.zip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := hostile.WritePointShapefileZip(f, "points", 16_000_000); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want[toFlatGeobuf+"points-16m.zip"] = string(fault.BudgetExceeded)
	g, err := os.Create(filepath.Join(dir, "polygon-4m.geojson"))
	if err != nil {
		t.Fatal(err)
	}
	if err := hostile.WritePolygonGeoJSON(g, 4_000_000); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	want["polygon-4m.geojson"] = string(fault.BudgetExceeded)
	if err := hostile.WritePolygonShapefile(dir, budget64MiB+"polygon", 1_000_000); err != nil {
		t.Fatal(err)
	}
	want[budget64MiB+"polygon.shp"] = string(fault.BudgetExceeded)
	// 300,000 points to GeoParquet under 64 MiB: spilled, converted.
	if err := hostile.WritePointShapefile(dir, budget64MiB+"points", 300_000); err != nil {
		t.Fatal(err)
	}
	want[budget64MiB+"points.shp"] = "converted"
	for _, name := range []string{"dem_utm33.tif", "landcover_4326.tif", "city.gpkg", "parks.geojson"} {
		copyFile(t, sample(t, name).Path, filepath.Join(dir, name))
		want[name] = "converted"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestConvertUnderMemoryLimit$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child under a %d-byte limit: %v\n%s", limit, err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.SplitN(line, " ", 3); len(f) == 3 && f[0] == "RESULT" {
			got[f[1]] = f[2]
		}
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %s", name, got[name], w)
		}
		t.Logf("%s: %s", name, got[name])
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("child output:\n%s", out)
	}
}
