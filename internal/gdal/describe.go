package gdal

// Size: Describe for raster and vector outputs and the type-name tables it reads.

// Describe: what an output file holds, read back from the file itself, for
// its STAC item (internal/stac). The engine already knows most of it while
// converting; reading it back from the written file is what makes the item
// describe the bytes that are published.

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>
#include <cpl_conv.h>
#include <cpl_string.h>

// gm_wkt2 exports a CRS given as WKT (any version) as WKT2:2019, or NULL.
static char *gm_wkt2(const char *wkt) {
	OGRSpatialReferenceH sr = OSRNewSpatialReference(NULL);
	if (sr == NULL) return NULL;
	char *in = (char *)wkt;
	if (OSRImportFromWkt(sr, &in) != OGRERR_NONE) { OSRDestroySpatialReference(sr); return NULL; }
	char *out = NULL;
	const char *opts[] = {"FORMAT=WKT2_2019", "MULTILINE=NO", NULL};
	if (OSRExportToWktEx(sr, &out, opts) != OGRERR_NONE) { CPLFree(out); out = NULL; }
	OSRDestroySpatialReference(sr);
	return out;
}
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/stac"
)

// statisticsPixels bounds the pixels band statistics are computed from.
// A larger raster's statistics come from its largest overview within the
// bound (the COG always has overviews): exact over that overview's pixels,
// which for a 26 Mpx Float32 band takes about 60 ms instead of 0.7 s for
// every pixel (BenchmarkDescribe), and unlike GDAL's own approximation
// (an overview of a few thousand pixels) keeps fine detail.
const statisticsPixels = 1 << 22

