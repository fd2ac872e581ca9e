package gdal

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// The bad-input corpus (docs/decisions/0011): every case is generated here,
// converted under a deadline, and must give its DataError code or a correct
// output; never a crash, a hang, or a read outside the input.
//
// "Outside the input" is proven with named pipes: each case gets a FIFO
// in a directory of its own, and cases that can name another file name
// that FIFO (VRT sources, KML links, sidecars of the same stem). Opening a
// FIFO for reading blocks until a writer comes, so a GDAL that followed
// the reference would stall the conversion past its deadline, and the
// test fails (after unblocking it).

type corpusCase struct {
	name string
	// make writes the source into dir and returns its path; fifo is a named
	// pipe outside dir that the source may reference.
	make   func(t *testing.T, dir, fifo string) string
	recipe func(r *recipe.Recipe)
	want   string                                   // a fault.Code, or "converted"
	check  func(t *testing.T, outs []recipe.Output) // extra checks of a converted output
}

const corpusDeadline = 30 * time.Second

func corpus() []corpusCase {
	code := func(c fault.Code) string { return string(c) }
	vrtTo := func(target string) string {
		return `<?xml version="1.0"?>
<VRTDataset rasterXSize="64" rasterYSize="64"><SRS>EPSG:4326</SRS><GeoTransform>0,1,0,0,0,-1</GeoTransform>
<VRTRasterBand dataType="Byte" band="1"><SimpleSource><SourceFilename relativeToVRT="0">` + target +
			`</SourceFilename><SourceBand>1</SourceBand></SimpleSource></VRTRasterBand></VRTDataset>`
	}
	text := func(name, body string) func(*testing.T, string, string) string {
		return func(t *testing.T, dir, _ string) string { return writeFile(t, dir, name, body) }
	}
	withSample := func(name string, write func(string) error) func(*testing.T, string, string) string {
		return func(t *testing.T, dir, _ string) string {
			p := filepath.Join(dir, name)
			if err := write(p); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	shp := func(drop string, edit func(t *testing.T, stem string)) func(*testing.T, string, string) string {
		return func(t *testing.T, dir, _ string) string {
			shapefileParts(t, dir, "places")
			stem := filepath.Join(dir, "places")
			if drop != "" {
				os.Remove(stem + drop)
			}
			if edit != nil {
				edit(t, stem)
			}
			return stem + ".shp"
		}
	}
	prj := func(body string) func(t *testing.T, stem string) {
		return func(t *testing.T, stem string) {
			if err := os.WriteFile(stem+".prj", []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	zipped := func(name string, entries func(t *testing.T, dir, fifo string) []zipEntry) func(*testing.T, string, string) string {
		return func(t *testing.T, dir, fifo string) string {
			return writeZip(t, filepath.Join(dir, name), entries(t, dir, fifo))
		}
	}
	shpEntries := func(prefix string, skip ...string) func(t *testing.T, dir, fifo string) []zipEntry {
		return func(t *testing.T, dir, _ string) []zipEntry {
			parts := shapefileParts(t, t.TempDir(), "places")
			var es []zipEntry
			for _, p := range parts {
				if !slices.Contains(skip, filepath.Ext(p)) {
					es = append(es, zipEntry{name: prefix + filepath.Base(p), file: p})
				}
			}
			return es
		}
	}
	kmlWith := func(extra string) string {
		return `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>x</name>
<Placemark><name>a</name><Point><coordinates>13.4,52.5</coordinates></Point></Placemark>` + extra + `
</Document></kml>`
	}
	networkLink := func(fifo string) string {
		return `<NetworkLink><name>more</name><Link><href>` + fifo + `</href></Link></NetworkLink>`
	}
	geojsonPoints := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"type":"FeatureCollection","features":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"type":"Feature","properties":{"i":%d},"geometry":{"type":"Point","coordinates":[%d.5,%d.25]}}`, i, i%180, i%90)
		}
		b.WriteString("]}")
		return b.String()
	}
	validOutput := func(t *testing.T, outs []recipe.Output) {
		for _, o := range outs {
			ds, err := godal.Open(o.Path, godal.VectorOnly())
			if err != nil {
				t.Fatal(err)
			}
			l := ds.Layers()[0]
			for f := l.NextFeature(); f != nil; f = l.NextFeature() {
				if g := f.Geometry(); !isNull(g) && !g.Valid() {
					t.Errorf("%s: invalid geometry in the output", o.Path)
				}
				f.Close()
			}
			ds.Close()
		}
	}

	return []corpusCase{
		// ---- raster: damaged, disguised, bombs ----
		{name: "truncated TIFF", make: withSample("cut.tif", sampledata.Writer("truncated.tif")), want: code(fault.CorruptSource)},
		{name: "zero bytes", make: text("empty.tif", ""), want: code(fault.CorruptSource)},
		{name: "wrong extension: CSV named .tif", make: withSample("table.tif", sampledata.Writer("not_a_raster.tif")), want: code(fault.UnsupportedFormat)},
		{name: "wrong extension: GeoTIFF named .png", make: func(t *testing.T, dir, _ string) string {
			p := filepath.Join(dir, "really_a_tiff.png")
			copyFile(t, sample(t, "dem_utm33.tif").Path, p)
			return p
		}, want: "converted", check: func(t *testing.T, outs []recipe.Output) { judgeCOG(t, outs[0].Path) }},
		{name: "VRT pointing at /etc/passwd", make: text("passwd.vrt", vrtTo("/etc/passwd")), want: code(fault.UnsafeSource)},
		{name: "VRT pointing at a FIFO (proof of no read)", make: func(t *testing.T, dir, fifo string) string {
			return writeFile(t, dir, "pipe.vrt", vrtTo(fifo))
		}, want: code(fault.UnsafeSource)},
		{name: "VRT disguised as .tif", make: func(t *testing.T, dir, fifo string) string {
			return writeFile(t, dir, "disguised.tif", vrtTo(fifo))
		}, want: code(fault.UnsafeSource)},
		{name: "VRT with a /vsicurl/ source", make: text("remote.tif", vrtTo("/vsicurl/http://127.0.0.1:9/x.tif")), want: code(fault.UnsafeSource)},
		{name: "/vsicurl/ as the file name", make: func(*testing.T, string, string) string { return "/vsicurl/http://127.0.0.1:9/a.tif" }, want: code(fault.UnsafeSource)},
		{name: "/vsizip/ as the file name", make: func(t *testing.T, dir, _ string) string { return "/vsizip/" + dir + "/a.zip/a.tif" }, want: code(fault.UnsafeSource)},
		{name: "OGR VRT disguised as .geojson", make: func(t *testing.T, dir, fifo string) string {
			return writeFile(t, dir, "layer.geojson", `<OGRVRTDataSource><OGRVRTLayer name="x"><SrcDataSource>`+fifo+`</SrcDataSource></OGRVRTLayer></OGRVRTDataSource>`)
		}, want: code(fault.UnsafeSource)},
		{name: "GeoTIFF whose sidecar names are FIFOs", make: func(t *testing.T, dir, _ string) string {
			p := filepath.Join(dir, "dem.tif")
			copyFile(t, sample(t, "dem_utm33.tif").Path, p)
			for _, side := range []string{"dem.tif.aux.xml", "dem.aux.xml", "dem.tfw", "dem.prj"} {
				if err := syscall.Mkfifo(filepath.Join(dir, side), 0o600); err != nil {
					t.Skip("mkfifo:", err)
				}
			}
			return p
		}, want: "converted", check: func(t *testing.T, outs []recipe.Output) { judgeCOG(t, outs[0].Path) }},
		{name: "CSV whose .csvt and .prj are FIFOs", make: func(t *testing.T, dir, _ string) string {
			p := writeFile(t, dir, "pts.csv", "id,WKT\n1,POINT (1 2)\n")
			for _, side := range []string{"pts.csvt", "pts.prj"} {
				if err := syscall.Mkfifo(filepath.Join(dir, side), 0o600); err != nil {
					t.Skip("mkfifo:", err)
				}
			}
			return p
		}, recipe: func(r *recipe.Recipe) {
			r.CSVGeometry, r.CSVWKTColumn, r.AssignCRS = recipe.CSVGeometryWKT, "WKT", "EPSG:4326"
		},
			want: code(fault.UnsafeSource)},
		{name: "GML whose .gfs and .xsd are FIFOs", make: func(t *testing.T, dir, _ string) string {
			p := filepath.Join(dir, "pts.gml")
			run(t, "ogr2ogr", "-f", "GML", "-nln", "pts", p, writeFile(t, t.TempDir(), "in.geojson",
				`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"a":1},"geometry":{"type":"Point","coordinates":[1,2]}}]}`))
			for _, side := range []string{"pts.gfs", "pts.xsd"} {
				os.Remove(filepath.Join(dir, side))
				if err := syscall.Mkfifo(filepath.Join(dir, side), 0o600); err != nil {
					t.Skip("mkfifo:", err)
				}
			}
			return p
		}, want: code(fault.UnsafeSource)},
		{name: "GML with an external entity naming a file outside the input", make: func(t *testing.T, dir, fifo string) string {
			return writeFile(t, dir, "entity.gml", `<?xml version="1.0"?>
<!DOCTYPE x [<!ENTITY secret SYSTEM "file://`+fifo+`">]>
<ogr:FeatureCollection xmlns:ogr="http://ogr.maptools.org/" xmlns:gml="http://www.opengis.net/gml">
<gml:featureMember><ogr:pts><ogr:name>&secret;</ogr:name><ogr:geometryProperty><gml:Point srsName="EPSG:4326"><gml:coordinates>1,2</gml:coordinates></gml:Point></ogr:geometryProperty></ogr:pts></gml:featureMember>
</ogr:FeatureCollection>`)
		}, want: "converted", check: func(t *testing.T, outs []recipe.Output) { judgeVector(t, outs, map[string]int{"pts": 1}) }},
		{name: "GPX whose links name a file outside the input", make: func(t *testing.T, dir, fifo string) string {
			return writeFile(t, dir, "linked.gpx", `<?xml version="1.0"?>
<gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1">
<wpt lat="52.5" lon="13.4"><name>a</name><link href="`+fifo+`"><text>x</text></link></wpt>
</gpx>`)
		}, want: "converted", check: func(t *testing.T, outs []recipe.Output) { judgeVector(t, outs, map[string]int{"waypoints": 1}) }},
		{name: "pixel bomb (10^6 x 10^6 declared in 150 bytes)", make: withSample("bomb.tif", sampledata.Writer("pixel_bomb.tif")), want: code(fault.BudgetExceeded)},
		{name: "TIFF of 0 x 0 pixels", make: withSample("zero.tif", func(p string) error { return writeTinyTIFF(p, 0, 0) }), want: code(fault.CorruptSource)},
		{name: "GeoTIFF with a NaN geotransform", make: withSample("nan.tif", writeNaNGeoTransform), want: code(fault.CorruptSource)},
		{name: "GeoTIFF without CRS", make: withSample("nocrs.tif", sampledata.Writer("no_crs.tif")), want: code(fault.MissingCRS)},
		{name: "ASCII grid with an engineering (LOCAL_CS) CRS", make: func(t *testing.T, dir, _ string) string {
			p := filepath.Join(dir, "local.asc")
			if err := sampledata.Writer("elevation.asc")(p); err != nil {
				t.Fatal(err)
			}
			prj(`LOCAL_CS["site grid",UNIT["metre",1],AXIS["X",EAST],AXIS["Y",NORTH]]`)(t, strings.TrimSuffix(p, ".asc"))
			return p
		}, want: code(fault.InvalidCRS)},
		{name: "FIFO as the source", make: func(t *testing.T, dir, _ string) string {
			p := filepath.Join(dir, "pipe.tif")
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skip(err)
			}
			return p
		}, want: code(fault.UnsafeSource)},
		{name: "symbolic link as the source", make: func(t *testing.T, dir, _ string) string {
			p := filepath.Join(dir, "link.tif")
			if err := os.Symlink(sample(t, "dem_utm33.tif").Path, p); err != nil {
				t.Fatal(err)
			}
			return p
		}, want: code(fault.UnsafeSource)},
		{name: "directory that is not a .gdb", make: func(t *testing.T, dir, _ string) string { return dir }, want: code(fault.UnsupportedFormat)},

		// ---- vector: sidecars, CRS, geometry, encoding, budgets ----
		{name: "shapefile without .shx", make: shp(".shx", nil), want: code(fault.CorruptSource)},
		{name: "shapefile without .dbf", make: shp(".dbf", nil), want: code(fault.CorruptSource)},
		{name: "shapefile without .prj (no CRS)", make: shp(".prj", nil), want: code(fault.MissingCRS)},
		{name: "shapefile with an engineering (LOCAL_CS) CRS", make: shp("", prj(`LOCAL_CS["plant floor",UNIT["Meter",1]]`)), want: code(fault.InvalidCRS)},
		{name: "shapefile with garbage WKT in .prj", make: shp("", prj("this is not WKT {[(")), want: code(fault.InvalidCRS)},
		{name: "self-intersecting polygons, strict", make: text("bowtie.geojson", bowtie),
			recipe: func(r *recipe.Recipe) { r.GeometryPolicy = recipe.GeometryStrict }, want: code(fault.InvalidGeometry)},
		{name: "self-intersecting polygons, kept", make: text("bowtie.geojson", bowtie), want: "converted",
			check: func(t *testing.T, outs []recipe.Output) {
				if outs[0].Stats["repaired"] != 0 || !strings.Contains(strings.Join(outs[0].Warnings, "\n"), "1 invalid geometries kept as they are") {
					t.Errorf("stats %v warnings %v", outs[0].Stats, outs[0].Warnings)
				}
			}},
		{name: "self-intersecting polygons, repair", make: text("bowtie.geojson", bowtie), want: "converted",
			recipe: func(r *recipe.Recipe) { r.GeometryPolicy = recipe.GeometryRepair },
			check: func(t *testing.T, outs []recipe.Output) {
				validOutput(t, outs)
				if outs[0].Stats["repaired"] != 1 {
					t.Errorf("stats %v", outs[0].Stats)
				}
			}},
		{name: "mixed Polygon / MultiPolygon", make: withSample("parks.geojson", sampledata.Writer("parks.geojson")), want: "converted",
			check: func(t *testing.T, outs []recipe.Output) {
				checkFGB(t, outs[0])
				if info := ogrInfo(t, outs[0].Path); !strings.Contains(info, "Geometry: Multi Polygon") {
					t.Errorf("not promoted to multi:\n%s", info)
				}
			}},
		{name: "mixed geometry kinds (point + polygon)", make: text("mixed.geojson", `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"id":1},"geometry":{"type":"Point","coordinates":[1,2]}},
{"type":"Feature","properties":{"id":2},"geometry":{"type":"Polygon","coordinates":[[[2,2],[3,2],[3,3],[2,2]]]}}]}`), want: "converted",
			check: func(t *testing.T, outs []recipe.Output) {
				if n := ogrCount(t, outs[0].Path); n != 2 {
					t.Errorf("ogrinfo counts %d features", n)
				}
			}},
		{name: "empty layer", make: text("empty.geojson", `{"type":"FeatureCollection","features":[]}`), want: code(fault.EmptyDataset)},
		{name: "only null geometries", make: text("nulls.geojson", `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"a":1},"geometry":null}]}`), want: code(fault.UnsupportedFormat)},
		{name: "only null geometries, GeoParquet", make: text("nulls.geojson", `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"a":1},"geometry":null}]}`),
			recipe: func(r *recipe.Recipe) { r.VectorFormat = recipe.FormatGeoParquet }, want: "converted"},
		{name: "non-UTF-8 attributes under a UTF-8 .cpg", make: shp("", func(t *testing.T, stem string) { latin1Shapefile(t, stem, "UTF-8") }),
			want: code(fault.SchemaMismatch)},
		{name: "Latin-1 attributes under a Latin-1 .cpg", make: shp("", func(t *testing.T, stem string) { latin1Shapefile(t, stem, "ISO-8859-1") }),
			want: "converted", check: func(t *testing.T, outs []recipe.Output) {
				info := ogrInfo(t, outs[0].Path)
				if !isUTF8(info) || !strings.Contains(info, "name (String) = Müggelsee") {
					t.Errorf("attribute not recoded to UTF-8:\n%s", info)
				}
			}},
		{name: "feature budget (2,000 points, budget 1,000)", make: text("many.geojson", geojsonPoints(2000)),
			recipe: func(r *recipe.Recipe) { r.MaxFeatures = 1000 }, want: code(fault.BudgetExceeded)},
		{name: "huge coordinate count (250k vertices, byte budget 1 MiB)", make: func(t *testing.T, dir, _ string) string {
			var b strings.Builder
			b.WriteString(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"LineString","coordinates":[`)
			for i := 0; i < 250_000; i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "[%d.1,%d.2]", i%170, i%80)
			}
			b.WriteString("]}}]}")
			return writeFile(t, dir, "long.geojson", b.String())
		}, recipe: func(r *recipe.Recipe) { r.MaxBytes = 1 << 20 }, want: code(fault.BudgetExceeded)},
		{name: "KML with a NetworkLink", make: func(t *testing.T, dir, fifo string) string {
			return writeFile(t, dir, "linked.kml", kmlWith(networkLink(fifo)))
		}, want: code(fault.UnsafeSource)},
		{name: "KML super-overlay (Region + NetworkLink)", make: func(t *testing.T, dir, fifo string) string {
			return writeFile(t, dir, "overlay.kml", kmlWith(`<NetworkLink><Region><LatLonAltBox><north>1</north><south>0</south><east>1</east><west>0</west></LatLonAltBox></Region><Link><href>`+fifo+`</href><viewRefreshMode>onRegion</viewRefreshMode></Link></NetworkLink>`))
		}, want: code(fault.UnsafeSource)},
		{name: "KML with an XML entity", make: text("entity.kml", `<?xml version="1.0"?><!DOCTYPE kml [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>`+strings.TrimPrefix(kmlWith(""), `<?xml version="1.0" encoding="UTF-8"?>`)), want: code(fault.UnsafeSource)},

		{name: "GeoJSON whose CRS name is a file outside the input", make: func(t *testing.T, dir, fifo string) string {
			return writeFile(t, dir, "crsfile.geojson", `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"`+fifo+`"}},`+
				`"features":[{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[1,2]}}]}`)
		}, want: code(fault.UnsafeSource)},
		{name: "GeoJSON whose CRS link is a file outside the input", make: func(t *testing.T, dir, fifo string) string {
			return writeFile(t, dir, "crslink.geojson", `{"type":"FeatureCollection","crs":{"type":"link","properties":{"href":"`+fifo+`","type":"ogcwkt"}},`+
				`"features":[{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[1,2]}}]}`)
		}, want: code(fault.UnsafeSource)},

		// ---- archives ----
		{name: "zipped shapefile", make: zipped("places.shp.zip", shpEntries("")), want: "converted",
			check: func(t *testing.T, outs []recipe.Output) { judgeVector(t, outs, map[string]int{"places": 5}) }},
		{name: "zipped shapefile without .shx", make: zipped("places.zip", shpEntries("", ".shx")), want: code(fault.CorruptSource)},
		{name: "zipped shapefile without .prj", make: zipped("places.zip", shpEntries("", ".prj")), want: code(fault.MissingCRS)},
		{name: "zipped shapefile, non-UTF-8 attributes under a UTF-8 .cpg", make: func(t *testing.T, dir, _ string) string {
			src := t.TempDir()
			parts := shapefileParts(t, src, "places")
			latin1Shapefile(t, filepath.Join(src, "places"), "UTF-8")
			return zipShapefileParts(t, filepath.Join(dir, "places.zip"), "", parts)
		}, want: code(fault.SchemaMismatch)},
		{name: "zip with two shapefiles", make: zipped("two.zip", func(t *testing.T, dir, fifo string) []zipEntry {
			return append(shpEntries("a/")(t, dir, fifo), shpEntries("b/")(t, dir, fifo)...)
		}), want: code(fault.UnsupportedFormat)},
		// Inflating over 64 MiB at over 200:1 is a bomb; smaller entries are
		// held to the byte budget only (an SRTM tile of sea level zips
		// 850:1).
		{name: "zip bomb (80 MiB of zeros)", make: zipped("bomb.zip", func(*testing.T, string, string) []zipEntry {
			return []zipEntry{{name: "zeros.tif", data: make([]byte, 80<<20)}}
		}), want: code(fault.BudgetExceeded)},
		{name: "zip of 16 MiB of zeros over an 8 MiB byte budget", make: zipped("zeros.zip", func(*testing.T, string, string) []zipEntry {
			return []zipEntry{{name: "zeros.tif", data: make([]byte, 16<<20)}}
		}), recipe: func(r *recipe.Recipe) { r.MaxBytes = 8 << 20 }, want: code(fault.BudgetExceeded)},
		{name: "zip bomb (declared 1 TiB)", make: zipped("huge.zip", func(*testing.T, string, string) []zipEntry {
			return []zipEntry{{name: "huge.tif", data: []byte{3, 0}, raw: true, hdr: func(h *zip.FileHeader) {
				h.CompressedSize64, h.UncompressedSize64 = 2, 1<<40
			}}}
		}), want: code(fault.BudgetExceeded)},
		{name: "zip with too many entries", make: zipped("many.zip", func(*testing.T, string, string) []zipEntry {
			es := make([]zipEntry, preflight.MaxZipEntries+1)
			for i := range es {
				es[i] = zipEntry{name: fmt.Sprintf("f%05d.txt", i), hdr: func(h *zip.FileHeader) { h.Method = zip.Store }}
			}
			return es
		}), want: code(fault.BudgetExceeded)},
		{name: "zip path traversal (../)", make: zipped("evil.zip", func(t *testing.T, dir, fifo string) []zipEntry {
			return shpEntries("../../")(t, dir, fifo)
		}), want: code(fault.UnsafeSource)},
		{name: "zip absolute entry name", make: zipped("abs.zip", func(*testing.T, string, string) []zipEntry {
			return []zipEntry{{name: "/etc/passwd", data: []byte("x")}}
		}), want: code(fault.UnsafeSource)},
		{name: "zip with a symbolic link", make: zipped("link.zip", func(t *testing.T, dir, fifo string) []zipEntry {
			return append(shpEntries("")(t, dir, fifo), zipEntry{name: "places.cpg", data: []byte("/etc/passwd"), mode: os.ModeSymlink | 0o777})
		}), want: code(fault.UnsafeSource)},
		{name: "nested archive", make: zipped("outer.zip", func(*testing.T, string, string) []zipEntry {
			return []zipEntry{{name: "inner.zip", data: []byte("PK\x05\x06" + strings.Repeat("\x00", 18))}}
		}), want: code(fault.UnsafeSource)},
		{name: "encrypted zip entry", make: zipped("secret.zip", func(*testing.T, string, string) []zipEntry {
			return []zipEntry{{name: "dem.tif", data: []byte("xxxx"), raw: true, hdr: func(h *zip.FileHeader) {
				h.Flags |= 1
				h.Method = zip.Store
				h.CompressedSize64, h.UncompressedSize64 = 4, 4
			}}}
		}), want: code(fault.UnsupportedFormat)},
		{name: ".zip that is not a zip", make: text("fake.zip", "hello, not an archive"), want: code(fault.CorruptSource)},
		{name: "truncated zip", make: func(t *testing.T, dir, fifo string) string {
			p := zipped("cut.zip", shpEntries(""))(t, dir, fifo)
			b, _ := os.ReadFile(p)
			return writeFile(t, dir, "cut.zip", string(b[:len(b)/2]))
		}, want: code(fault.CorruptSource)},
		{name: "KMZ with a NetworkLink", make: zipped("linked.kmz", func(_ *testing.T, _, fifo string) []zipEntry {
			return []zipEntry{{name: "doc.kml", data: []byte(kmlWith(networkLink(fifo)))}}
		}), want: code(fault.UnsafeSource)},
		{name: "zipped VRT", make: zipped("vrt.zip", func(_ *testing.T, _, fifo string) []zipEntry {
			return []zipEntry{{name: "x.tif", data: []byte(vrtTo(fifo))}}
		}), want: code(fault.UnsafeSource)},
		{name: "zipped netCDF", make: zipped("nc.zip", func(t *testing.T, dir, _ string) []zipEntry {
			nc := rasterFrom(t, filepath.Join(t.TempDir(), "x.nc"), "-of", "netCDF", "-srcwin", "0", "0", "64", "64")
			return []zipEntry{{name: "x.nc", file: nc}}
		}), want: code(fault.UnsupportedFormat)},
	}
}

