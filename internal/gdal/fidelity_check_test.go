package gdal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// tampering returns a copy of the shared engine whose outputs are altered
// by alter between their conversion and their fidelity check.
func tampering(alter func(t *testing.T, path string), t *testing.T) *Engine {
	e := *engine
	e.beforeCheck = func(p string) { alter(t, p) }
	return &e
}

// lenient lets GDAL warn: updating a COG in place breaks its layout, and
// a nodata set on one band of several is a warning too.
var lenient = godal.ErrLogger(func(ec godal.ErrorCategory, code int, msg string) error {
	if ec <= godal.CE_Warning {
		return nil
	}
	return errors.New(msg)
})

// updateCOG opens a converted COG for update, as a buggy engine or a
// flipped bit on the work disk would leave it.
func updateCOG(t *testing.T, p string, change func(ds *godal.Dataset) error) {
	t.Helper()
	ds, err := godal.Open(p, godal.Update(), lenient)
	if err != nil {
		t.Fatal(err)
	}
	if err := change(ds); err != nil {
		t.Fatal(err)
	}
	if err := ds.Close(lenient); err != nil {
		t.Fatal(err)
	}
}

// The raster check compares the output with the source at full resolution:
// one altered pixel, a changed nodata, a shifted geotransform or another
// CRS is caught, and nothing is returned (the output is removed).
func TestRasterFidelityCatchesAlteredOutput(t *testing.T) {
	edges := writeEdgeTiles(t, filepath.Join(t.TempDir(), "edges.tif"))
	// Three bands: a pixel-interleaved COG, read through the block cache.
	bands := rasterFrom(t, filepath.Join(t.TempDir(), "bands.tif"), "-b", "1", "-b", "1", "-b", "1", "-co", "INTERLEAVE=PIXEL")
	for _, src := range []string{sample(t, "dem_utm33.tif").Path, edges, bands} {
		t.Run(filepath.Base(src), func(t *testing.T) { rasterTampering(t, src) })
	}
}

func rasterTampering(t *testing.T, src string) {
	cases := []struct {
		name   string
		change func(ds *godal.Dataset) error
		want   string // "systemic" or a data error code
	}{
		{"one pixel", func(ds *godal.Dataset) error {
			b := ds.Bands()[0]
			px := make([]float64, 1)
			if err := b.Read(7, 3, px, 1, 1); err != nil {
				return err
			}
			px[0]++
			return b.Write(7, 3, px, 1, 1)
		}, "systemic"},
		{"last pixel", func(ds *godal.Dataset) error { // in the partial edge tile
			st := ds.Structure()
			b := ds.Bands()[0]
			px := make([]float64, 1)
			if err := b.Read(st.SizeX-1, st.SizeY-1, px, 1, 1); err != nil {
				return err
			}
			px[0]--
			return b.Write(st.SizeX-1, st.SizeY-1, px, 1, 1)
		}, "systemic"},
		{"nodata", func(ds *godal.Dataset) error { return ds.SetNoData(-1234, lenient) }, "systemic"},
		{"geotransform", func(ds *godal.Dataset) error {
			gt, err := ds.GeoTransform()
			if err != nil {
				return err
			}
			gt[0] += gt[1] / 2
			return ds.SetGeoTransform(gt)
		}, "systemic"},
		{"crs", func(ds *godal.Dataset) error {
			wkt, err := sampledata.WKT(32634)
			if err != nil {
				return err
			}
			return ds.SetProjection(wkt)
		}, string(fault.InvalidCRS)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var altered string
			e := tampering(func(t *testing.T, p string) { altered = p; updateCOG(t, p, c.change) }, t)
			_, err := e.Convert(context.Background(), src, t.TempDir(), fgbRecipe())
			switch {
			case c.want == "systemic" && !isSystemic(err):
				t.Fatalf("got %T %v, want a SystemicError", err, err)
			case c.want != "systemic" && codeOf(err) != c.want:
				t.Fatalf("got %T %v, want DataError %s", err, err, c.want)
			}
			if !strings.Contains(err.Error(), "fidelity") && !strings.Contains(err.Error(), "CRS") {
				t.Errorf("error does not say what differs: %v", err)
			}
			if _, serr := os.Stat(altered); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("the altered output %s is left behind (%v)", altered, serr)
			}
		})
	}
}

