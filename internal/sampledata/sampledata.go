// Package sampledata writes small demo inputs, good and deliberately bad,
// for `geomigrate sample-data`, `make run` and tests. It writes them with
// GDAL (godal) but holds no cgo of its own, and no Lambda function links it
// (internal/architecture checks both).
package sampledata

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Sample is one generated demo input.
type Sample struct {
	Path string      `json:"path"`
	Kind recipe.Kind `json:"kind"`
	Bad  bool        `json:"bad"`
	// Expect is, for a bad sample, the fault.Code its conversion must give;
	// for a good one, "converted".
	Expect string `json:"expect"`
	Note   string `json:"note"`
}

// ExpectConverted is Sample.Expect for good samples.
const ExpectConverted = "converted"

// fixed date for formats that store one (DBF header, GeoPackage contents).
const sampleDate = "2024-01-01T00:00:00Z"

var registerOnce sync.Once

// catalogue is every sample, in the order Write lists them: good ones
// first, then the bad ones with the fault code their conversion must give.
var catalogue = []struct {
	name, note string
	kind       recipe.Kind
	expect     string // ExpectConverted or a fault.Code
	write      func(path string) error
}{
	{"dem_utm33.tif", "Byte elevation gradient, nodata 0, EPSG:32633, 1024x1024 (overviews)", recipe.Raster, ExpectConverted, writeDEM},
	{"landcover_4326.tif", "paletted land cover classes, EPSG:4326 (nearest overviews)", recipe.Raster, ExpectConverted, writeLandCover},
	{"temperature_f32.tif", "Float32 field with nodata -9999, EPSG:3035 (float predictor)", recipe.Raster, ExpectConverted, writeFloat},
	{"elevation.asc", "Arc/Info ASCII grid with .prj, EPSG:32633", recipe.Raster, ExpectConverted, writeASCIIGrid},
	{"parks.geojson", "GeoJSON polygons with attributes", recipe.Vector, ExpectConverted, writeGeoJSON},
	{"places.shp", "Shapefile points (.shp .shx .dbf .prj)", recipe.Vector, ExpectConverted, writeShapefile},
	{"city.gpkg", "GeoPackage with two layers (parks, places)", recipe.Vector, ExpectConverted, writeGPKG},

	{"truncated.tif", "GeoTIFF cut in half", recipe.Raster, string(fault.CorruptSource), writeTruncated},
	{"no_crs.tif", "GeoTIFF without a coordinate reference system", recipe.Raster, string(fault.MissingCRS), writeNoCRS},
	{"vrt_passwd.tif", "VRT disguised as .tif, pointing at /etc/passwd", recipe.Raster, string(fault.UnsafeSource), writeVRTPasswd},
	{"not_a_raster.tif", "CSV text renamed .tif", recipe.Raster, string(fault.UnsupportedFormat), writeCSVAsTIFF},
	{"empty.tif", "zero-byte file", recipe.Raster, string(fault.CorruptSource), func(p string) error { return os.WriteFile(p, nil, 0o644) }},
	{"pixel_bomb.tif", "1 KB TIFF declaring 1,000,000 x 1,000,000 pixels", recipe.Raster, string(fault.BudgetExceeded), writePixelBomb},
}

// Write writes small demo inputs into dir, deterministically (no
// randomness, no clock): good rasters and vectors, and bad inputs that must
// be refused with a given fault code. Total size is well under 2 MB. The
// returned list is in a fixed order; sidecar files (.prj, .shx, .dbf …)
// are written but not listed.
func Write(dir string) ([]Sample, error) {
	registerOnce.Do(godal.RegisterAll)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := make([]Sample, 0, len(catalogue))
	for _, c := range catalogue {
		p := filepath.Join(dir, c.name)
		if err := c.write(p); err != nil {
			return nil, fmt.Errorf("sample %s: %w", c.name, err)
		}
		out = append(out, Sample{Path: p, Kind: c.kind, Bad: c.expect != ExpectConverted, Expect: c.expect, Note: c.note})
	}
	return out, nil
}

