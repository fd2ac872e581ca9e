package gdal

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/stac"
	"github.com/geomigrate/geomigrate/internal/stac/stactest"
)

// describeRasterSource writes a 64 x 48 Float32 GeoTIFF in EPSG:32633 whose
// pixel (x, y) holds x + 100*y, with nodata -9999 in the first row.
func describeRasterSource(t *testing.T, p string) {
	t.Helper()
	ds, err := godal.Create(godal.GTiff, p, 1, godal.Float32, 64, 48)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if err := ds.SetGeoTransform([6]float64{500000, 30, 0, 5600000, 0, -30}); err != nil {
		t.Fatal(err)
	}
	sr, err := godal.NewSpatialRefFromEPSG(32633)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if err := ds.SetSpatialRef(sr); err != nil {
		t.Fatal(err)
	}
	b := ds.Bands()[0]
	if err := b.SetNoData(-9999); err != nil {
		t.Fatal(err)
	}
	px := make([]float32, 64*48)
	for y := 0; y < 48; y++ {
		for x := 0; x < 64; x++ {
			px[y*64+x] = float32(x + 100*y)
			if y == 0 {
				px[y*64+x] = -9999
			}
		}
	}
	if err := b.Write(0, 0, px, 64, 48); err != nil {
		t.Fatal(err)
	}
	if err := ds.SetMetadata("TIFFTAG_DATETIME", "2021:06:01 10:30:00"); err != nil {
		t.Fatal(err)
	}
}

// describeUTMGeoJSON is one point in EPSG:32633 (GeoJSON's old "crs"
// member, which GDAL reads): the GeoParquet output carries PROJJSON.
const describeUTMGeoJSON = `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::32633"}},"features":[
{"type":"Feature","properties":{"id":1},"geometry":{"type":"Point","coordinates":[500000,5600000]}},
{"type":"Feature","properties":{"id":2},"geometry":{"type":"Point","coordinates":[510000,5610000]}}]}`

const describeGeoJSON = `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"name":"a","lanes":2},"geometry":{"type":"LineString","coordinates":[[10.0,50.0],[10.5,50.25]]}},
{"type":"Feature","properties":{"name":"b","lanes":4},"geometry":{"type":"LineString","coordinates":[[10.25,50.5],[11.0,51.0]]}},
{"type":"Feature","properties":{"name":"c","lanes":1},"geometry":{"type":"LineString","coordinates":[[9.5,49.75],[10.0,50.0]]}}]}`

