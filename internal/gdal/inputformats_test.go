package gdal

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// The input formats added after the first set (GPX, GML, CSV with
// geometry, GeoJSONSeq, TopoJSON, FlatGeobuf, SRTM .hgt, zipped too), the
// recipe's assign_crs, and refusals that say what GDAL says. Sources are
// made by GDAL's own tools (gdal_translate, ogr2ogr) or written by hand
// (TopoJSON); outputs are read back by GDAL's Python bindings.

// run runs a GDAL command line tool and fails the test on an error.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// pyGDAL runs a Python snippet with GDAL's bindings; args are sys.argv[1:].
func pyGDAL(t *testing.T, script string, args ...string) string {
	t.Helper()
	out, err := exec.Command("/usr/bin/python3", append([]string{"-c", script}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// outsideFeatures is every feature of the single layer of an output as
// GDAL reads it: ISO WKT of the geometry, then the fields sorted by name.
func outsideFeatures(t *testing.T, p string) []string {
	t.Helper()
	out := pyGDAL(t, `
import sys
from osgeo import ogr
ds = ogr.Open(sys.argv[1])
l = ds.GetLayer(0)
for f in l:
    g = f.GetGeometryRef()
    w = g.ExportToIsoWkt() if g is not None else "NULL"
    fs = sorted((l.GetLayerDefn().GetFieldDefn(i).GetName(), f.GetFieldAsString(i)) for i in range(f.GetFieldCount()))
    print(w + "|" + ";".join(k + "=" + v for k, v in fs))
`, p)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// outsideEPSG is the EPSG code GDAL finds for the CRS of a raster or of
// a vector's first layer.
func outsideEPSG(t *testing.T, p string) string {
	t.Helper()
	return pyGDAL(t, `
import sys
from osgeo import gdal, osr
gdal.UseExceptions()
ds = gdal.OpenEx(sys.argv[1])
sr = ds.GetSpatialRef() if ds.RasterCount else ds.GetLayer(0).GetSpatialRef()
if sr is None:
    print("none")
else:
    sr.AutoIdentifyEPSG()
    print(sr.GetAuthorityCode(None))
`, p)
}

// checksum is GDAL's checksum of band 1.
func checksum(t *testing.T, p string) string {
	t.Helper()
	return pyGDAL(t, `
import sys
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.Open(sys.argv[1])
print(ds.GetRasterBand(1).Checksum())
`, p)
}

// srtmTile writes N45E006.hgt with gdal_translate -of SRTMHGT: a
// 1201 x 1201 Int16 tile of sea level with one hill, which compresses
// like a real coastal tile (hundreds to one).
func srtmTile(t *testing.T, dir string) string {
	t.Helper()
	tif := filepath.Join(t.TempDir(), "tile.tif")
	pyGDAL(t, `
import sys
from osgeo import gdal, osr
import array
gdal.UseExceptions()
n = 1201
ds = gdal.GetDriverByName("GTiff").Create(sys.argv[1], n, n, 1, gdal.GDT_Int16)
ds.SetGeoTransform([6 - 0.5/1200, 1/1200, 0, 46 + 0.5/1200, 0, -1/1200])
sr = osr.SpatialReference(); sr.ImportFromEPSG(4326)
ds.SetProjection(sr.ExportToWkt())
b = ds.GetRasterBand(1)
row = array.array("h", [0] * n)
for y in range(n):
    for x in range(500, 540):
        row[x] = 800 + (y % 7) if 300 <= y < 340 else 0
    b.WriteRaster(0, y, n, 1, row.tobytes())
ds = None
`, tif)
	hgt := filepath.Join(dir, "N45E006.hgt")
	run(t, "gdal_translate", "-q", "-of", "SRTMHGT", tif, hgt)
	return hgt
}

func TestSRTMTiles(t *testing.T) {
	dir := t.TempDir()
	hgt := srtmTile(t, dir)
	zipped := writeZip(t, filepath.Join(dir, "N45E006.hgt.zip"), []zipEntry{{name: "N45E006.hgt", file: hgt}})
	zr, err := zip.OpenReader(zipped)
	if err != nil {
		t.Fatal(err)
	}
	e := zr.File[0]
	zr.Close()
	ratio := float64(e.UncompressedSize64) / float64(e.CompressedSize64)
	if ratio < 200 {
		t.Fatalf("the tile inflates only %.0f:1; the case is a tile compressed past the bomb ratio", ratio)
	}
	t.Logf("%d bytes inflate into %d (%.0f:1)", e.CompressedSize64, e.UncompressedSize64, ratio)
	for _, src := range []string{hgt, zipped} {
		t.Run(filepath.Base(src), func(t *testing.T) {
			outs := convertOK(t, src, fgbRecipe())
			if len(outs) != 1 || filepath.Base(outs[0].Path) != "N45E006.tif" {
				t.Fatalf("outputs %v", outs)
			}
			judgeCOG(t, outs[0].Path)
			if got, want := checksum(t, outs[0].Path), checksum(t, hgt); got != want {
				t.Errorf("checksum %s, source %s", got, want)
			}
			if got := outsideEPSG(t, outs[0].Path); got != "4326" {
				t.Errorf("EPSG %s", got)
			}
		})
	}
}

// TestNewVectorInputs converts each new vector format with the engine and
// compares, through GDAL, the output's features with the source's.
func TestNewVectorInputs(t *testing.T) {
	const points = `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"name":"Alpha"},"geometry":{"type":"Point","coordinates":[13.4,52.5]}},
{"type":"Feature","properties":{"name":"Beta"},"geometry":{"type":"Point","coordinates":[2.35,48.86]}},
{"type":"Feature","properties":{"name":"Gamma"},"geometry":{"type":"Point","coordinates":[-0.12,51.5]}}]}`
	want := []string{"POINT (13.4 52.5)|name=Alpha", "POINT (2.35 48.86)|name=Beta", "POINT (-0.12 51.5)|name=Gamma"}
	geojson := func(t *testing.T, dir string) string { return writeFile(t, dir, "in.geojson", points) }
	ogr := func(name string, args ...string) func(t *testing.T, dir string) string {
		return func(t *testing.T, dir string) string {
			dst := filepath.Join(dir, name)
			run(t, "ogr2ogr", append(append([]string{}, args...), dst, geojson(t, t.TempDir()))...)
			return dst
		}
	}
	cases := []struct {
		name   string
		make   func(t *testing.T, dir string) string
		recipe func(r *recipe.Recipe)
		want   []string
		epsg   string
		// nameOnly compares geometries and the name field only: GPX,
		// GML and TopoJSON add fields of their own (ele, gml_id, id).
		nameOnly bool
	}{
		{name: "GeoJSONSeq .geojsonl", make: ogr("pts.geojsonl", "-f", "GeoJSONSeq"), want: want, epsg: "4326"},
		{name: "GeoJSONSeq .geojsons (RS-separated)", make: ogr("pts.geojsons", "-f", "GeoJSONSeq", "-lco", "RS=YES"), want: want, epsg: "4326"},
		{name: "FlatGeobuf", make: ogr("pts.fgb", "-f", "FlatGeobuf", "-nln", "pts"), want: want, epsg: "4326"},
		{name: "GML with its .xsd", make: ogr("pts.gml", "-f", "GML", "-nln", "pts"), want: want, epsg: "4326",
			nameOnly: true},
		{name: "GPX waypoints", make: ogr("pts.gpx", "-f", "GPX", "-nln", "waypoints"), want: want, epsg: "4326",
			nameOnly: true},
		{name: "CSV with a WKT column", make: func(t *testing.T, dir string) string {
			return writeFile(t, dir, "pts.csv", "id,WKT,name\n1,POINT (13.4 52.5),Alpha\n2,POINT (2.35 48.86),Beta\n3,POINT (-0.12 51.5),Gamma\n")
		}, recipe: func(r *recipe.Recipe) {
			r.CSVGeometry, r.CSVWKTColumn, r.AssignCRS = recipe.CSVGeometryWKT, "WKT", "EPSG:4326"
		}, want: []string{"POINT (13.4 52.5)|id=1;name=Alpha", "POINT (2.35 48.86)|id=2;name=Beta", "POINT (-0.12 51.5)|id=3;name=Gamma"}, epsg: "4326"},
		{name: "CSV with X/Y columns in a projected CRS", make: func(t *testing.T, dir string) string {
			return writeFile(t, dir, "pts.csv", "code,east,north\n007,500000,5800000\n010,400000.5,5700000.25\n")
		}, recipe: func(r *recipe.Recipe) {
			r.CSVGeometry, r.CSVXColumn, r.CSVYColumn, r.AssignCRS = recipe.CSVGeometryXY, "east", "north", "EPSG:32633"
		}, want: []string{"POINT (500000 5800000)|code=007", "POINT (400000.5 5700000.25)|code=010"}, epsg: "32633"},
		{name: "TopoJSON", make: func(t *testing.T, dir string) string {
			return writeFile(t, dir, "pts.topojson", `{"type":"Topology","objects":{"pts":{"type":"GeometryCollection","geometries":[
{"type":"Point","coordinates":[13.4,52.5],"properties":{"name":"Alpha"}},
{"type":"Point","coordinates":[2.35,48.86],"properties":{"name":"Beta"}},
{"type":"Point","coordinates":[-0.12,51.5],"properties":{"name":"Gamma"}}]}},"arcs":[]}`)
		}, recipe: func(r *recipe.Recipe) { r.AssignCRS = "EPSG:4326" }, want: want, epsg: "4326",
			nameOnly: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := c.make(t, dir)
			r := fgbRecipe()
			if c.recipe != nil {
				c.recipe(&r)
			}
			outs := convertOK(t, src, r)
			var got []string
			for _, o := range outs {
				checkFGB(t, o)
				got = append(got, outsideFeatures(t, o.Path)...)
				if e := outsideEPSG(t, o.Path); e != c.epsg {
					t.Errorf("%s: EPSG %s, want %s", o.Layer, e, c.epsg)
				}
			}
			// FlatGeobuf's spatial index orders features along a Hilbert
			// curve: compare the sets.
			slices.Sort(got)
			c.want = slices.Sorted(slices.Values(c.want))
			if c.nameOnly {
				for i, g := range got {
					geom, fields, _ := strings.Cut(g, "|")
					name := ""
					for _, kv := range strings.Split(fields, ";") {
						if strings.HasPrefix(kv, "name=") {
							name = kv
						}
					}
					got[i] = geom + "|" + name
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("output features:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			// GDAL wrote nothing beside the source (a GML .gfs).
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".gfs") {
					t.Errorf("%s written beside the source", e.Name())
				}
			}
		})
	}
}

// A CSV with no recipe rule for its geometry is refused with the rule to
// write.
func TestCSVNeedsARecipeRule(t *testing.T) {
	src := writeFile(t, t.TempDir(), "pts.csv", "id,WKT\n1,POINT (1 2)\n")
	_, err := engine.Convert(context.Background(), src, t.TempDir(), fgbRecipe())
	if fault.CodeOf(err) != fault.UnsupportedFormat || !strings.Contains(err.Error(), "csv: {geometry: wkt") {
		t.Fatalf("got %v", err)
	}
}

// A GML whose schemaLocation and xlinks name a server and a FIFO outside
// the input converts without touching either: no connection reaches the
// listener, no read blocks on the FIFO.
func TestGMLReferencesAreNotFollowed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	outside := t.TempDir()
	fifo := filepath.Join(outside, "schema.xsd")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	url := "http://" + ln.Addr().String()
	for name, schema := range map[string]string{"remote": url + "/schema.xsd", "fifo": fifo} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			src := writeFile(t, dir, "linked.gml", fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<ogr:FeatureCollection xmlns:ogr="http://ogr.maptools.org/" xmlns:gml="http://www.opengis.net/gml"
  xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://ogr.maptools.org/ %s">
  <gml:featureMember><ogr:pts gml:id="p1"><ogr:name>Alpha</ogr:name>
    <ogr:geometryProperty><gml:Point srsName="EPSG:4326"><gml:coordinates>13.4,52.5</gml:coordinates></gml:Point></ogr:geometryProperty>
  </ogr:pts></gml:featureMember>
  <gml:featureMember><ogr:pts gml:id="p2"><ogr:name>Beta</ogr:name><ogr:ref xlink:href="%s/more.gml#p9"/>
    <ogr:geometryProperty><gml:Point srsName="EPSG:4326"><gml:coordinates>2.35,48.86</gml:coordinates></gml:Point></ogr:geometryProperty>
  </ogr:pts></gml:featureMember>
  <gml:featureMember><ogr:pts gml:id="p3"><ogr:name>Gamma</ogr:name><ogr:ref xlink:href="%s#p9"/>
    <ogr:geometryProperty><gml:Point srsName="EPSG:4326"><gml:coordinates>-0.12,51.5</gml:coordinates></gml:Point></ogr:geometryProperty>
  </ogr:pts></gml:featureMember>
</ogr:FeatureCollection>`, schema, url, fifo))
			ctx, cancel := context.WithTimeout(context.Background(), corpusDeadline)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				outs, err := engine.Convert(ctx, src, t.TempDir(), fgbRecipe())
				if err == nil && len(outs) != 1 {
					err = fmt.Errorf("%d outputs", len(outs))
				}
				if err == nil {
					if got := outsideFeatures(t, outs[0].Path); len(got) != 3 {
						err = fmt.Errorf("features %q", got)
					}
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(corpusDeadline + 5*time.Second):
				unblock(fifo)
				t.Fatal("the conversion hangs: GDAL followed a reference of the GML")
			}
		})
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections to the server the GML names", n)
	}
}

// TestAssignCRS: assign_crs gives a CRS to sources without one, is
// recorded in the output, leaves a source with the same CRS as it is and
// refuses one with another.
func TestAssignCRS(t *testing.T) {
	dir := t.TempDir()
	noCRS := rasterFrom(t, filepath.Join(dir, "nocrs.tif"), "-srcwin", "0", "0", "256", "256", "-a_srs", "", "-co", "PROFILE=BASELINE",
		"-a_ullr", "500000", "5800000", "507680", "5792320")
	if got := outsideEPSG(t, noCRS); got != "none" {
		t.Fatalf("the source has a CRS (%s)", got)
	}
	withCRS := rasterFrom(t, filepath.Join(dir, "utm.tif"), "-srcwin", "0", "0", "256", "256")
	assign := func(code string) recipe.Recipe {
		r := fgbRecipe()
		r.AssignCRS = code
		return r
	}
	t.Run("raster without a CRS is refused without assign_crs", func(t *testing.T) {
		_, err := engine.Convert(context.Background(), noCRS, t.TempDir(), fgbRecipe())
		if fault.CodeOf(err) != fault.MissingCRS {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("raster without a CRS, assigned", func(t *testing.T) {
		outs := convertOK(t, noCRS, assign("EPSG:32633"))
		judgeCOG(t, outs[0].Path)
		if got := outsideEPSG(t, outs[0].Path); got != "32633" {
			t.Errorf("EPSG %s", got)
		}
		if checksum(t, outs[0].Path) != checksum(t, noCRS) {
			t.Error("pixels differ")
		}
		l, err := ReadCOGLineage(outs[0].Path)
		if err != nil || l.AssignedCRS != "EPSG:32633" {
			t.Errorf("lineage %+v, %v", l, err)
		}
		if !strings.Contains(strings.Join(outs[0].Warnings, "\n"), "assigned EPSG:32633") {
			t.Errorf("warnings %q", outs[0].Warnings)
		}
		if _, err := os.Stat(noCRS + ".aux.xml"); err == nil {
			t.Error("an .aux.xml was written beside the source")
		}
	})
	t.Run("raster with the same CRS", func(t *testing.T) {
		outs := convertOK(t, withCRS, assign("EPSG:32633"))
		if got := outsideEPSG(t, outs[0].Path); got != "32633" {
			t.Errorf("EPSG %s", got)
		}
	})
	t.Run("raster with another CRS is refused", func(t *testing.T) {
		_, err := engine.Convert(context.Background(), withCRS, t.TempDir(), assign("EPSG:4326"))
		if fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), "EPSG:4326") || !strings.Contains(err.Error(), "UTM zone 33N") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("zipped shapefile without .prj, assigned", func(t *testing.T) {
		d := t.TempDir()
		parts := shapefileParts(t, d, "places")
		src := zipShapefileParts(t, filepath.Join(d, "places.zip"), "", parts, ".prj")
		if _, err := engine.Convert(context.Background(), src, t.TempDir(), fgbRecipe()); fault.CodeOf(err) != fault.MissingCRS {
			t.Fatalf("without assign_crs: %v", err)
		}
		r := assign("EPSG:4326")
		r = r.WithDefaults()
		r.VectorFormat = recipe.FormatGeoParquet
		outs := convertOK(t, src, r)
		validateGeoParquet(t, outs[0].Path)
		if g := hyparquet(t, outs[0].Path); g.Rows != 5 {
			t.Errorf("rows %d", g.Rows)
		}
		// The lineage JSON sits in the footer's key-value metadata, which
		// Parquet stores uncompressed.
		b, err := os.ReadFile(outs[0].Path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`"assigned_crs":"EPSG:4326"`)) {
			t.Error("the GeoParquet lineage does not name the assigned CRS")
		}
	})
}

// TestRefusalsSayWhatGDALSays: a file GDAL identifies with a driver the
// pipeline does not take, one that needs a driver or version this GDAL
// lacks, and a damaged one are told apart.
func TestRefusalsSayWhatGDALSays(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, dir string) string
		code fault.Code
		says string
	}{
		{name: "identified, not accepted (PCIDSK)", make: func(t *testing.T, dir string) string {
			return rasterFrom(t, filepath.Join(dir, "dem.pix"), "-of", "PCIDSK", "-srcwin", "0", "0", "64", "64")
		}, code: fault.UnsupportedFormat, says: "identifies this file as PCIDSK"},
		{name: "Parquet without a Parquet driver", make: func(t *testing.T, dir string) string {
			if hasDriver("Parquet") {
				t.Skip("this GDAL has the Parquet driver")
			}
			return writeFile(t, dir, "table.parquet", "PAR1\x15\x04\x15\x10\x15\x14PAR1")
		}, code: fault.DriverUnavailable, says: "Parquet driver"},
		{name: "ECW without an ECW driver", make: func(t *testing.T, dir string) string {
			if hasDriver("ECW") {
				t.Skip("this GDAL has the ECW driver")
			}
			return writeFile(t, dir, "ortho.ecw", "\x01\x00\x00\x00not an ecw header we know")
		}, code: fault.DriverUnavailable, says: "ECW driver"},
		{name: "MrSID without a MrSID driver", make: func(t *testing.T, dir string) string {
			if hasDriver("MrSID") {
				t.Skip("this GDAL has the MrSID driver")
			}
			return writeFile(t, dir, "ortho.sid", "msid\x01\x00\x00\x00not a MrSID body we know")
		}, code: fault.DriverUnavailable, says: "MrSID driver"},
		{name: "FlatGeobuf of another major version", make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "pts.fgb")
			run(t, "ogr2ogr", "-f", "FlatGeobuf", p, writeFile(t, t.TempDir(), "in.geojson",
				`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[1,2]}}]}`))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[3] = 4
			return writeFile(t, dir, "pts.fgb", string(b))
		}, code: fault.DriverUnavailable, says: "version 4"},
		{name: "truncated tiled GeoTIFF (the sample)", make: func(t *testing.T, dir string) string {
			return sample(t, "truncated.tif").Path
		}, code: fault.CorruptSource, says: "the file is truncated or damaged: tile 0 is cut short"},
		{name: "truncated GeoTIFF", make: func(t *testing.T, dir string) string {
			p := rasterFrom(t, filepath.Join(t.TempDir(), "dem.tif"), "-srcwin", "0", "0", "256", "256")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			return writeFile(t, dir, "dem.tif", string(b[:len(b)*2/3]))
		}, code: fault.CorruptSource, says: "truncated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := c.make(t, t.TempDir())
			_, err := engine.Convert(context.Background(), src, t.TempDir(), fgbRecipe())
			if fault.CodeOf(err) != c.code || !strings.Contains(fmt.Sprint(err), c.says) {
				t.Fatalf("got %v, want %s saying %q", err, c.code, c.says)
			}
			t.Log(err)
		})
	}
}