// Writer is the function that writes the sample named name (as Write
// names it) at any path, for tests that need one sample under another
// name; for an unknown name it returns a writer that fails.
func Writer(name string) func(path string) error {
	for _, c := range catalogue {
		if c.name == name {
			return func(p string) error {
				registerOnce.Do(godal.RegisterAll)
				return c.write(p)
			}
		}
	}
	return func(string) error { return fmt.Errorf("sampledata: no sample named %q", name) }
}

// WKT is the WKT of the CRS EPSG:epsg.
func WKT(epsg int) (string, error) {
	sr, err := godal.NewSpatialRefFromEPSG(epsg)
	if err != nil {
		return "", err
	}
	defer sr.Close()
	return sr.WKT()
}

// Raster is a one-band GeoTIFF to write (WriteRaster).
type Raster struct {
	Width, Height int
	Type          godal.DataType
	EPSG          int // 0: no CRS
	GeoTransform  [6]float64
	NoData        *float64
	Description   string
	Colors        *godal.ColorTable // with Palette colour interpretation
	Data          any               // Width x Height pixels of Type, row-major
	Creation      []string          // GTiff creation options besides TILED=YES, COMPRESS=DEFLATE
}

// WriteRaster writes s as a tiled, DEFLATE-compressed GeoTIFF at p
// (no .aux.xml beside it).
func WriteRaster(p string, s Raster) error {
	os.Remove(p)
	co := append([]string{"TILED=YES", "COMPRESS=DEFLATE"}, s.Creation...)
	ds, err := godal.Create(godal.GTiff, p, 1, s.Type, s.Width, s.Height, godal.CreationOption(co...))
	if err != nil {
		return err
	}
	err = func() error {
		if err := ds.SetGeoTransform(s.GeoTransform); err != nil {
			return err
		}
		if s.EPSG != 0 {
			wkt, err := WKT(s.EPSG)
			if err != nil {
				return err
			}
			if err := ds.SetProjection(wkt); err != nil {
				return err
			}
		}
		b := ds.Bands()[0]
		if s.NoData != nil {
			if err := b.SetNoData(*s.NoData); err != nil {
				return err
			}
		}
		if s.Description != "" {
			if err := b.SetDescription(s.Description); err != nil {
				return err
			}
		}
		if s.Colors != nil {
			if err := b.SetColorTable(*s.Colors); err != nil {
				return err
			}
			if err := b.SetColorInterp(godal.CIPalette); err != nil {
				return err
			}
		}
		return b.Write(0, 0, s.Data, s.Width, s.Height)
	}()
	if cerr := ds.Close(); err == nil {
		err = cerr
	}
	os.Remove(p + ".aux.xml")
	return err
}

func f64(v float64) *float64 { return &v }

// DEMPixels are w x h Byte pixels of a smooth elevation gradient with a
// nodata (0) corner.
func DEMPixels(w, h int) []byte {
	px := make([]byte, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := 20 + 0.12*float64(x) + 0.06*float64(y) + 12*math.Sin(float64(x)/37)*math.Cos(float64(y)/53)
			if x+y < 120 { // a nodata corner
				v = 0
			}
			px[y*w+x] = byte(math.Max(1, math.Min(254, v)))
			if x+y < 120 {
				px[y*w+x] = 0
			}
		}
	}
	return px
}

func writeDEM(p string) error {
	const w, h = 1024, 1024
	return WriteRaster(p, Raster{Width: w, Height: h, Type: godal.Byte, EPSG: 32633,
		GeoTransform: [6]float64{500000, 30, 0, 5100000, 0, -30}, NoData: f64(0), Description: "elevation (m/10)", Data: DEMPixels(w, h)})
}

