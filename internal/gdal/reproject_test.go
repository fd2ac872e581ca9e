package gdal

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// cogFacts is what GDAL reports about a written COG.
type cogFacts struct {
	compression string
	overviews   int
	nodata      string
	epsg        string
	gt          [6]float64
	w, h, bands int
}

func readCOG(t *testing.T, p string) cogFacts {
	t.Helper()
	ds, err := godal.Open(p, godal.Drivers("GTiff"))
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	f := cogFacts{compression: ds.Metadata("COMPRESSION", godal.Domain("IMAGE_STRUCTURE"))}
	b := ds.Bands()[0]
	f.overviews = len(b.Overviews())
	if v, ok := b.NoData(); ok {
		f.nodata = formatFloat(v)
	}
	if sr := ds.SpatialRef(); sr != nil {
		f.epsg = sr.AuthorityName("") + ":" + sr.AuthorityCode("")
	}
	f.gt, _ = ds.GeoTransform()
	st := ds.Structure()
	f.w, f.h, f.bands = st.SizeX, st.SizeY, st.NBands
	return f
}

func formatFloat(v float64) string {
	if math.IsNaN(v) {
		return "nan"
	}
	return strings.TrimSuffix(strings.TrimRight(strings.TrimRight(f64(v), "0"), "."), ".")
}

