package formats

import (
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kind Kind
		ext  string
	}{
		{"dem.tif", Raster, ".tif"},
		{"a/b/DEM.TIFF", Raster, ".tiff"},
		{"land.img", Raster, ".img"},
		{"roads.shp", Vector, ".shp"},
		{"city.gdb", Vector, ".gdb"},
		{"roads.shp.zip", Archive, ".shp.zip"},
		{"ROADS.SHP.ZIP", Archive, ".shp.zip"},
		{"places.kmz", Archive, ".kmz"},
		{"x.tar.gz", Archive, ".tar.gz"},
		{"x.gz", Archive, ".gz"},
		{"roads.dbf", Sidecar, ".dbf"},
		{"dem.tif.aux.xml", Sidecar, ".aux.xml"},
		{"land.rrd", Sidecar, ".rrd"},
		{"land.ige", Sidecar, ".ige"},
		{"dem.tif.ovr", Sidecar, ".ovr"},
		{"dem.tif.msk", Sidecar, ".msk"},
		{"roads.qmd", Sidecar, ".qmd"},
		{"image.IMD", Sidecar, ".imd"},
		{"image.RPB", Sidecar, ".rpb"},
		{"image_RPC.TXT", Sidecar, "_rpc.txt"},
		{"a/image_rpc.txt", Sidecar, "_rpc.txt"},
		{"_rpc.txt", NotGeospatial, ".txt"}, // no stem: an ordinary text file
		{"notes.txt", NotGeospatial, ".txt"},
		{"image.XML", Unknown, ".xml"}, // Conditional: a sidecar only beside its main file
		{"roads.xsd", Sidecar, ".xsd"},
		{"roads.gfs", Sidecar, ".gfs"},
		{"roads.gml", Vector, ".gml"},
		{"README.txt", NotGeospatial, ".txt"},
		{"out.parquet", Unknown, ".parquet"},
		{"survey.csv", Vector, ".csv"},
		{"dem", Unknown, ""},
		{".aux.xml", Unknown, ".xml"},
		{".hidden", Unknown, ""},
	} {
		f := Lookup(tc.name)
		if f.Kind != tc.kind || f.Ext != tc.ext {
			t.Errorf("Lookup(%q) = %s %q, want %s %q", tc.name, f.Kind, f.Ext, tc.kind, tc.ext)
		}
	}
}

func TestTableIsConsistent(t *testing.T) {
	t.Parallel()
	for _, f := range Table() {
		if f.Ext != strings.ToLower(f.Ext) || !strings.Contains(f.Ext, ".") || !(strings.HasPrefix(f.Ext, ".") || f.Kind == Sidecar) {
			t.Errorf("%q: extensions are lower case with the dot (a sidecar's may be a suffix of the stem)", f.Ext)
		}
		if f.Kind == Sidecar && f.Of == 0 {
			t.Errorf("%s: a sidecar says what it belongs to", f.Ext)
		}
		if f.Of != 0 && f.Kind != Sidecar && f.Kind != Unknown {
			t.Errorf("%s: Of is set for sidecars and conditional sidecars only", f.Ext)
		}
		if f.ReadByGDAL && f.Of == 0 {
			t.Errorf("%s: ReadByGDAL is about sidecars", f.Ext)
		}
		if (f.Holds != Unknown || f.Zip) && f.Kind != Archive {
			t.Errorf("%s: Holds and Zip are about archives", f.Ext)
		}
		if f.Kind == NotGeospatial && (f.Output != "" || f.Drivers != nil) {
			t.Errorf("%s: a non-geospatial extension has no format", f.Ext)
		}
	}
}