func writeLandCover(p string) error {
	const w, h = 720, 360
	px := make([]byte, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			// 6 classes in irregular patches, deterministic.
			c := (x/60 + y/45 + (x*y/900)%3) % 6
			px[y*w+x] = byte(c + 1)
		}
	}
	ct := &godal.ColorTable{PaletteInterp: godal.RGBPalette, Entries: [][4]int16{
		{0, 0, 0, 0}, {0, 100, 0, 255}, {255, 187, 34, 255}, {255, 255, 76, 255},
		{240, 150, 255, 255}, {250, 0, 0, 255}, {0, 100, 200, 255},
	}}
	return WriteRaster(p, Raster{Width: w, Height: h, Type: godal.Byte, EPSG: 4326,
		GeoTransform: [6]float64{10, 0.01, 0, 50, 0, -0.01}, NoData: f64(0), Description: "land cover class", Colors: ct, Data: px})
}

// WriteFloatField writes a side x side Float32 GeoTIFF (UTM 33N, 10 m,
// nodata -9999, tiled, DEFLATE) of a smooth field with fine deterministic
// noise, so that a compressor and its predictor have realistic work: the
// benchmarks' large raster.
func WriteFloatField(p string, side int) error {
	px := make([]float32, side*side)
	seed := uint32(1)
	for y := range side {
		for x := range side {
			seed = seed*1664525 + 1013904223
			px[y*side+x] = float32(800 + 300*math.Sin(float64(x)/410)*math.Cos(float64(y)/370) + 0.05*float64(y) + float64(seed>>24)/64)
		}
	}
	return WriteRaster(p, Raster{Width: side, Height: side, Type: godal.Float32, EPSG: 32633,
		GeoTransform: [6]float64{500000, 10, 0, 5200000, 0, -10}, NoData: f64(-9999), Data: px})
}

func writeFloat(p string) error {
	const w, h = 300, 200
	px := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			px[y*w+x] = float32(15 + 8*math.Sin(float64(x)/20) + 5*math.Cos(float64(y)/15) - 0.01*float64(y))
			if x > 270 && y > 170 {
				px[y*w+x] = -9999
			}
		}
	}
	return WriteRaster(p, Raster{Width: w, Height: h, Type: godal.Float32, EPSG: 3035,
		GeoTransform: [6]float64{4000000, 1000, 0, 3000000, 0, -1000}, NoData: f64(-9999), Description: "air temperature (degC)", Data: px,
		Creation: []string{"PREDICTOR=3"}})
}

func writeASCIIGrid(p string) error {
	const w, h = 120, 80
	var b strings.Builder
	fmt.Fprintf(&b, "ncols        %d\nnrows        %d\nxllcorner    500000.0\nyllcorner    5000000.0\ncellsize     100.0\nNODATA_value -9999\n", w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := 100 + 2*x + y
			if x < 5 && y < 5 {
				v = -9999
			}
			if x > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%d", v)
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		return err
	}
	wkt, err := WKT(32633)
	if err != nil {
		return err
	}
	return os.WriteFile(strings.TrimSuffix(p, ".asc")+".prj", []byte(wkt+"\n"), 0o644)
}

// ParksGeoJSON is a GeoJSON layer "parks" of 4 polygons in EPSG:4326.
const ParksGeoJSON = `{
"type": "FeatureCollection",
"name": "parks",
"features": [
{ "type": "Feature", "properties": { "id": 1, "name": "Riverside", "area_ha": 12.5, "opened": "1998-05-01" },
  "geometry": { "type": "Polygon", "coordinates": [ [ [ 13.40, 52.50 ], [ 13.42, 52.50 ], [ 13.42, 52.51 ], [ 13.40, 52.51 ], [ 13.40, 52.50 ] ] ] } },
{ "type": "Feature", "properties": { "id": 2, "name": "Hilltop", "area_ha": 4.25, "opened": null },
  "geometry": { "type": "Polygon", "coordinates": [ [ [ 13.45, 52.52 ], [ 13.46, 52.52 ], [ 13.455, 52.53 ], [ 13.45, 52.52 ] ] ] } },
{ "type": "Feature", "properties": { "id": 3, "name": "Twin Gardens", "area_ha": 7.0, "opened": "2010-09-12" },
  "geometry": { "type": "MultiPolygon", "coordinates": [ [ [ [ 13.36, 52.48 ], [ 13.37, 52.48 ], [ 13.37, 52.49 ], [ 13.36, 52.48 ] ] ], [ [ [ 13.38, 52.48 ], [ 13.39, 52.48 ], [ 13.39, 52.49 ], [ 13.38, 52.48 ] ] ] ] } },
{ "type": "Feature", "properties": { "id": 4, "name": "Lakeside", "area_ha": 30.0, "opened": "1975-06-30" },
  "geometry": { "type": "Polygon", "coordinates": [ [ [ 13.30, 52.44 ], [ 13.34, 52.44 ], [ 13.34, 52.47 ], [ 13.30, 52.47 ], [ 13.30, 52.44 ] ], [ [ 13.31, 52.45 ], [ 13.32, 52.45 ], [ 13.32, 52.46 ], [ 13.31, 52.45 ] ] ] } }
]
}
`