func TestBadInputCorpus(t *testing.T) {
	cases := corpus()
	if len(cases) < 20 {
		t.Fatalf("%d cases, want at least 20", len(cases))
	}
	var table strings.Builder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "in")
			outside := t.TempDir()
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			fifo := filepath.Join(outside, "secret")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skip("mkfifo:", err)
			}
			src := c.make(t, dir, fifo)
			r := fgbRecipe()
			if c.recipe != nil {
				c.recipe(&r)
			}
			work := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), corpusDeadline)
			defer cancel()
			type result struct {
				outs []recipe.Output
				err  error
			}
			done := make(chan result, 1)
			go func() {
				defer func() {
					if p := recover(); p != nil {
						done <- result{err: fmt.Errorf("panic: %v", p)}
					}
				}()
				outs, err := engine.Convert(ctx, src, work, r)
				done <- result{outs, err}
			}()
			var res result
			select {
			case res = <-done:
			case <-time.After(corpusDeadline + 5*time.Second):
				unblock(fifo, dir)
				t.Fatalf("no answer within %s: the conversion hangs (or blocked reading a FIFO outside the input)", corpusDeadline)
			}
			got := codeOf(res.err)
			fmt.Fprintf(&table, "| %s | %s | %s |\n", c.name, c.want, got)
			if got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
			if res.err != nil {
				if fault.ForBoundary(res.err) == res.err && fault.TierOf(res.err) != fault.TierDataSpecific {
					t.Errorf("%T is not a DataError", res.err)
				}
				if entries, _ := os.ReadDir(work); len(entries) != 0 {
					t.Errorf("work dir not empty after a refusal: %v", entries)
				}
				if strings.TrimSpace(strings.TrimPrefix(res.err.Error(), got+":")) == "" {
					t.Errorf("no message for a person")
				}
				t.Log(res.err)
				return
			}
			if len(res.outs) == 0 {
				t.Fatal("converted without outputs")
			}
			for _, o := range res.outs {
				if filepath.Dir(o.Path) != work {
					t.Errorf("output %s outside the work dir", o.Path)
				}
			}
			if c.check != nil {
				c.check(t, res.outs)
			}
		})
	}
	t.Logf("corpus:\n| case | expected | result |\n|---|---|---|\n%s", table.String())
}

