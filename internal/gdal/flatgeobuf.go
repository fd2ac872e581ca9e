package gdal

// FlatGeobuf output: through ogr2ogr after a scan of the layer
// (writeFlatGeobuf), or in one read of the source (copyFlatGeobuf,
// docs/decisions/0112): a layer whose features are all of the geometry
// type it declares needs no scan before its conversion, so each feature
// is checked, digested and written as it is read. The first feature that
// is not as declared stops that, and the layer is converted as any other.

/*
#cgo pkg-config: gdal
#include <ogr_api.h>
#include <gdal.h>

// gm_fgb_layer creates the output layer as ogr2ogr does for
// `-f FlatGeobuf -lco SPATIAL_INDEX=YES -nln name -nlt T -dim D`: the
// source's fields in order, each as the source defines it.
static OGRLayerH gm_fgb_layer(GDALDatasetH ds, const char *name, OGRSpatialReferenceH srs, OGRwkbGeometryType t, OGRLayerH src) {
	char *opts[] = {"SPATIAL_INDEX=YES", NULL};
	OGRLayerH l = GDALDatasetCreateLayer(ds, name, srs, t, opts);
	if (l == NULL) return NULL;
	OGRFeatureDefnH sd = OGR_L_GetLayerDefn(src);
	int n = OGR_FD_GetFieldCount(sd);
	for (int i = 0; i < n; i++)
		if (OGR_L_CreateField(l, OGR_FD_GetFieldDefn(sd, i), TRUE) != OGRERR_NONE) return NULL;
	return OGR_FD_GetFieldCount(OGR_L_GetLayerDefn(l)) == n ? l : NULL;
}

*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// errNotAsDeclared stops a one-read path: a feature is not of the layer's
// declared geometry type (or invalid; for FlatGeobuf null or empty), or
// the layer may be refused for a reason only its scan would give.
var errNotAsDeclared = errors.New("gdal: feature not as the layer declares")

// declaredScan is the scan of a layer of n features all of its declared
// geometry type, valid and none null (the one-read paths count the nulls
// GeoParquet keeps); ok false when the declared type is not one linear
// type (the layer is scanned first then).
func declaredScan(l godal.Layer, n int64) (layerScan, bool) {
	t := C.OGR_L_GetGeomType(layerHandle(l))
	flat := godal.GeometryType(C.OGR_GT_Flatten(t))
	if _, linear := geomNames[flat]; !linear {
		return layerScan{}, false
	}
	family := map[godal.GeometryType]string{
		godal.GTPoint: "point", godal.GTMultiPoint: "point",
		godal.GTLineString: "line", godal.GTMultiLineString: "line",
		godal.GTPolygon: "polygon", godal.GTMultiPolygon: "polygon",
	}
	return layerScan{name: l.Name(), features: n, types: map[godal.GeometryType]int64{flat: n},
		hasZ: C.OGR_GT_HasZ(t) != 0, hasM: C.OGR_GT_HasM(t) != 0, family: family[flat], declared: true}, true
}

// fieldsCopied says ogr2ogr copies a layer's fields as they are defined:
// none has an empty or repeated name, which it renames.
func fieldsCopied(l godal.Layer) bool {
	names := map[string]bool{}
	for _, f := range layerFields(l) {
		if f.name == "" || names[f.name] {
			return false
		}
		names[f.name] = true
	}
	return true
}

// declaredType is the layer type ogr2ogr creates for sc's -nlt and -dim.
func (sc layerScan) declaredType() C.OGRwkbGeometryType {
	var t C.OGRwkbGeometryType
	for ft := range sc.types {
		t = C.OGRwkbGeometryType(ft)
	}
	return C.OGR_GT_SetModifier(t, boolInt(sc.hasZ), boolInt(sc.hasM))
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// copyFlatGeobuf writes a layer of declared scan sc to dst in one read:
// every feature is checked as scanLayer would, metered, digested as
// flatGeobufFidelity digests the source, and written. It returns the
// output and the digest of the source's features, or errNotAsDeclared
// (dst removed) when a feature is not as sc says.
func copyFlatGeobuf(ctx context.Context, ds *godal.Dataset, sc layerScan, dst string, r recipe.Recipe, rec *recorder) (recipe.Output, *geoparquet.Digest, error) {
	lp := ds.LayerByName(sc.name)
	if lp == nil {
		return recipe.Output{}, nil, fault.Data(fault.CorruptSource, "layer %q cannot be opened", sc.name)
	}
	l := *lp
	assign, err := flatGeobufSRS(l, r)
	if err != nil {
		return recipe.Output{}, nil, err
	}
	sr := l.SpatialRef()
	if assign != "" {
		if sr, err = godal.NewSpatialRef(assign, rec.opt()); err != nil {
			return recipe.Output{}, nil, fault.DataWrap(fault.InvalidCRS, err, "layer %q: its CRS cannot be written", sc.name)
		}
		defer sr.Close()
	}
	var srs C.OGRSpatialReferenceH
	if sr != nil && !isNullHandle(sr) {
		srs = spatialRefHandle(sr)
	}
	os.Remove(dst)
	out, err := godal.CreateVector(godal.DriverName(flatGeobufDriver), dst, rec.opt())
	if err != nil {
		return recipe.Output{}, nil, fault.Systemic("gdal.CreateVector(FlatGeobuf)", err)
	}
	fail := func(err error) (recipe.Output, *geoparquet.Digest, error) {
		out.Close()
		os.Remove(dst)
		return recipe.Output{}, nil, err
	}
	name := C.CString(sc.name)
	defer C.free(unsafe.Pointer(name))
	dl := C.gm_fgb_layer(datasetHandle(out), name, srs, sc.declaredType(), layerHandle(l))
	if dl == nil {
		return fail(fault.Systemic("gdal.CreateLayer(FlatGeobuf)", fmt.Errorf("layer %q: %s", sc.name, lastErrorMsg())))
	}
	schema, read, _, _ := geoParquetSchema(l)
	types := make([]geoparquet.FieldType, len(schema))
	for i, f := range schema {
		types[i] = f.Type
	}
	geom, _ := fgbGeometries(sc, false)
	cp := &fgbCopy{dst: dl, declared: sc.declaredType(), meter: budget.NewVectorMeter(sc.name, r)}
	// Invalid geometries (GEOS reports each through CPLError) stop the
	// copy; read errors are checked after each feature instead.
	pushQuiet()
	digest, err := fgbDigest(ctx, l, read, types, geom, cp)
	popQuiet()
	if err != nil {
		return fail(err)
	}
	if err := out.Close(rec.opt()); err != nil {
		os.Remove(dst)
		return recipe.Output{}, nil, classify("gdal.Close(FlatGeobuf)", err, filepath.Dir(dst), fault.CorruptSource, "layer %q cannot be written", sc.name)
	}
	if digest.N != sc.features {
		os.Remove(dst)
		return recipe.Output{}, nil, fault.Data(fault.CorruptSource, "layer %q: %d features counted but %d read", sc.name, sc.features, digest.N)
	}
	o, err := flatGeobufOutput(dst, sc, 0, rec)
	return o, &digest, err
}

func writeFlatGeobuf(ds *godal.Dataset, sc layerScan, dst string, r recipe.Recipe, rec *recorder) (recipe.Output, error) {
	args := []string{"-f", flatGeobufDriver, "-lco", "SPATIAL_INDEX=YES", "-nln", sc.name}
	var repaired int64
	repair := sc.invalid > 0 && r.GeometryPolicy == recipe.GeometryRepair
	if nlt := sc.targetType(repair); nlt != "" {
		args = append(args, "-nlt", nlt)
	}
	// The coordinate dimensions the features have: GDAL's FlatGeobuf
	// writer takes them from the layer's declared type, and a layer
	// declared 2D (a GeoPackage GEOMETRY) would lose its Z and M.
	dim := "XY"
	if sc.hasZ {
		dim += "Z"
	}
	if sc.hasM {
		dim += "M"
	}
	args = append(args, "-dim", dim)
	if sc.promote {
		rec.warn(fmt.Sprintf("layer %q mixes single and multi geometries: promoted to multi", sc.name))
	}
	if sc.mixedKind {
		rec.warn(fmt.Sprintf("layer %q mixes geometry kinds: written with geometry type Unknown", sc.name))
	}
	if repair {
		args = append(args, "-makevalid")
		repaired = sc.invalid
		rec.warn(fmt.Sprintf("layer %q: %d invalid geometries repaired (MakeValid)", sc.name, sc.invalid))
	}
	if l := ds.LayerByName(sc.name); l != nil {
		assign, err := flatGeobufSRS(*l, r)
		if err != nil {
			return recipe.Output{}, err
		}
		if assign != "" {
			args = append(args, "-a_srs", assign)
		}
	}
	args = append(args, sc.name)
	os.Remove(dst)
	out, err := ds.VectorTranslate(dst, args, rec.opt())
	if err != nil {
		os.Remove(dst)
		return recipe.Output{}, classify("gdal.VectorTranslate(FlatGeobuf)", err, filepath.Dir(dst), fault.CorruptSource, "layer %q cannot be read in full", sc.name)
	}
	if err := out.Close(rec.opt()); err != nil {
		os.Remove(dst)
		return recipe.Output{}, classify("gdal.Close(FlatGeobuf)", err, filepath.Dir(dst), fault.CorruptSource, "layer %q cannot be written", sc.name)
	}
	return flatGeobufOutput(dst, sc, repaired, rec)
}

// flatGeobufSRS is the -a_srs of a layer's FlatGeobuf output ("" none):
// the CRS text in the header comes from a canonical rebuild of the layer
// CRS, not from GDAL's per-thread PROJ state (see crs.go).
func flatGeobufSRS(l godal.Layer, r recipe.Recipe) (string, error) {
	sr, assigned, err := layerSRS(l, r)
	if err != nil {
		return "", err
	}
	if assigned {
		defer sr.Close()
	}
	if crs, err := canonicalCRS(sr); err == nil && crs.Canonical {
		return crs.WKT2, nil
	} else if assigned {
		return r.AssignCRS, nil
	}
	return "", nil
}

// flatGeobufOutput describes the FlatGeobuf file written at dst, once it
// is known to hold every feature of the layer (its header says how many;
// GDAL reads the count from there).
func flatGeobufOutput(dst string, sc layerScan, repaired int64, rec *recorder) (recipe.Output, error) {
	if n, err := fgbFeatureCount(dst, rec); err != nil || n != sc.features {
		os.Remove(dst)
		return recipe.Output{}, fault.Systemic("gdal.VectorTranslate(FlatGeobuf)",
			fmt.Errorf("layer %q: the output holds %d of %d features (%v)", sc.name, n, sc.features, err))
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return recipe.Output{}, fault.Systemic("gdal.VectorTranslate(FlatGeobuf)", err)
	}
	info := recipe.Formats[recipe.FormatFlatGeobuf]
	return recipe.Output{
		Path: dst, Format: info.Format, Extension: info.Extension, ContentType: info.ContentType,
		Kind: recipe.Vector, Layer: sc.name, Warnings: rec.list(),
		Stats: map[string]int64{
			"features": sc.features, "null_geometries": sc.nulls, "invalid_geometries": sc.invalid,
			"repaired": repaired, "bytes": fi.Size(),
		},
	}, nil
}

// fgbFeatureCount reads the feature count of a FlatGeobuf file we wrote.
func fgbFeatureCount(p string, rec *recorder) (int64, error) {
	ds, err := godal.Open(p, godal.Drivers("FlatGeobuf"), godal.VectorOnly(), rec.opt())
	if err != nil {
		return -1, err
	}
	defer ds.Close()
	ls := ds.Layers()
	if len(ls) != 1 {
		return -1, fmt.Errorf("%d layers", len(ls))
	}
	n, err := ls[0].FeatureCount(rec.opt())
	return int64(n), err
}