// PlacesGeoJSON is a GeoJSON layer "places" of 5 points in EPSG:4326.
const PlacesGeoJSON = `{
"type": "FeatureCollection",
"name": "places",
"features": [
{ "type": "Feature", "properties": { "name": "Mitte", "population": 102000, "kind": "district" }, "geometry": { "type": "Point", "coordinates": [ 13.404, 52.520 ] } },
{ "type": "Feature", "properties": { "name": "Kreuzberg", "population": 153000, "kind": "district" }, "geometry": { "type": "Point", "coordinates": [ 13.403, 52.497 ] } },
{ "type": "Feature", "properties": { "name": "Müggelsee", "population": 0, "kind": "lake" }, "geometry": { "type": "Point", "coordinates": [ 13.645, 52.437 ] } },
{ "type": "Feature", "properties": { "name": "Tegel", "population": 36000, "kind": "locality" }, "geometry": { "type": "Point", "coordinates": [ 13.287, 52.588 ] } },
{ "type": "Feature", "properties": { "name": "Spandau", "population": 245000, "kind": "district" }, "geometry": { "type": "Point", "coordinates": [ 13.200, 52.535 ] } }
]
}
`

func writeGeoJSON(p string) error { return os.WriteFile(p, []byte(ParksGeoJSON), 0o644) }

// FromGeoJSON converts GeoJSON text into dst with ogr2ogr switches
// (dates pinned to a fixed day).
func FromGeoJSON(text, dst string, switches []string) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".src-*.geojson")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(text); err != nil {
		tmp.Close()
		return err
	}
	tmp.Close()
	src, err := godal.Open(tmp.Name(), godal.VectorOnly(), godal.Drivers("GeoJSON"))
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := src.VectorTranslate(dst, switches, godal.ConfigOption("OGR_CURRENT_DATE="+sampleDate))
	if err != nil {
		return err
	}
	return out.Close()
}

func writeShapefile(p string) error {
	stem := strings.TrimSuffix(p, ".shp")
	for _, ext := range []string{".shp", ".shx", ".dbf", ".prj", ".cpg"} {
		os.Remove(stem + ext)
	}
	return FromGeoJSON(PlacesGeoJSON, p, []string{"-f", "ESRI Shapefile", "-lco", "DBF_DATE_LAST_UPDATE=2024-01-01", "-lco", "ENCODING=UTF-8"})
}

func writeGPKG(p string) error {
	os.Remove(p)
	// The GeoPackage driver stamps gpkg_contents.last_change when the
	// dataset is closed, outside the thread-local scope of VectorTranslate's
	// options: pin it process-wide for the duration. GDAL reads a
	// configuration option nobody set from the environment, and Go passes
	// os.Setenv on to the C environment in a cgo binary.
	prev, had := os.LookupEnv("OGR_CURRENT_DATE")
	if err := os.Setenv("OGR_CURRENT_DATE", sampleDate); err != nil {
		return err
	}
	defer func() {
		if had {
			os.Setenv("OGR_CURRENT_DATE", prev)
		} else {
			os.Unsetenv("OGR_CURRENT_DATE")
		}
	}()
	if err := FromGeoJSON(ParksGeoJSON, p, []string{"-f", "GPKG", "-nln", "parks"}); err != nil {
		return err
	}
	return FromGeoJSON(PlacesGeoJSON, p, []string{"-f", "GPKG", "-update", "-nln", "places"})
}