// unblock opens every FIFO in the given places for writing, releasing a
// reader stuck on it, so that a failing test can end.
func unblock(paths ...string) {
	for _, p := range paths {
		fis, _ := filepath.Glob(filepath.Join(p, "*"))
		for _, f := range append(fis, p) {
			if fi, err := os.Lstat(f); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
				if w, err := os.OpenFile(f, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
			}
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func ogrInfo(t *testing.T, p string) string {
	t.Helper()
	out, err := exec.Command("ogrinfo", "-ro", "-al", p).CombinedOutput()
	if err != nil {
		t.Fatalf("ogrinfo %s: %v\n%s", p, err, out)
	}
	return string(out)
}

func isUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// latin1Shapefile rewrites the shapefile's attribute table so that its
// strings are ISO-8859-1 bytes, and declares cpg in its .cpg (UTF-8 is the
// usual mislabelled export). "Müggelsee" becomes "M\xfcggelsee".
func latin1Shapefile(t *testing.T, stem, cpg string) {
	t.Helper()
	dbf, err := os.ReadFile(stem + ".dbf")
	if err != nil {
		t.Fatal(err)
	}
	// Same length in both encodings keeps the DBF's fixed-width fields
	// intact: pad the shorter Latin-1 form with a space.
	utf, lat := []byte("Müggelsee"), []byte("M\xfcggelsee ")
	if !bytes.Contains(dbf, utf) {
		t.Fatal("sample attribute not found in the DBF")
	}
	dbf = bytes.Replace(dbf, utf, lat, 1)
	dbf[29] = 0 // no language driver id: the .cpg decides
	if err := os.WriteFile(stem+".dbf", dbf, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stem+".cpg", []byte(cpg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeTinyTIFF writes a minimal classic TIFF of w x h 8-bit pixels.
func writeTinyTIFF(p string, w, h uint32) error {
	le := binary.LittleEndian
	type entry struct {
		tag, typ uint16
		value    uint32
	}
	entries := []entry{{256, 4, w}, {257, 4, h}, {258, 3, 8}, {259, 3, 1}, {262, 3, 1}, {273, 4, 0}, {277, 3, 1}, {278, 4, max(h, 1)}, {279, 4, 1}}
	off := uint32(8 + 2 + 12*len(entries) + 4)
	entries[5].value = off
	buf := []byte{'I', 'I', 42, 0, 8, 0, 0, 0}
	buf = le.AppendUint16(buf, uint16(len(entries)))
	for _, e := range entries {
		buf = le.AppendUint16(buf, e.tag)
		buf = le.AppendUint16(buf, e.typ)
		buf = le.AppendUint32(buf, 1)
		if e.typ == 3 {
			buf = le.AppendUint16(buf, uint16(e.value))
			buf = le.AppendUint16(buf, 0)
		} else {
			buf = le.AppendUint32(buf, e.value)
		}
	}
	buf = le.AppendUint32(buf, 0)
	buf = append(buf, 0)
	return os.WriteFile(p, buf, 0o644)
}

// writeNaNGeoTransform writes a GeoTIFF with a CRS and a pixel size of NaN.
func writeNaNGeoTransform(p string) error {
	const w, h = 64, 64
	return sampledata.WriteRaster(p, sampledata.Raster{Width: w, Height: h, Type: godal.Byte, EPSG: 32633,
		GeoTransform: [6]float64{500000, math.NaN(), 0, 5100000, 0, -30}, Data: sampledata.DEMPixels(w, h)})
}