func TestDescribeOutputs(t *testing.T) {
	v, err := stactest.New()
	if err != nil {
		t.Fatal(err)
	}
	srcDir := t.TempDir()
	tif := filepath.Join(srcDir, "field.tif")
	describeRasterSource(t, tif)
	roads := filepath.Join(srcDir, "roads.geojson")
	if err := os.WriteFile(roads, []byte(describeGeoJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	wells := filepath.Join(srcDir, "wells.geojson")
	if err := os.WriteFile(wells, []byte(describeUTMGeoJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		src    string
		vector string
		check  func(t *testing.T, d stac.Description)
	}{
		{"COG", tif, "", func(t *testing.T, d stac.Description) {
			if d.EPSG != 32633 || len(d.Shape) != 2 || d.Shape[0] != 48 || d.Shape[1] != 64 {
				t.Errorf("epsg %d shape %v", d.EPSG, d.Shape)
			}
			if want := []float64{30, 0, 500000, 0, -30, 5600000}; !sameFloats(d.Transform, want) {
				t.Errorf("transform %v, want %v", d.Transform, want)
			}
			if want := []float64{500000, 5600000 - 48*30, 500000 + 64*30, 5600000}; !sameFloats(d.NativeBBox, want) {
				t.Errorf("native bbox %v, want %v", d.NativeBBox, want)
			}
			// Easting 500000 of UTM 33N is its central meridian, 15°E.
			if len(d.BBox) != 4 || math.Abs(d.BBox[0]-15) > 1e-6 || d.BBox[2] < 15.02 || d.BBox[2] > 15.03 || d.BBox[1] < 50.5 || d.BBox[3] > 50.6 || d.BBox[1] >= d.BBox[3] {
				t.Errorf("WGS 84 bbox %v", d.BBox)
			}
			if len(d.Bands) != 1 || d.Bands[0].DataType != "float32" || d.Bands[0].Nodata == nil || *d.Bands[0].Nodata != -9999 {
				t.Fatalf("bands %+v", d.Bands)
			}
			s := d.Bands[0].Statistics
			// Valid pixels: rows 1..47, x + 100*y.
			if s == nil || s.Minimum != 100 || s.Maximum != 63+4700 || s.ValidPercent == nil || math.Abs(*s.ValidPercent-100*47.0/48) > 0.01 {
				t.Errorf("statistics %+v", s)
			}
			if d.Datetime == nil || !d.Datetime.Equal(time.Date(2021, 6, 1, 10, 30, 0, 0, time.UTC)) {
				t.Errorf("datetime %v", d.Datetime)
			}
		}},
		{"GeoParquet", roads, recipe.FormatGeoParquet, func(t *testing.T, d stac.Description) {
			if d.EPSG != 4326 || d.RowCount == nil || *d.RowCount != 3 || d.PrimaryGeometry != "geometry" {
				t.Errorf("epsg %d rows %v primary %q", d.EPSG, *d.RowCount, d.PrimaryGeometry)
			}
			names := map[string]string{}
			for _, c := range d.Columns {
				names[c.Name] = c.Type
			}
			if names["geometry"] != "binary" || names["name"] != "string" || names["lanes"] == "" {
				t.Errorf("columns %+v", d.Columns)
			}
			if want := []float64{9.5, 49.75, 11, 51}; !sameFloats(d.BBox, want) {
				t.Errorf("bbox %v, want %v", d.BBox, want)
			}
		}},
		{"GeoParquet in a projected CRS", wells, recipe.FormatGeoParquet, func(t *testing.T, d stac.Description) {
			if d.EPSG != 32633 || d.RowCount == nil || *d.RowCount != 2 {
				t.Errorf("epsg %d rows %v", d.EPSG, d.RowCount)
			}
			if want := []float64{500000, 5600000, 510000, 5610000}; !sameFloats(d.NativeBBox, want) {
				t.Errorf("native bbox %v, want %v", d.NativeBBox, want)
			}
			// Easting 500000 is 15°E; 10 km further east is about 0.14°.
			if len(d.BBox) != 4 || math.Abs(d.BBox[0]-15) > 1e-6 || d.BBox[2] < 15.1 || d.BBox[2] > 15.2 || d.BBox[1] < 50.5 || d.BBox[3] > 50.7 {
				t.Errorf("WGS 84 bbox %v", d.BBox)
			}
		}},
		{"FlatGeobuf", roads, recipe.FormatFlatGeobuf, func(t *testing.T, d stac.Description) {
			if d.EPSG != 4326 || len(d.Columns) != 0 || len(d.Bands) != 0 {
				t.Errorf("%+v", d)
			}
			if want := []float64{9.5, 49.75, 11, 51}; !sameFloats(d.BBox, want) {
				t.Errorf("bbox %v, want %v", d.BBox, want)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := recipe.DefaultRecipe()
			r.EngineVersion = engine.Version()
			if tc.vector != "" {
				r.VectorFormat = tc.vector
			}
			work := t.TempDir()
			outs, err := engine.Convert(context.Background(), tc.src, work, r)
			if err != nil {
				t.Fatal(err)
			}
			o := outs[0]
			before := sha(t, o.Path)
			d, err := engine.Describe(context.Background(), o.Path, o.Format)
			if err != nil {
				t.Fatal(err)
			}
			if after := sha(t, o.Path); after != before {
				t.Fatal("Describe changed the output")
			}
			if entries, _ := os.ReadDir(work); len(entries) != 1 {
				t.Fatalf("work dir holds %d files after Describe (an .aux.xml?)", len(entries))
			}
			if d.Software["GDAL"] != engine.Version() || d.Software["PROJ"] == "" {
				t.Errorf("software %v", d.Software)
			}
			tc.check(t, d)
			fi, _ := os.Stat(o.Path)
			it, err := stac.NewItem(stac.ItemInput{
				ID: filepath.Base(o.Path), Asset: stac.Asset{Href: "./" + filepath.Base(o.Path), Format: o.Format, SHA256: before, Size: fi.Size()},
				Description: &d, Datetime: time.Now(), Processing: stac.Processing{RecipeHash: r.ShortHash(), Recipe: r.CanonicalJSON()},
			})
			if err != nil {
				t.Fatal(err)
			}
			b, err := it.JSON()
			if err != nil {
				t.Fatal(err)
			}
			if err := v.ValidateItem(b); err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
		})
	}
}

// A raster over statisticsPixels gets its statistics from an overview:
// close to the exact ones. The band is the ramp x + y over 2600 x 2000
// pixels (exact minimum 0, maximum 4598, mean 2299).
func TestDescribeStatisticsFromOverview(t *testing.T) {
	const w, h = 2600, 2000
	if w*h <= statisticsPixels {
		t.Fatal("the raster must be over the bound")
	}
	p := filepath.Join(t.TempDir(), "ramp.tif")
	ds, err := godal.Create(godal.GTiff, p, 1, godal.Float32, w, h, godal.CreationOption("TILED=YES"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.SetGeoTransform([6]float64{500000, 10, 0, 5600000, 0, -10}); err != nil {
		t.Fatal(err)
	}
	sr, _ := godal.NewSpatialRefFromEPSG(32633)
	if err := ds.SetSpatialRef(sr); err != nil {
		t.Fatal(err)
	}
	sr.Close()
	row := make([]float32, w)
	for y := 0; y < h; y++ {
		for x := range row {
			row[x] = float32(x + y)
		}
		if err := ds.Bands()[0].Write(0, y, row, w, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	r := recipe.DefaultRecipe()
	r.EngineVersion = engine.Version()
	outs, err := engine.Convert(context.Background(), p, t.TempDir(), r)
	if err != nil {
		t.Fatal(err)
	}
	d, err := engine.Describe(context.Background(), outs[0].Path, outs[0].Format)
	if err != nil {
		t.Fatal(err)
	}
	s := d.Bands[0].Statistics
	if s == nil || s.Minimum > 10 || s.Maximum < 4588 || math.Abs(s.Mean-2299) > 2 || math.Abs(s.StdDev-exactRampStdDev(w, h)) > 5 {
		t.Fatalf("statistics %+v, want about min 0, max 4598, mean 2299, stddev %.1f", s, exactRampStdDev(w, h))
	}
}

// exactRampStdDev is the population standard deviation of x + y over a
// w x h grid: the sum of two independent uniform integers' variances.
func exactRampStdDev(w, h int) float64 {
	v := func(n int) float64 { return (float64(n)*float64(n) - 1) / 12 }
	return math.Sqrt(v(w) + v(h))
}

func TestDescribeUnknownFormat(t *testing.T) {
	if _, err := engine.Describe(context.Background(), "x", "GTiff"); !isSystemic(err) {
		t.Fatalf("error %v, want systemic", err)
	}
}

func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9*math.Max(1, math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// BenchmarkDescribe measures what the STAC description of a COG costs next
// to its conversion: the 5120 x 5120 Float32 raster of BenchmarkCOG (26 M
// pixels, exact statistics) is converted once, then described b.N times.
// describe/convert is the share Convert spends on it.
func BenchmarkDescribe(b *testing.B) {
	dir := b.TempDir()
	src := benchRaster(b, dir)
	start := time.Now()
	outs, err := engine.Convert(context.Background(), src, b.TempDir(), fgbRecipe())
	if err != nil {
		b.Fatal(err)
	}
	convertNs := float64(time.Since(start).Nanoseconds())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := engine.Describe(context.Background(), outs[0].Path, outs[0].Format); err != nil {
			b.Fatal(err)
		}
	}
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perOp/1e6, "describe-ms/op")
	b.ReportMetric(perOp/convertNs, "describe/convert")
}