// An unaltered output carries its record: what was compared and each
// band's CRC-32C, which anyone can recompute from the output file.
func TestRasterFidelityRecord(t *testing.T) {
	for _, name := range []string{"dem_utm33.tif", "landcover_4326.tif", "temperature_f32.tif"} {
		t.Run(name, func(t *testing.T) {
			outs := convertOK(t, sample(t, name).Path, fgbRecipe())
			f := outs[0].Fidelity
			if f == nil {
				t.Fatal("no fidelity record")
			}
			if strings.Join(f.Checks, ",") != "pixels,nodata,geotransform,crs,mask_flags,colour_table,scale_offset,unit,description,colour_interpretation,metadata" {
				t.Errorf("checks %v", f.Checks)
			}
			ds, err := godal.Open(outs[0].Path)
			if err != nil {
				t.Fatal(err)
			}
			defer ds.Close()
			st := ds.Structure()
			if f.Bands != st.NBands || f.Pixels != int64(st.SizeX)*int64(st.SizeY) || len(f.BandChecksums) != st.NBands {
				t.Fatalf("record %+v for %d x %d x %d", f, st.SizeX, st.SizeY, st.NBands)
			}
			for i, b := range ds.Bands() {
				if got := bandCRC(t, b, st.SizeX, st.SizeY); got != f.BandChecksums[i] {
					t.Errorf("band %d: crc32c of the output %s, record %s", i+1, got, f.BandChecksums[i])
				}
			}
		})
	}
}

// bandCRC is the CRC-32C of a band's pixels, read with godal (not the
// engine's reader), row-major, little-endian.
func bandCRC(t *testing.T, b godal.Band, w, h int) string {
	t.Helper()
	var raw []byte
	switch b.Structure().DataType {
	case godal.Byte:
		raw = make([]byte, w*h)
		if err := b.Read(0, 0, raw, w, h); err != nil {
			t.Fatal(err)
		}
	case godal.Int16:
		px := make([]int16, w*h)
		if err := b.Read(0, 0, px, w, h); err != nil {
			t.Fatal(err)
		}
		for _, v := range px {
			raw = binary.LittleEndian.AppendUint16(raw, uint16(v))
		}
	case godal.Float32:
		px := make([]float32, w*h)
		if err := b.Read(0, 0, px, w, h); err != nil {
			t.Fatal(err)
		}
		for _, v := range px {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
	default:
		t.Fatalf("type %s not handled by the test", b.Structure().DataType)
	}
	return fmt.Sprintf("%08x", crc32.Checksum(raw, crc32.MakeTable(crc32.Castagnoli)))
}

// fidelityLayer is the vector source of the vector checks: 3 features, one
// without geometry, and fields of 4 types.
const fidelityLayer = `{"type":"FeatureCollection","name":"parcels","features":[
{"type":"Feature","properties":{"id":1,"name":"a","area":1.5,"day":"2024-01-02"},"geometry":{"type":"Point","coordinates":[10,50]}},
{"type":"Feature","properties":{"id":2,"name":"b","area":2.5,"day":"2024-01-03"},"geometry":null},
{"type":"Feature","properties":{"id":3,"name":"c","area":3.5,"day":"2024-01-04"},"geometry":{"type":"Point","coordinates":[11,51]}}]}`

// The vector check reads each output back on its own and compares it with
// the source layer. Each case swaps the output for the (valid) conversion
// of a slightly different source, as an engine that dropped a feature, a
// null geometry, a field or a type, or mixed up layers would leave it.
func TestVectorFidelityCatchesAlteredOutput(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "parcels.geojson", fidelityLayer)
	variant := func(name, text string) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return writeFile(t, d, "parcels.geojson", text)
	}
	lines := strings.Split(fidelityLayer, "\n")
	cases := []struct {
		name    string
		src     string
		formats []string
	}{
		{"a feature dropped", variant("dropped", strings.Join([]string{lines[0], lines[1], strings.TrimSuffix(lines[3], "]}") + "]}"}, "\n")),
			[]string{recipe.FormatGeoParquet, recipe.FormatFlatGeobuf}},
		{"a null geometry filled", variant("filled", strings.Replace(fidelityLayer, `"geometry":null`, `"geometry":{"type":"Point","coordinates":[0,0]}`, 1)),
			[]string{recipe.FormatGeoParquet}},
		{"a field replaced", variant("nofield", strings.ReplaceAll(fidelityLayer, `,"area":`, `,"x":`)),
			[]string{recipe.FormatGeoParquet, recipe.FormatFlatGeobuf}},
		{"a type changed", variant("retyped", strings.NewReplacer(`"id":1`, `"id":"1"`, `"id":2`, `"id":"2"`, `"id":3`, `"id":"3"`).Replace(fidelityLayer)),
			[]string{recipe.FormatGeoParquet, recipe.FormatFlatGeobuf}},
		{"a value changed", variant("revalued", strings.Replace(fidelityLayer, `"area":2.5`, `"area":2.50001`, 1)),
			[]string{recipe.FormatGeoParquet, recipe.FormatFlatGeobuf}},
		{"a date changed", variant("redated", strings.Replace(fidelityLayer, `"2024-01-04"`, `"2024-01-05"`, 1)),
			[]string{recipe.FormatGeoParquet, recipe.FormatFlatGeobuf}},
		{"a coordinate moved", variant("moved", strings.Replace(fidelityLayer, `[11,51]`, `[11,51.000000001]`, 1)),
			[]string{recipe.FormatGeoParquet, recipe.FormatFlatGeobuf}},
		{"another layer", writeFile(t, dir, "roads.geojson", strings.Replace(fidelityLayer, `"parcels"`, `"roads"`, 1)),
			[]string{recipe.FormatGeoParquet, recipe.FormatFlatGeobuf}},
	}
	for _, c := range cases {
		for _, format := range c.formats {
			t.Run(c.name+"/"+format, func(t *testing.T) {
				r := fgbRecipe()
				r.VectorFormat = format
				source, altered := src, c.src
				if format == recipe.FormatFlatGeobuf {
					// FlatGeobuf refuses null geometries up front: a source
					// without one, and for "dropped" one feature left.
					fill := func(p string) string {
						b, err := os.ReadFile(p)
						if err != nil {
							t.Fatal(err)
						}
						text := strings.Replace(string(b), `"geometry":null`, `"geometry":{"type":"Point","coordinates":[0,0]}`, 1)
						return writeFile(t, t.TempDir(), filepath.Base(p), text)
					}
					source, altered = fill(src), fill(c.src)
					if strings.Contains(c.name, "dropped") {
						altered = writeFile(t, t.TempDir(), "parcels.geojson", lines[0]+"\n"+lines[3])
					}
				}
				// The source is converted in one read (copyFlatGeobuf,
				// writeGeoParquet), its digest taken as it is written.
				if _, l := openLayer(t, source); !declaredOK(l) {
					t.Fatal("the source is not one the one-read path takes")
				}
				other := convertOK(t, altered, r)
				e := tampering(func(t *testing.T, p string) { copyFile(t, other[0].Path, p) }, t)
				outs, err := e.Convert(context.Background(), source, t.TempDir(), r)
				if !isSystemic(err) || !strings.Contains(err.Error(), "fidelity") {
					t.Fatalf("got %v (%T), want the fidelity check's SystemicError", err, err)
				}
				if len(outs) != 0 {
					t.Errorf("outputs returned: %v", outs)
				}
			})
		}
	}
	t.Run("unaltered", func(t *testing.T) {
		outs := convertOK(t, src, gpRecipe())
		f := outs[0].Fidelity
		if f == nil || f.Layer != "parcels" || f.Features != 3 || f.NullGeometries != 1 || f.Fields != 4 ||
			strings.Join(f.Checks, ",") != "features,null_geometries,fields,layer_name,geometries,attribute values" || len(f.Digest) != 64 {
			t.Errorf("record %+v", f)
		}
	})
}

