package gdal

import (
	"archive/zip"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/cogcheck"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// Each input format the project promises (docs/decisions/0010), generated
// here by GDAL, converted by the engine and judged from outside: COGs by
// GDAL's validate_cloud_optimized_geotiff.py and by internal/cogcheck (which
// must agree), FlatGeobuf by ogrinfo's feature count.

// judgeCOG: both validators must call p a valid COG.
func judgeCOG(t *testing.T, p string) {
	t.Helper()
	validateCOG(t, p)
	rep, err := cogcheck.CheckFile(p)
	if err != nil {
		t.Fatalf("cogcheck %s: %v", p, err)
	}
	if !rep.Valid() {
		t.Errorf("cogcheck disagrees with GDAL's validator on %s: %v", p, rep.Errors)
	}
}

var featureCountRE = regexp.MustCompile(`Feature Count: (\d+)`)

// ogrCount is the feature count ogrinfo reads in the single layer of p.
func ogrCount(t *testing.T, p string) int {
	t.Helper()
	out, err := exec.Command("ogrinfo", "-ro", "-so", "-al", p).CombinedOutput()
	if err != nil {
		t.Fatalf("ogrinfo %s: %v\n%s", p, err, out)
	}
	m := featureCountRE.FindAllStringSubmatch(string(out), -1)
	if len(m) != 1 {
		t.Fatalf("ogrinfo %s: %d layers\n%s", p, len(m), out)
	}
	n, _ := strconv.Atoi(m[0][1])
	return n
}

// convertOK converts src with a deadline and returns its outputs.
func convertOK(t *testing.T, src string, r recipe.Recipe) []recipe.Output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	outs, err := engine.Convert(ctx, src, t.TempDir(), r)
	if err != nil {
		t.Fatalf("Convert(%s): %v", filepath.Base(src), err)
	}
	return outs
}

// judgeVector: one FlatGeobuf per expected layer, each with the expected
// number of features as ogrinfo reads it, and checkFGB's other checks.
func judgeVector(t *testing.T, outs []recipe.Output, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, o := range outs {
		if o.Format != recipe.FormatFlatGeobuf {
			t.Fatalf("format %s", o.Format)
		}
		checkFGB(t, o)
		got[o.Layer] = ogrCount(t, o.Path)
	}
	if len(got) != len(want) {
		t.Fatalf("layers %v, want %v", got, want)
	}
	for l, n := range want {
		if got[l] != n {
			t.Errorf("layer %s: ogrinfo counts %d features, want %d (all: %v)", l, got[l], n, got)
		}
	}
}

type zipEntry struct {
	name string
	data []byte
	file string      // read data from this file instead
	mode fs.FileMode // 0: regular 0644
	hdr  func(*zip.FileHeader)
	raw  bool // write data as is, with hdr's declared sizes (CreateRaw)
}