func writeNoCRS(p string) error {
	const w, h = 64, 64
	return WriteRaster(p, Raster{Width: w, Height: h, Type: godal.Byte,
		GeoTransform: [6]float64{500000, 30, 0, 5100000, 0, -30}, Data: DEMPixels(w, h)})
}

func writeTruncated(p string) error {
	const w, h = 256, 256
	// Uncompressed strips, so that cutting the file removes pixel data.
	if err := WriteRaster(p+".full", Raster{Width: w, Height: h, Type: godal.Byte, EPSG: 32633,
		GeoTransform: [6]float64{500000, 30, 0, 5100000, 0, -30}, Data: DEMPixels(w, h),
		Creation: []string{"TILED=NO", "COMPRESS=NONE"}}); err != nil {
		return err
	}
	defer os.Remove(p + ".full")
	b, err := os.ReadFile(p + ".full")
	if err != nil {
		return err
	}
	return os.WriteFile(p, b[:len(b)/3], 0o644)
}

func writeVRTPasswd(p string) error {
	const vrt = `<VRTDataset rasterXSize="64" rasterYSize="64">
  <SRS>EPSG:4326</SRS>
  <GeoTransform>0, 1, 0, 0, 0, -1</GeoTransform>
  <VRTRasterBand dataType="Byte" band="1">
    <SimpleSource>
      <SourceFilename relativeToVRT="0">/etc/passwd</SourceFilename>
      <SourceBand>1</SourceBand>
    </SimpleSource>
  </VRTRasterBand>
</VRTDataset>
`
	return os.WriteFile(p, []byte(vrt), 0o644)
}

func writeCSVAsTIFF(p string) error {
	return os.WriteFile(p, []byte("id,name,lon,lat\n1,Mitte,13.404,52.520\n2,Tegel,13.287,52.588\n"), 0o644)
}

// writePixelBomb writes a classic little-endian TIFF whose header declares
// 10^6 x 10^6 8-bit pixels in one uncompressed strip, with 16 bytes of data.
func writePixelBomb(p string) error {
	type entry struct {
		tag, typ uint16
		count    uint32
		value    uint32
	}
	const short, long = 3, 4
	const side = 1_000_000
	entries := []entry{
		{256, long, 1, side}, // ImageWidth
		{257, long, 1, side}, // ImageLength
		{258, short, 1, 8},   // BitsPerSample
		{259, short, 1, 1},   // Compression: none
		{262, short, 1, 1},   // Photometric: min-is-black
		{273, long, 1, 0},    // StripOffsets (patched)
		{277, short, 1, 1},   // SamplesPerPixel
		{278, long, 1, side}, // RowsPerStrip
		{279, long, 1, 16},   // StripByteCounts
	}
	ifdSize := 2 + 12*len(entries) + 4
	dataOff := uint32(8 + ifdSize)
	entries[5].value = dataOff
	le := binary.LittleEndian
	buf := []byte{'I', 'I', 42, 0, 8, 0, 0, 0}
	buf = le.AppendUint16(buf, uint16(len(entries)))
	for _, e := range entries {
		buf = le.AppendUint16(buf, e.tag)
		buf = le.AppendUint16(buf, e.typ)
		buf = le.AppendUint32(buf, e.count)
		if e.typ == short {
			buf = le.AppendUint16(buf, uint16(e.value))
			buf = le.AppendUint16(buf, 0)
		} else {
			buf = le.AppendUint32(buf, e.value)
		}
	}
	buf = le.AppendUint32(buf, 0) // no next IFD
	buf = append(buf, make([]byte, 16)...)
	return os.WriteFile(p, buf, 0o644)
}