func TestStem(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a/b/roads.shp.zip": "roads",
		"city.gdb.zip":      "city",
		"dem.tif":           "dem",
		"dem.tif.aux.xml":   "dem.tif",
		"x.tar.gz":          "x",
		"dem":               "dem",
		".hidden":           ".hidden",
		"a.b.c.tif":         "a.b.c",
		"image_RPC.TXT":     "image",
		"a/image_rpc.txt":   "image",
		"image.XML":         "image",
		"roads.xsd":         "roads",
	} {
		if got := Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSidecarOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		main, name string
		want       bool
	}{
		{"roads.shp", "roads.dbf", true},
		{"roads.shp", "roads.DBF", true},
		{"roads.shp", "roads.prj", true},
		{"roads.shp", "roads.shp.aux.xml", true},
		{"roads.shp", "roads.qmd", true},
		{"roads.shp", "ROADS.dbf", false}, // the stem is exact: a store lists by prefix
		{"roads.shp", "roads.tfw", false}, // a world file belongs to a raster
		{"roads.tif", "roads.dbf", false}, // a .dbf belongs to a Shapefile
		{"dem.tif", "dem.tfw", true},
		{"dem.tif", "dem.tif.aux.xml", true},
		{"dem.tif", "dem.aux.xml", true},
		{"dem.tif", "dem.tif.ovr", true},
		{"dem.tif", "dem.ovr", true},
		{"dem.tif", "dem.tif.msk", true},
		{"dem.tif", "dem.other.tfw", false},
		{"dem.tif", "demx.tfw", false},
		{"land.img", "land.rrd", true},
		{"land.img", "land.ige", true},
		{"grid.asc", "grid.prj", true},
		{"dem", "dem.tfw", true},       // unknown main: GDAL may find a raster
		{"grid.dat", "grid.prj", true}, // idem
		{"parks.geojson", "parks.prj", false},
		{"parks.geojson", "parks.qmd", true},
		{"roads.dbf", "roads.prj", false}, // a sidecar has no sidecars
		{"dem.tif", "dem.tif", false},
		{"a/dem.tif", "b/dem.tfw", true}, // base names: the caller compares directories
		// Satellite metadata, as GDAL names it beside the image.
		{"image.tif", "image.IMD", true},
		{"image.tif", "image.RPB", true},
		{"image.tif", "image.rpb", true},
		{"image.tif", "image_RPC.TXT", true}, // "stem_", not "stem."
		{"image.tif", "image_rpc.txt", true},
		{"image.tif", "image.tif_RPC.TXT", false}, // GDAL replaces the extension
		{"image.tif", "imagex_RPC.TXT", false},
		{"image.tif", "image.XML", true},
		{"image.tif", "image.xml", true},
		{"image.tif", "image.tif.xml", true},
		{"image.ntf", "image.XML", true},  // an unknown main may be a raster
		{"image.shp", "image.XML", false}, // a Shapefile reads no DigitalGlobe metadata
		{"image.XML", "image.tif", false}, // a conditional sidecar is no main of a raster
		{"image.XML", "image.RPB", false}, // nor of raster metadata
		{"data.xml", "data.xml.aux.xml", true},
		{"roads.geojson", "roads.XML", false},
		// GML schema files.
		{"roads.gml", "roads.xsd", true},
		{"roads.gml", "roads.gfs", true},
		{"roads.gml", "roads.dbf", false},
		{"roads.gml", "roads.tfw", false},
		{"roads.tif", "roads.xsd", false},
		{"roads.shp", "roads.xsd", false},
	} {
		if got := SidecarOf(tc.main, tc.name); got != tc.want {
			t.Errorf("SidecarOf(%q, %q) = %v, want %v", tc.main, tc.name, got, tc.want)
		}
	}
}

func TestConditional(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"image.XML": true, "image.xml": true, "a/b/x.Xml": true,
		"dem.tif.aux.xml": false, "image.IMD": false, "image_RPC.TXT": false, "dem.tif": false, "roads.xsd": false,
	} {
		if got := Conditional(in); got != want {
			t.Errorf("Conditional(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestPredictKind(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Kind{
		"dem.tif":       Raster,
		"roads.shp":     Vector,
		"roads.shp.zip": Vector,
		"city.gdb.zip":  Vector,
		"city.gdb":      Vector,
		"places.kmz":    Vector,
		"x.zip":         Vector,
		"dem.tif.zip":   Raster,
		"parks.GeoJSON": Vector,
		"dem":           Raster,
		"grid.nc":       Raster,
		"a.fgb":         Vector,
		"roads.gml":     Vector,
	} {
		if got := PredictKind(in); got != want {
			t.Errorf("PredictKind(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestReadableByRange(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"dem.tif": true, "dem.TIF": true, "scene.jp2": true, "parks.geojson": true, "roads.shp.zip": true,
		"roads.shp": false, "city.gpkg": false, "grid.nc": false, "land.img": false, "grid.asc": false,
		"x.sqlite": false, "dem": true,
	} {
		if got := ReadableByRange(in); got != want {
			t.Errorf("ReadableByRange(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestOutputFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"x.tif": "COG", "x.TIFF": "COG", "x.parquet": "GeoParquet", "x.geoparquet": "GeoParquet",
		"x.fgb": "FlatGeobuf", "x.shp": "", "x": "",
	} {
		if got := OutputFormat(in); got != want {
			t.Errorf("OutputFormat(%q) = %q, want %q", in, got, want)
		}
	}
}