func writeZip(t *testing.T, dst string, entries []zipEntry) string {
	t.Helper()
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, e := range entries {
		data := e.data
		if e.file != "" {
			if data, err = os.ReadFile(e.file); err != nil {
				t.Fatal(err)
			}
		}
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h.SetMode(mode)
		if e.hdr != nil {
			e.hdr(h)
		}
		var w interface{ Write([]byte) (int, error) }
		if e.raw {
			w, err = zw.CreateRaw(h)
		} else {
			w, err = zw.CreateHeader(h)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// zipDir zips every file under root, named relative to base.
func zipDir(t *testing.T, dst, base, root string) string {
	t.Helper()
	var entries []zipEntry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		entries = append(entries, zipEntry{name: filepath.ToSlash(rel), file: p})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	return writeZip(t, dst, entries)
}

// shapefileParts writes the places shapefile into dir and lists its files.
func shapefileParts(t *testing.T, dir, stem string) []string {
	t.Helper()
	if err := sampledata.Writer("places.shp")(filepath.Join(dir, stem+".shp")); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, ext := range []string{".shp", ".shx", ".dbf", ".prj", ".cpg"} {
		if _, err := os.Stat(filepath.Join(dir, stem+ext)); err == nil {
			parts = append(parts, filepath.Join(dir, stem+ext))
		}
	}
	return parts
}

func zipShapefileParts(t *testing.T, dst, prefix string, parts []string, skip ...string) string {
	t.Helper()
	var entries []zipEntry
	for _, p := range parts {
		if slices.Contains(skip, filepath.Ext(p)) {
			continue
		}
		entries = append(entries, zipEntry{name: prefix + filepath.Base(p), file: p})
	}
	return writeZip(t, dst, entries)
}

// vectorFrom converts GeoJSON text into dst with ogr2ogr switches (godal).
func vectorFrom(t *testing.T, text, dst string, switches ...string) string {
	t.Helper()
	if err := sampledata.FromGeoJSON(text, dst, switches); err != nil {
		t.Fatalf("%s: %v", filepath.Base(dst), err)
	}
	return dst
}

func TestVectorInputs(t *testing.T) {
	places := map[string]int{"places": 5}
	t.Run("Shapefile", func(t *testing.T) {
		judgeVector(t, convertOK(t, sample(t, "places.shp").Path, fgbRecipe()), places)
	})
	t.Run("GeoJSON", func(t *testing.T) {
		judgeVector(t, convertOK(t, sample(t, "parks.geojson").Path, fgbRecipe()), map[string]int{"parks": 4})
	})
	t.Run("GeoPackage every layer", func(t *testing.T) {
		judgeVector(t, convertOK(t, sample(t, "city.gpkg").Path, fgbRecipe()), map[string]int{"parks": 4, "places": 5})
	})
	for _, name := range []string{"places.shp.zip", "places.zip"} {
		t.Run("zipped Shapefile "+name, func(t *testing.T) {
			dir := t.TempDir()
			parts := shapefileParts(t, dir, "places")
			src := zipShapefileParts(t, filepath.Join(dir, name), "", parts)
			outs := convertOK(t, src, fgbRecipe())
			judgeVector(t, outs, places)
			if got := filepath.Base(outs[0].Path); got != "places.fgb" {
				t.Errorf("output named %s", got)
			}
		})
	}
	t.Run("zipped Shapefile in a folder, with macOS litter", func(t *testing.T) {
		dir := t.TempDir()
		parts := shapefileParts(t, dir, "places")
		var entries []zipEntry
		for _, p := range parts {
			entries = append(entries, zipEntry{name: "data/" + filepath.Base(p), file: p},
				zipEntry{name: "__MACOSX/data/._" + filepath.Base(p), data: []byte("\x00\x05\x16\x07")})
		}
		judgeVector(t, convertOK(t, writeZip(t, filepath.Join(dir, "places.zip"), entries), fgbRecipe()), places)
	})
	t.Run("KML", func(t *testing.T) {
		dir := t.TempDir()
		src := vectorFrom(t, sampledata.PlacesGeoJSON, filepath.Join(dir, "places.kml"), "-f", "KML", "-nln", "places")
		judgeVector(t, convertOK(t, src, fgbRecipe()), places)
	})
	t.Run("KMZ", func(t *testing.T) {
		dir := t.TempDir()
		kml := vectorFrom(t, sampledata.PlacesGeoJSON, filepath.Join(dir, "doc.kml"), "-f", "KML", "-nln", "places")
		src := writeZip(t, filepath.Join(dir, "places.kmz"), []zipEntry{{name: "doc.kml", file: kml}})
		outs := convertOK(t, src, fgbRecipe())
		judgeVector(t, outs, places)
	})
	t.Run("FileGDB", func(t *testing.T) {
		dir := t.TempDir()
		gdb := filepath.Join(dir, "city.gdb")
		vectorFrom(t, sampledata.ParksGeoJSON, gdb, "-f", "OpenFileGDB", "-nln", "parks", "-nlt", "MULTIPOLYGON")
		vectorFrom(t, sampledata.PlacesGeoJSON, gdb, "-f", "OpenFileGDB", "-update", "-nln", "places")
		want := map[string]int{"parks": 4, "places": 5}
		// As it arrives from an object store: a zip of the .gdb folder.
		zipped := zipDir(t, filepath.Join(dir, "city.gdb.zip"), dir, gdb)
		outs := convertOK(t, zipped, fgbRecipe())
		judgeVector(t, outs, want)
		for _, o := range outs {
			if b := filepath.Base(o.Path); !strings.HasPrefix(b, "city.") || strings.Contains(b, ".gdb") {
				t.Errorf("output named %s", b)
			}
		}
		// As a local directory (the CLI's case).
		judgeVector(t, convertOK(t, gdb, fgbRecipe()), want)
	})
}

// rasterFrom writes a raster with gdal_translate switches from the DEM sample.
func rasterFrom(t *testing.T, dst string, args ...string) string {
	t.Helper()
	src, err := godal.Open(sample(t, "dem_utm33.tif").Path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ds, err := src.Translate(dst, args, godal.ErrLogger(quietLogger))
	if err != nil {
		t.Skipf("cannot write %s here: %v", filepath.Base(dst), err)
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestRasterInputs(t *testing.T) {
	win := []string{"-srcwin", "0", "0", "600", "600"}
	cases := []struct {
		name string
		args []string
		want int // outputs
	}{
		{"dem.img", append([]string{"-of", "HFA"}, win...), 1},
		{"dem.asc", append([]string{"-of", "AAIGrid"}, win...), 1},
		{"dem.png", append([]string{"-of", "PNG", "-co", "WORLDFILE=YES"}, win...), 1},
		{"dem.jpg", append([]string{"-of", "JPEG", "-co", "WORLDFILE=YES"}, win...), 1},
		{"dem.jp2", append([]string{"-of", "JP2OpenJPEG", "-co", "REVERSIBLE=YES", "-co", "QUALITY=100"}, win...), 1},
		// Two bands become two netCDF variables: two subdatasets, two COGs.
		{"two.nc", append([]string{"-of", "netCDF", "-b", "1", "-b", "1"}, win...), 2},
		{"two4.nc", append([]string{"-of", "netCDF", "-co", "FORMAT=NC4", "-b", "1", "-b", "1"}, win...), 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := rasterFrom(t, filepath.Join(dir, c.name), c.args...)
			if strings.HasSuffix(c.name, ".png") || strings.HasSuffix(c.name, ".jpg") {
				// The CRS travels in the .aux.xml, the placement in the world file.
				if _, err := os.Stat(src + ".aux.xml"); err != nil {
					t.Fatalf("no .aux.xml beside %s", c.name)
				}
			}
			outs := convertOK(t, src, fgbRecipe())
			if len(outs) != c.want {
				t.Fatalf("%d outputs, want %d", len(outs), c.want)
			}
			layers := map[string]bool{}
			for _, o := range outs {
				judgeCOG(t, o.Path)
				layers[o.Layer] = true
				ds, err := godal.Open(o.Path)
				if err != nil {
					t.Fatal(err)
				}
				sr := ds.SpatialRef()
				if sr == nil || isNullHandle(sr) {
					t.Errorf("%s: no CRS", o.Path)
				} else if code := sr.AuthorityCode(""); code != "32633" {
					t.Errorf("%s: CRS authority code %q, want 32633", o.Path, code)
				}
				gt, err := ds.GeoTransform()
				if err != nil || gt[0] != 500000 || gt[1] != 30 || gt[3] != 5100000 || gt[5] != -30 {
					t.Errorf("%s: geotransform %v %v", o.Path, gt, err)
				}
				ds.Close()
				if o.Stats["width"] != 600 || o.Stats["height"] != 600 {
					t.Errorf("stats %v", o.Stats)
				}
			}
			if c.want > 1 && (!layers["Band1"] || !layers["Band2"]) {
				t.Errorf("subdataset layers %v", layers)
			}
		})
	}
	t.Run("zipped GeoTIFF", func(t *testing.T) {
		dir := t.TempDir()
		src := writeZip(t, filepath.Join(dir, "dem.zip"), []zipEntry{{name: "dem.tif", file: sample(t, "dem_utm33.tif").Path}})
		outs := convertOK(t, src, fgbRecipe())
		judgeCOG(t, outs[0].Path)
		if filepath.Base(outs[0].Path) != "dem.tif" {
			t.Errorf("output %s", outs[0].Path)
		}
	})
	// HDF5 (here a netCDF-4 file read by the HDF5 driver, which does not
	// read CF georeferencing): each array is found and refused by name for
	// its missing CRS, not converted into an unplaced COG.
	t.Run("HDF5 subdatasets", func(t *testing.T) {
		dir := t.TempDir()
		nc := rasterFrom(t, filepath.Join(dir, "two.nc"), append([]string{"-of", "netCDF", "-co", "FORMAT=NC4", "-b", "1", "-b", "1"}, win...)...)
		h5 := filepath.Join(dir, "two.h5")
		if err := os.Rename(nc, h5); err != nil {
			t.Fatal(err)
		}
		if d := identify(h5, preflight.IdentifyAllowed, []string{"two.h5"}); d != "HDF5" {
			t.Fatalf("identify %q, want HDF5", d)
		}
		_, err := engine.Convert(context.Background(), h5, t.TempDir(), fgbRecipe())
		if got := codeOf(err); got != "MissingCRS" || !strings.Contains(err.Error(), "Band1") {
			t.Errorf("HDF5: %v, want MissingCRS naming subdataset Band1", err)
		}
	})
}

// codeOf is what a conversion gave: "converted", a DataError code, or the
// error itself (which no case expects).
func codeOf(err error) string {
	if err == nil {
		return "converted"
	}
	if c := fault.CodeOf(err); c != "" {
		return string(c)
	}
	return fmt.Sprintf("%T: %v", err, err)
}
