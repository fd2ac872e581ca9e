package gdal

/*
#cgo pkg-config: gdal
#include <ogr_api.h>
*/
import "C"

import (
	"context"
	"fmt"
	"os"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// ogrFieldDef is one attribute field as a layer defines it.
type ogrFieldDef struct {
	name    string
	ogrType C.OGRFieldType
	subType C.OGRFieldSubType
}

func (f ogrFieldDef) typeName() string { return C.GoString(C.OGR_GetFieldTypeName(f.ogrType)) }

// layerFields reads a layer's attribute fields from its definition.
func layerFields(l godal.Layer) []ogrFieldDef {
	defn := C.OGR_L_GetLayerDefn(layerHandle(l))
	n := int(C.OGR_FD_GetFieldCount(defn))
	out := make([]ogrFieldDef, n)
	for i := range out {
		fd := C.OGR_FD_GetFieldDefn(defn, C.int(i))
		out[i] = ogrFieldDef{name: C.GoString(C.OGR_Fld_GetNameRef(fd)), ogrType: C.OGR_Fld_GetType(fd), subType: C.OGR_Fld_GetSubType(fd)}
	}
	return out
}

// parquetTypeFor is the GeoParquet column type an OGR field must have in
// the output (columnType); asText for OGR types written as OGR's text form.
func parquetTypeFor(f ogrFieldDef) (t geoparquet.FieldType, asText bool) {
	t, asText, _ = columnType(f.ogrType, f.subType)
	return t, asText
}

// sameColumnType: a column has the type its field maps to; a DateTime
// column none of whose values has a zone is written without one
// (geoparquet.LocalDateTime).
func sameColumnType(want, got geoparquet.FieldType) bool {
	return got == want || (want == geoparquet.DateTime && got == geoparquet.LocalDateTime)
}

// sameFieldName: a source field keeps its name, unless it had none or
// repeated an earlier one (then the output names it field_N or name_K).
func sameFieldName(src []ogrFieldDef, i int, out string) bool {
	if src[i].name == "" {
		return out != ""
	}
	for _, f := range src[:i] {
		if f.name == src[i].name {
			return out != ""
		}
	}
	return out == src[i].name
}

// schemaMismatch is the error of a field that did not arrive: the
// engine's fault (see fidelity.go).
func layerAltered(layer, format string, args ...any) error {
	return fault.Systemic("gdal.fidelity", fmt.Errorf("layer %q: the output differs from the source: %s", layer, fmt.Sprintf(format, args...)))
}

// geoParquetFidelity compares the GeoParquet file at dst, read back on its
// own, with the source layer: rows, null geometries, every field with the
// type it maps to, and the layer named in the file's lineage.
func geoParquetFidelity(src godal.Layer, sc layerScan, dst string, want *geoparquet.Digest) (*recipe.Fidelity, error) {
	f, err := os.Open(dst)
	if err != nil {
		return nil, fault.Systemic("gdal.fidelity: open output", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fault.Systemic("gdal.fidelity: open output", err)
	}
	// The footer only: the digest's read below counts the null geometries.
	read := geoparquet.ReadFooterInfo
	if sc.table {
		read = geoparquet.ReadTableInfo
	}
	info, err := read(f, fi.Size())
	if err != nil {
		return nil, fault.Systemic("gdal.fidelity", fmt.Errorf("layer %q: the output cannot be read back: %w", sc.name, err))
	}
	if info.Rows != sc.features {
		return nil, layerAltered(sc.name, "%d features written as %d rows", sc.features, info.Rows)
	}
	lin, err := recipe.ParseLineage(info.KeyValue[geoparquet.LineageKey])
	if err != nil || lin.Layer != sc.name || lin.NoGeometry != sc.table {
		return nil, layerAltered(sc.name, "the file names layer %q (%v)", lin.Layer, err)
	}
	fields := layerFields(src)
	if len(info.Fields) != len(fields) {
		return nil, layerAltered(sc.name, "%d attribute fields written as %d columns", len(fields), len(info.Fields))
	}
	out := &recipe.Fidelity{
		Checks: []string{"features", "null_geometries", "fields", "layer_name", "geometries", "attribute values"},
		Layer:  sc.name, Features: info.Rows, Fields: len(fields),
	}
	if sc.table {
		out.Checks = []string{"features", "fields", "layer_name", "no_geometry", "attribute values"}
	}
	for i, sf := range fields {
		want, asText := parquetTypeFor(sf)
		got := info.Fields[i]
		if !sameFieldName(fields, i, got.Name) || !sameColumnType(want, got.Type) {
			return nil, layerAltered(sc.name, "field %d %q (%s) written as %q (%s), want %s", i+1, sf.name, sf.typeName(), got.Name, got.Type, want)
		}
		if asText {
			out.AsText = append(out.AsText, sf.name)
		}
	}
	// Every geometry and value: the digest of the rows read back equals
	// that of the features handed to the writer (after the documented
	// normalisations, which the writer's input already carries).
	got, nulls, err := geoparquet.FileDigest(f, fi.Size(), info)
	if err != nil {
		return nil, fault.Systemic("gdal.fidelity", fmt.Errorf("layer %q: the output cannot be read back: %w", sc.name, err))
	}
	if nulls != sc.nulls {
		return nil, layerAltered(sc.name, "%d features without geometry written as %d null geometries", sc.nulls, nulls)
	}
	out.NullGeometries = nulls
	if want == nil || !got.Equal(*want) {
		return nil, layerAltered(sc.name, "the geometries and attribute values read back (%d rows, digest %s) differ from those written (%v)", got.N, got, want)
	}
	out.Digest = got.String()
	return out, nil
}

// flatGeobufFidelity compares the FlatGeobuf file at dst with the source
// layer: its one layer's name, feature count and fields (flatGeobufKeeps),
// and the digest of every feature read back with that of the source's
// (written, when the conversion took it).
func flatGeobufFidelity(ctx context.Context, src godal.Layer, sc layerScan, dst string, r recipe.Recipe, written *geoparquet.Digest, rec *recorder) (*recipe.Fidelity, error) {
	ds, err := godal.Open(dst, godal.Drivers("FlatGeobuf"), godal.VectorOnly(), rec.opt())
	if err != nil {
		return nil, fault.Systemic("gdal.fidelity", fmt.Errorf("layer %q: the output cannot be read back: %w", sc.name, err))
	}
	defer ds.Close()
	ls := ds.Layers()
	if len(ls) != 1 {
		return nil, layerAltered(sc.name, "the file holds %d layers", len(ls))
	}
	if name := ls[0].Name(); name != sc.name {
		return nil, layerAltered(sc.name, "written as layer %q", name)
	}
	n, err := ls[0].FeatureCount(rec.opt())
	if err != nil || int64(n) != sc.features {
		return nil, layerAltered(sc.name, "%d features written as %d (%v)", sc.features, n, err)
	}
	fields, got := layerFields(src), layerFields(ls[0])
	if len(got) != len(fields) {
		return nil, layerAltered(sc.name, "%d attribute fields written as %d", len(fields), len(got))
	}
	out := &recipe.Fidelity{
		Checks: []string{"features", "fields", "layer_name"},
		Layer:  sc.name, Features: int64(n), Fields: len(fields),
	}
	for i, sf := range fields {
		if !sameFieldName(fields, i, got[i].name) || !flatGeobufKeeps(sf.ogrType, got[i].ogrType) {
			return nil, layerAltered(sc.name, "field %d %q (%s) written as %q (%s)", i+1, sf.name, sf.typeName(), got[i].name, got[i].typeName())
		}
	}
	// Every value, and every geometry unless ogr2ogr repaired some (its
	// MakeValid is not ours to repeat): both layers read with the source's
	// field types (a Date reads back from FlatGeobuf's DateTime at
	// midnight), the source's geometries with the dimensions and the
	// multi-promotion the writer was given (fgbGeometries).
	schema, read, _, _ := geoParquetSchema(src)
	types := make([]geoparquet.FieldType, len(schema))
	for i, f := range schema {
		types[i] = f.Type
	}
	repaired := sc.invalid > 0 && r.GeometryPolicy == recipe.GeometryRepair
	srcGeom, outGeom := fgbGeometries(sc, repaired)
	// The source's digest, unless the conversion took it as it read the
	// features (copyFlatGeobuf).
	var want geoparquet.Digest
	if written != nil {
		want = *written
	} else if want, err = quietDigest(ctx, src, read, types, srcGeom); err != nil {
		return nil, err
	}
	have, err := quietDigest(ctx, ls[0], read, types, outGeom)
	if err != nil {
		return nil, fault.Systemic("gdal.fidelity", fmt.Errorf("layer %q: the output cannot be read back: %w", sc.name, err))
	}
	if !have.Equal(want) {
		return nil, layerAltered(sc.name, "the geometries and attribute values read back (%d features, digest %s) differ from those written (%d, %s)", have.N, have, want.N, want)
	}
	if !repaired {
		out.Checks = append(out.Checks, "geometries")
	}
	out.Checks = append(out.Checks, "attribute values")
	out.Digest = have.String()
	return out, nil
}

// quietDigest is fgbDigest without a copy, GDAL's errors silenced (the
// read's are checked feature by feature).
func quietDigest(ctx context.Context, l godal.Layer, fields []ogrField, types []geoparquet.FieldType, geom fgbGeometry) (geoparquet.Digest, error) {
	pushQuiet()
	defer popQuiet()
	return fgbDigest(ctx, l, fields, types, geom, nil)
}

// flatGeobufKeeps: a field comes back with its own type, or with the one
// FlatGeobuf stores it as without loss: its only temporal column type is
// DateTime, and a date reads back at midnight.
func flatGeobufKeeps(src, out C.OGRFieldType) bool {
	switch {
	case src == out:
		return true
	case src == C.OFTDate:
		return out == C.OFTDateTime
	}
	return false
}

// flatGeobufRefuses names the first field of a layer that GDAL 3.6's
// FlatGeobuf writer cannot hold ("" when there is none): a Time becomes a
// DateTime without its value (null), a list fails the write. Such a layer
// is refused before anything is written.
func flatGeobufRefuses(l godal.Layer) string {
	for _, f := range layerFields(l) {
		switch f.ogrType {
		case C.OFTTime, C.OFTIntegerList, C.OFTInteger64List, C.OFTRealList, C.OFTStringList:
			return fmt.Sprintf("%q (%s)", f.name, f.typeName())
		}
	}
	return ""
}

// layersOneToOne proves, from what the files say, that every source layer
// with features has exactly one output and no two outputs share a file.
func layersOneToOne(ds *godal.Dataset, outs []recipe.Output, rec *recorder) error {
	want := map[string]bool{}
	for _, l := range ds.Layers() {
		if n, err := l.FeatureCount(rec.opt()); err == nil && n > 0 {
			want[l.Name()] = true
		}
	}
	seen, files := map[string]bool{}, map[string]bool{}
	for _, o := range outs {
		if o.Fidelity == nil || seen[o.Fidelity.Layer] || files[o.Path] || !want[o.Fidelity.Layer] {
			return fault.Systemic("gdal.fidelity", fmt.Errorf("layer outputs are not one-to-one with the source's layers (output %s)", o.Path))
		}
		seen[o.Fidelity.Layer], files[o.Path] = true, true
	}
	if len(seen) != len(want) {
		return fault.Systemic("gdal.fidelity", fmt.Errorf("%d layers with features written as %d outputs", len(want), len(seen)))
	}
	return nil
}