// Describe reads the facts a STAC item states about an output of the given
// format (recipe.FormatCOG, FormatGeoParquet, FormatFlatGeobuf) from the
// file at path. It never modifies the file. Facts the file does not have
// (no EPSG code, no extent) are left zero; a file that cannot be read is a
// *fault.SystemicError: the engine has just written and checked it.
func (e *Engine) Describe(ctx context.Context, path, format string) (stac.Description, error) {
	if err := ctx.Err(); err != nil {
		return stac.Description{}, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var d stac.Description
	var err error
	switch format {
	case recipe.FormatCOG:
		d, err = describeRaster(path)
	case recipe.FormatGeoParquet:
		d, err = describeGeoParquet(path)
	case recipe.FormatFlatGeobuf:
		d, err = describeOGR(path, "FlatGeobuf")
	case recipe.FormatParquet:
		d, err = describeTable(path)
	default:
		return d, fault.Systemic("gdal.Describe", fmt.Errorf("unknown output format %q", format))
	}
	if err != nil {
		return d, fault.Systemic("gdal.Describe: "+format, err)
	}
	d.Software = map[string]string{"GDAL": e.version, "PROJ": projVersion()}
	return d, nil
}

func describeRaster(path string) (stac.Description, error) {
	var d stac.Description
	rec := newRecorder()
	// Statistics are kept in memory only: no .aux.xml appears beside the
	// output (the COG stands alone, and staging would not carry it).
	defer setThreadConfig("GDAL_PAM_ENABLED", "NO")()
	_, hadAux := os.Stat(path + ".aux.xml")
	ds, err := godal.Open(path, godal.Drivers("GTiff"), godal.RasterOnly(), rec.opt())
	if err != nil {
		return d, err
	}
	defer func() {
		ds.Close()
		if hadAux != nil {
			os.Remove(path + ".aux.xml")
		}
	}()
	st := ds.Structure()
	d.Shape = []int{st.SizeY, st.SizeX}
	gt, err := ds.GeoTransform(rec.opt())
	if err != nil {
		// Georeferenced by GCPs or RPCs (docs/decisions/0089): the grid has
		// no CRS of its own, so no proj:code, proj:bbox or proj:transform;
		// the footprint is that of the GCPs or of the RPCs' domain.
		if err := describeWithoutGeoTransform(&d, ds); err != nil {
			return d, err
		}
		return d, describeBands(&d, ds, rec)
	}
	d.Transform = []float64{gt[1], gt[2], gt[0], gt[4], gt[5], gt[3]}
	// The grid's corners, then points along its edges, in the CRS.
	w, h := float64(st.SizeX), float64(st.SizeY)
	at := func(px, py float64) (float64, float64) {
		return gt[0] + px*gt[1] + py*gt[2], gt[3] + px*gt[4] + py*gt[5]
	}
	xs, ys := edgePoints(w, h, at)
	d.NativeBBox = bboxOf(xs, ys)
	if err := describeCRS(&d, ds.Projection(), xs, ys); err != nil {
		return d, err
	}
	if v := ds.Metadata("TIFFTAG_DATETIME"); v != "" {
		if t, err := time.Parse("2006:01:02 15:04:05", v); err == nil {
			d.Datetime = &t
		}
	}
	return d, describeBands(&d, ds, rec)
}

func describeBands(d *stac.Description, ds *godal.Dataset, rec *recorder) error {
	for _, b := range ds.Bands() {
		band := stac.Band{DataType: dataTypeName(b.Structure().DataType)}
		if v, ok := b.NoData(); ok {
			band.Nodata = &v
		}
		band.Statistics = bandStatistics(b, rec)
		d.Bands = append(d.Bands, band)
	}
	return nil
}

// describeWithoutGeoTransform sets the WGS 84 footprint of a raster
// placed by GCPs (the extent of the GCPs, in their CRS) or by RPCs (their
// domain of validity: LONG_OFF ± LONG_SCALE, LAT_OFF ± LAT_SCALE).
func describeWithoutGeoTransform(d *stac.Description, ds *godal.Dataset) error {
	if gcps := ds.GCPs(); len(gcps) > 0 && strings.TrimSpace(ds.GCPProjection()) != "" {
		xs, ys := make([]float64, len(gcps)), make([]float64, len(gcps))
		for i, g := range gcps {
			xs[i], ys[i] = g.DfGCPX, g.DfGCPY
		}
		var fp stac.Description
		if err := describeCRS(&fp, ds.GCPProjection(), xs, ys); err != nil {
			return err
		}
		d.BBox = fp.BBox
		return nil
	}
	rpc := ds.Metadatas(godal.Domain("RPC"))
	num := func(k string) (float64, bool) {
		v, err := strconv.ParseFloat(strings.TrimSpace(rpc[k]), 64)
		return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	lon, ok1 := num("LONG_OFF")
	lat, ok2 := num("LAT_OFF")
	dlon, ok3 := num("LONG_SCALE")
	dlat, ok4 := num("LAT_SCALE")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return fmt.Errorf("geotransform: none, and no GCPs with a CRS nor RPCs to place the raster")
	}
	dlon, dlat = math.Abs(dlon), math.Abs(dlat)
	d.BBox = []float64{max(lon-dlon, -180), max(lat-dlat, -90), min(lon+dlon, 180), min(lat+dlat, 90)}
	return nil
}

// bandStatistics computes a band's statistics over all its pixels, or over
// its largest overview within statisticsPixels. A band with no valid pixel
// has none (GDAL fails the call): the item says nothing rather than
// something false.
func bandStatistics(b godal.Band, rec *recorder) *stac.Statistics {
	src := b
	if st := b.Structure(); int64(st.SizeX)*int64(st.SizeY) > statisticsPixels {
		approx := true
		for _, o := range b.Overviews() { // largest first
			if ost := o.Structure(); int64(ost.SizeX)*int64(ost.SizeY) <= statisticsPixels {
				src, approx = o, false
				break
			}
		}
		if approx { // no overview small enough: GDAL's own sampling
			return statisticsOf(b, rec, godal.Approximate())
		}
	}
	return statisticsOf(src, rec)
}

func statisticsOf(b godal.Band, rec *recorder, opts ...godal.StatisticsOption) *stac.Statistics {
	s, err := b.ComputeStatistics(append(opts, godal.ErrLogger(rec.handle))...)
	if err != nil {
		return nil
	}
	stats := &stac.Statistics{Minimum: s.Min, Maximum: s.Max, Mean: s.Mean, StdDev: s.Std}
	if v, err := strconv.ParseFloat(b.Metadata("STATISTICS_VALID_PERCENT"), 64); err == nil {
		stats.ValidPercent = &v
	}
	return stats
}

// describeTable describes an attribute table (plain Parquet): its rows
// and columns; it has no extent or CRS.
func describeTable(path string) (stac.Description, error) {
	var d stac.Description
	info, err := parquetInfo(path, geoparquet.ReadTableInfo)
	if err != nil {
		return d, err
	}
	rows := info.Rows
	d.RowCount = &rows
	for _, f := range info.Fields {
		d.Columns = append(d.Columns, stac.Column{Name: f.Name, Type: parquetTypeName(f.Type)})
	}
	return d, nil
}

// parquetInfo opens path and reads its footer with read.
func parquetInfo(path string, read func(io.ReaderAt, int64) (geoparquet.Info, error)) (geoparquet.Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return geoparquet.Info{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return geoparquet.Info{}, err
	}
	return read(f, fi.Size())
}

// describeGeoParquet reads the footer and "geo" metadata with the pure-Go
// reader (this GDAL may have no Parquet driver) and the CRS with GDAL.
func describeGeoParquet(path string) (stac.Description, error) {
	var d stac.Description
	// The footer is all a description needs: the conversion's fidelity
	// check has read the geometries already.
	info, err := parquetInfo(path, geoparquet.ReadFooterInfo)
	if err != nil {
		return d, err
	}
	var geo struct {
		Columns map[string]struct {
			CRS  json.RawMessage `json:"crs"`
			BBox []float64       `json:"bbox"`
		} `json:"columns"`
	}
	if err := json.Unmarshal([]byte(info.KeyValue["geo"]), &geo); err != nil {
		return d, fmt.Errorf("geo metadata: %w", err)
	}
	col := geo.Columns[info.GeometryColumn]
	rows := info.Rows
	d.RowCount = &rows
	d.PrimaryGeometry = info.GeometryColumn
	d.Columns = append(d.Columns, stac.Column{Name: info.GeometryColumn, Type: "binary", Description: "geometry, WKB (GeoParquet 1.1 primary column)"})
	if c, typ := info.CoveringColumn, info.CoveringType; c != "" {
		d.Columns = append(d.Columns, stac.Column{Name: c, Type: fmt.Sprintf("struct<xmin: %[1]s, ymin: %[1]s, xmax: %[1]s, ymax: %[1]s>", typ), Description: "bounding box of the geometry (GeoParquet 1.1 covering)"})
	}
	for _, f := range info.Fields {
		d.Columns = append(d.Columns, stac.Column{Name: f.Name, Type: parquetTypeName(f.Type)})
	}
	// GeoParquet: an absent crs is OGC:CRS84; null is an unknown CRS.
	crs := "OGC:CRS84"
	switch s := strings.TrimSpace(string(col.CRS)); {
	case s == "null":
		crs = ""
	case s != "":
		crs = s
	}
	if len(col.BBox) >= 4 && crs != "" {
		n := len(col.BBox) / 2 // [xmin, ymin, (zmin,) xmax, ymax, (zmax)]
		b := [4]float64{col.BBox[0], col.BBox[1], col.BBox[n], col.BBox[n+1]}
		xs, ys := edgePoints(1, 1, func(px, py float64) (float64, float64) {
			return b[0] + px*(b[2]-b[0]), b[1] + py*(b[3]-b[1])
		})
		d.NativeBBox = b[:]
		var sr *godal.SpatialRef
		var err error
		if crs == "OGC:CRS84" {
			// EPSG:4326 in godal's longitude/latitude axis order is CRS84
			// (and GDAL 3.6 gives "OGC:CRS84" no authority to read back).
			sr, err = godal.NewSpatialRefFromEPSG(4326)
		} else {
			sr, err = godal.NewSpatialRef(crs)
		}
		if err != nil {
			return d, fmt.Errorf("crs: %w", err)
		}
		defer sr.Close()
		if err := describeSRS(&d, sr, xs, ys); err != nil {
			return d, err
		}
	}
	return d, nil
}

// describeOGR describes the single layer of a vector file GDAL reads.
func describeOGR(path, driver string) (stac.Description, error) {
	var d stac.Description
	rec := newRecorder()
	ds, err := godal.Open(path, godal.Drivers(driver), godal.VectorOnly(), rec.opt())
	if err != nil {
		return d, err
	}
	defer ds.Close()
	layers := ds.Layers()
	if len(layers) != 1 {
		return d, fmt.Errorf("%d layers, want 1", len(layers))
	}
	l := layers[0]
	b, err := l.Bounds()
	if err != nil {
		return d, nil // no feature with a geometry: no extent
	}
	if C.OGR_L_GetSpatialRef(layerHandle(l)) == nil {
		return d, nil // no CRS: no footprint
	}
	sr := l.SpatialRef()
	xs, ys := edgePoints(1, 1, func(px, py float64) (float64, float64) {
		return b[0] + px*(b[2]-b[0]), b[1] + py*(b[3]-b[1])
	})
	d.NativeBBox = b[:]
	return d, describeSRS(&d, sr, xs, ys)
}

// describeCRS sets the EPSG code (or WKT2) of the CRS given as WKT, and
// the WGS 84 bbox of the points xs, ys given in it.
func describeCRS(d *stac.Description, wkt string, xs, ys []float64) error {
	if strings.TrimSpace(wkt) == "" {
		return nil
	}
	sr, err := godal.NewSpatialRefFromWKT(wkt)
	if err != nil {
		return fmt.Errorf("crs: %w", err)
	}
	defer sr.Close()
	return describeSRS(d, sr, xs, ys)
}

// describeSRS is describeCRS for a CRS already parsed.
func describeSRS(d *stac.Description, sr *godal.SpatialRef, xs, ys []float64) error {
	if code := epsgCode(sr); code != 0 {
		d.EPSG = code
	} else if wkt, err := sr.WKT(); err == nil {
		d.WKT2 = wkt2(wkt)
	}
	wgs84, err := godal.NewSpatialRefFromEPSG(4326)
	if err != nil {
		return fmt.Errorf("WGS 84: %w", err)
	}
	defer wgs84.Close()
	trn, err := godal.NewTransform(sr, wgs84)
	if err != nil {
		return nil // no path to WGS 84 (an engineering CRS): no footprint
	}
	defer trn.Close()
	lon, lat := append([]float64(nil), xs...), append([]float64(nil), ys...)
	ok := make([]bool, len(lon))
	_ = trn.TransformEx(lon, lat, nil, ok) // failed points are flagged in ok
	var gx, gy []float64
	for i := range lon {
		if ok[i] && !math.IsNaN(lon[i]) && !math.IsNaN(lat[i]) && !math.IsInf(lon[i], 0) && !math.IsInf(lat[i], 0) {
			gx, gy = append(gx, lon[i]), append(gy, lat[i])
		}
	}
	if len(gx) == 0 {
		return nil
	}
	bb := bboxOf(gx, gy)
	bb[0], bb[2] = max(bb[0], -180), min(bb[2], 180)
	bb[1], bb[3] = max(bb[1], -90), min(bb[3], 90)
	d.BBox = bb
	return nil
}

// epsgCode is the CRS's EPSG code: its own authority code, else what
// GDAL's identification finds (a CRS read from WKT without AUTHORITY).
func epsgCode(sr *godal.SpatialRef) int {
	// OGC:CRS84 (GeoParquet's default) is EPSG:4326 in longitude/latitude
	// order, which is how STAC reads proj:code EPSG:4326 anyway.
	if strings.EqualFold(sr.AuthorityName(""), "OGC") && sr.AuthorityCode("") == "CRS84" {
		return 4326
	}
	if strings.EqualFold(sr.AuthorityName(""), "EPSG") {
		if n, err := strconv.Atoi(sr.AuthorityCode("")); err == nil {
			return n
		}
	}
	if sr.AutoIdentifyEPSG() == nil && strings.EqualFold(sr.AuthorityName(""), "EPSG") {
		if n, err := strconv.Atoi(sr.AuthorityCode("")); err == nil {
			return n
		}
	}
	return 0
}

func wkt2(wkt string) string {
	c := C.CString(wkt)
	defer C.free(unsafe.Pointer(c))
	out := C.gm_wkt2(c)
	if out == nil {
		return ""
	}
	defer C.CPLFree(unsafe.Pointer(out))
	return C.GoString(out)
}

// edgePoints samples the boundary of the w x h grid (21 points per edge),
// mapped by at: a bbox transformed by its corners alone misses the bulge
// of a projected edge.
func edgePoints(w, h float64, at func(px, py float64) (float64, float64)) (xs, ys []float64) {
	const n = 20
	add := func(px, py float64) {
		x, y := at(px, py)
		xs, ys = append(xs, x), append(ys, y)
	}
	for i := 0; i <= n; i++ {
		f := float64(i) / n
		add(f*w, 0)
		add(f*w, h)
		add(0, f*h)
		add(w, f*h)
	}
	return xs, ys
}

func bboxOf(xs, ys []float64) []float64 {
	b := []float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	for i := range xs {
		b[0], b[2] = min(b[0], xs[i]), max(b[2], xs[i])
		b[1], b[3] = min(b[1], ys[i]), max(b[3], ys[i])
	}
	return b
}

// dataTypeName is the raster extension's name of a GDAL data type.
func dataTypeName(t godal.DataType) string {
	switch t {
	case godal.Byte:
		return "uint8"
	case godal.UInt16:
		return "uint16"
	case godal.Int16:
		return "int16"
	case godal.UInt32:
		return "uint32"
	case godal.Int32:
		return "int32"
	case godal.Float32:
		return "float32"
	case godal.Float64:
		return "float64"
	case godal.CInt16:
		return "cint16"
	case godal.CInt32:
		return "cint32"
	case godal.CFloat32:
		return "cfloat32"
	case godal.CFloat64:
		return "cfloat64"
	}
	// Int8, (U)Int64 and anything newer than this godal names.
	switch strings.ToLower(t.String()) {
	case "int8":
		return "int8"
	case "int64":
		return "int64"
	case "uint64":
		return "uint64"
	}
	return "other"
}

// parquetTypeName is the Parquet/Arrow type internal/geoparquet writes a
// field as.
func parquetTypeName(t geoparquet.FieldType) string {
	switch t {
	case geoparquet.Int32:
		return "int32"
	case geoparquet.Int64:
		return "int64"
	case geoparquet.Float64:
		return "double"
	case geoparquet.String:
		return "string"
	case geoparquet.Bool:
		return "boolean"
	case geoparquet.Date:
		return "date32"
	case geoparquet.DateTime:
		return "timestamp[us, tz=UTC]"
	case geoparquet.Binary:
		return "binary"
	case geoparquet.LocalDateTime:
		return "timestamp[us]"
	case geoparquet.Time:
		return "time32[ms]"
	case geoparquet.Int32List:
		return "list<int32>"
	case geoparquet.Int64List:
		return "list<int64>"
	case geoparquet.Float64List:
		return "list<double>"
	case geoparquet.StringList:
		return "list<string>"
	}
	return "unknown"
}