// TestRecipeRasterSettings converts samples with each raster setting a
// recipe file can give and reads back what GDAL wrote; every output passes
// the fidelity check (pixel for pixel against its source, or against the
// warp of its source) and GDAL's COG validator.
func TestRecipeRasterSettings(t *testing.T) {
	base := fgbRecipe()
	cases := []struct {
		name   string
		sample string
		mod    func(*recipe.Recipe)
		check  func(t *testing.T, f cogFacts, o recipe.Output)
	}{
		{"deflate", "dem_utm33.tif", func(r *recipe.Recipe) { r.Compression, r.DeflateLevel = "DEFLATE", 9 },
			func(t *testing.T, f cogFacts, _ recipe.Output) { want(t, "compression", f.compression, "DEFLATE") }},
		{"lzw standard predictor", "temperature_f32.tif", func(r *recipe.Recipe) { r.Compression, r.Predictor = "LZW", "standard" },
			func(t *testing.T, f cogFacts, _ recipe.Output) { want(t, "compression", f.compression, "LZW") }},
		{"lerc zstd", "temperature_f32.tif", func(r *recipe.Recipe) { r.Compression = "LERC_ZSTD" },
			func(t *testing.T, f cogFacts, _ recipe.Output) { want(t, "compression", f.compression, "LERC_ZSTD") }},
		{"float predictor", "temperature_f32.tif", func(r *recipe.Recipe) { r.Predictor = "floating_point" },
			func(t *testing.T, f cogFacts, _ recipe.Output) { want(t, "compression", f.compression, "ZSTD") }},
		{"one overview level", "dem_utm33.tif", func(r *recipe.Recipe) { r.OverviewLevels, r.BlockSize = 1, 128 },
			func(t *testing.T, f cogFacts, _ recipe.Output) { want(t, "overviews", f.overviews, 1) }},
		{"no overviews", "dem_utm33.tif", func(r *recipe.Recipe) { r.OverviewLevels = recipe.OverviewsNone },
			func(t *testing.T, f cogFacts, _ recipe.Output) { want(t, "overviews", f.overviews, 0) }},
		{"nodata assigned", "dem_utm33.tif", func(r *recipe.Recipe) { r.NoData = "255" },
			func(t *testing.T, f cogFacts, _ recipe.Output) { want(t, "nodata", f.nodata, "255") }},
		{"creation option", "dem_utm33.tif", func(r *recipe.Recipe) { r.CreationOptions = []string{"COMPRESS=DEFLATE"} },
			func(t *testing.T, f cogFacts, _ recipe.Output) { want(t, "compression", f.compression, "DEFLATE") }},
		{"reprojected", "dem_utm33.tif", func(r *recipe.Recipe) { r.TargetCRS = "EPSG:4326" },
			func(t *testing.T, f cogFacts, o recipe.Output) {
				want(t, "crs", f.epsg, "EPSG:4326")
				want(t, "warp checked", strings.Contains(strings.Join(o.Fidelity.Checks, ","), "warp"), true)
			}},
		{"target CRS the source has", "dem_utm33.tif", func(r *recipe.Recipe) { r.TargetCRS = "EPSG:32633" },
			func(t *testing.T, f cogFacts, o recipe.Output) {
				// No resampling: the output is the source, pixel for pixel.
				want(t, "crs", f.epsg, "EPSG:32633")
				want(t, "warped", strings.Contains(strings.Join(o.Fidelity.Checks, ","), "warp"), false)
				want(t, "size", [2]int{f.w, f.h}, [2]int{1024, 1024})
			}},
		{"web optimized", "landcover_4326.tif", func(r *recipe.Recipe) { r.TargetCRS = recipe.WebOptimized },
			func(t *testing.T, f cogFacts, o recipe.Output) {
				want(t, "crs", f.epsg, "EPSG:3857")
				// The pixel size is a zoom level's, the origin on that
				// level's tile grid.
				z := math.Log2(2 * webMercatorHalf / (512 * f.gt[1]))
				if math.Abs(z-math.Round(z)) > 1e-6 || f.gt[1] != -f.gt[5] {
					t.Errorf("resolution %v is no zoom level's (z=%v)", f.gt[1], z)
				}
				span := 512 * f.gt[1]
				for _, edge := range []float64{f.gt[0] + webMercatorHalf, webMercatorHalf - f.gt[3]} {
					if k := edge / span; math.Abs(k-math.Round(k)) > 1e-6 {
						t.Errorf("origin %v,%v not on the tile grid (%v tiles)", f.gt[0], f.gt[3], k)
					}
				}
				if f.w%512 != 0 || f.h%512 != 0 {
					t.Errorf("size %dx%d is not whole tiles", f.w, f.h)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base
			c.mod(&r)
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
			outs, err := engine.Convert(context.Background(), sample(t, c.sample).Path, t.TempDir(), r)
			if err != nil {
				t.Fatal(err)
			}
			o := outs[0]
			if o.Fidelity == nil || !strings.Contains(strings.Join(o.Fidelity.Checks, ","), "pixels") {
				t.Fatalf("no pixel check: %+v", o.Fidelity)
			}
			validateCOG(t, o.Path)
			c.check(t, readCOG(t, o.Path), o)
		})
	}
}

func want[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

func TestRecipeRasterRefusals(t *testing.T) {
	cases := []struct {
		name   string
		sample string
		mod    func(*recipe.Recipe)
		// A recipe this GDAL cannot apply is refused before a run
		// (recipe.Book.Check); one that reaches a conversion unchecked
		// is InvalidInput: remediation and a replay, not the DLQ.
		code fault.Code
	}{
		{"nodata out of the band's range", "dem_utm33.tif", func(r *recipe.Recipe) { r.NoData = "-9999" }, fault.InvalidInput},
		{"float predictor on bytes", "dem_utm33.tif", func(r *recipe.Recipe) { r.Predictor = "floating_point" }, fault.InvalidInput},
		{"unknown creation option", "dem_utm33.tif", func(r *recipe.Recipe) { r.CreationOptions = []string{"NO_SUCH_OPTION=1"} }, fault.InvalidInput},
		{"bad creation option value", "dem_utm33.tif", func(r *recipe.Recipe) { r.CreationOptions = []string{"BIGTIFF=MAYBE"} }, fault.InvalidInput},
		{"unknown target CRS", "dem_utm33.tif", func(r *recipe.Recipe) { r.TargetCRS = "EPSG:999999" }, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fgbRecipe()
			c.mod(&r)
			_, err := engine.Convert(context.Background(), sample(t, c.sample).Path, t.TempDir(), r)
			switch {
			case err == nil:
				t.Fatal("converted")
			case fault.CodeOf(err) != c.code:
				t.Fatalf("want %s, got %v", c.code, err)
			}
		})
	}
}

func TestCheckCreationOptions(t *testing.T) {
	for _, ok := range [][]string{nil, {"BIGTIFF=YES"}, {"bigtiff=yes", "GEOTIFF_VERSION=1.1"}, {"LEVEL=3"}, {"COMPRESS=LERC_DEFLATE"}} {
		if err := CheckCreationOptions(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	// BLOCKSIZE's declared min is 128, OVERVIEW_COUNT's 0.
	for _, bad := range [][]string{{"TILED=YES"}, {"COMPRESS=LZ77"}, {"LEVEL=high"}, {"BLOCKSIZE=x"}, {"BLOCKSIZE=64"}, {"OVERVIEW_COUNT=-1"}} {
		if err := CheckCreationOptions(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestWebGrid(t *testing.T) {
	// A source of 30 m pixels near Paris in Web Mercator metres.
	gt := [6]float64{261000, 30, 0, 6250000, 0, -30}
	te, res := webGrid(gt, 1000, 800, 256)
	z := math.Log2(2 * webMercatorHalf / (256 * res))
	if math.Abs(z-math.Round(z)) > 1e-9 || res > 30 || res*2 <= 30 {
		t.Fatalf("resolution %v (zoom %v): want the first zoom level at least as fine as 30 m", res, z)
	}
	if te[0] > gt[0] || te[3] < gt[3] || te[2] < gt[0]+30*1000 || te[1] > gt[3]-30*800 {
		t.Fatalf("extent %v does not cover the source", te)
	}
}