// FlatGeobuf output refuses, before writing, fields GDAL 3.6's writer
// cannot hold: it writes a Time as an empty DateTime and fails on lists.
func TestFlatGeobufRefusesFieldsItCannotHold(t *testing.T) {
	for name, props := range map[string]string{
		"time": `{"t":"12:34:56"}`,
		"list": `{"l":[1,2,3]}`,
	} {
		t.Run(name, func(t *testing.T) {
			src := writeFile(t, t.TempDir(), "x.geojson", `{"type":"FeatureCollection","features":[{"type":"Feature","properties":`+props+`,"geometry":{"type":"Point","coordinates":[1,2]}}]}`)
			work := t.TempDir()
			_, err := engine.Convert(context.Background(), src, work, fgbRecipe())
			if codeOf(err) != string(fault.UnsupportedFormat) {
				t.Fatalf("got %v, want UnsupportedFormat", err)
			}
			if outs := convertOK(t, src, gpRecipe()); outs[0].Fidelity == nil || outs[0].Fidelity.Fields != 1 {
				t.Errorf("GeoParquet: %+v", outs[0].Fidelity)
			}
		})
	}
}

// The size of writeEdgeTiles' raster.
const edgeTilesW, edgeTilesH = 1100, 530

// writeEdgeTiles writes an edgeTilesW x edgeTilesH Float32 GeoTIFF
// (EPSG:32633) at p: a COG of it has partial tiles at the right and
// bottom edges.
func writeEdgeTiles(t *testing.T, p string) string {
	t.Helper()
	const w, h = edgeTilesW, edgeTilesH
	px := make([]float32, w*h)
	for i := range px {
		px[i] = float32(i%977) / 7
	}
	if err := sampledata.WriteRaster(p, sampledata.Raster{Width: w, Height: h, Type: godal.Float32, EPSG: 32633,
		GeoTransform: [6]float64{500000, 10, 0, 5200000, 0, -10}, Data: px}); err != nil {
		t.Fatal(err)
	}
	return p
}
