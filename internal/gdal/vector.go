package gdal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// layerScan is what a full read of a layer's geometries found.
type layerScan struct {
	name      string
	features  int64
	nulls     int64
	invalid   int64
	types     map[godal.GeometryType]int64 // flattened 2D types
	promote   bool                         // mixed single/multi of one family
	mixedKind bool                         // points with polygons, etc.
	hasZ      bool
	hasM      bool
	curves    int64  // geometries with arcs (counted in types as their linear type)
	family    string // "point", "line", "polygon" when there is one
	// table: the layer has no geometry column (an attribute table),
	// written as plain Parquet (recipe.AttributeTablesParquet).
	table bool
	// declared: taken from the layer's declared geometry type, not read
	// (declaredScan); the conversion proves it feature by feature.
	declared bool
}

// linearOf is the type a curve type linearises to (OGR_G_GetLinearGeometry).
var linearOf = map[godal.GeometryType]godal.GeometryType{
	godal.GeometryType(8): godal.GTLineString, godal.GeometryType(9): godal.GTLineString, // CircularString, CompoundCurve
	godal.GeometryType(10): godal.GTPolygon,         // CurvePolygon
	godal.GeometryType(11): godal.GTMultiLineString, // MultiCurve
	godal.GeometryType(12): godal.GTMultiPolygon,    // MultiSurface
}

var geomNames = map[godal.GeometryType]string{
	godal.GTPoint: "POINT", godal.GTLineString: "LINESTRING", godal.GTPolygon: "POLYGON",
	godal.GTMultiPoint: "MULTIPOINT", godal.GTMultiLineString: "MULTILINESTRING", godal.GTMultiPolygon: "MULTIPOLYGON",
}

var multiOf = map[string]string{"point": "MULTIPOINT", "line": "MULTILINESTRING", "polygon": "MULTIPOLYGON"}

// targetType is the -nlt value that gives the output layer one declared
// geometry type ("" leaves it to GDAL): single and multi of one family
// become multi, and so does a polygon layer being repaired (MakeValid may
// split a polygon in parts).
func (sc layerScan) targetType(repair bool) string {
	if sc.mixedKind || sc.hasM || sc.family == "" || sc.curves > 0 {
		return ""
	}
	name := ""
	if len(sc.types) == 1 {
		for t := range sc.types {
			name = geomNames[t]
		}
	}
	if sc.promote || (repair && sc.family == "polygon") {
		name = multiOf[sc.family]
	}
	if name != "" && sc.hasZ {
		name += "Z"
	}
	return name
}

// scanFirst, set by tests only, scans every layer before it is written,
// as before the one-read paths: their outcomes are held to it.
var scanFirst bool

func (e *Engine) convertVector(ctx context.Context, ds *godal.Dataset, s *preflight.Source, workDir string, r recipe.Recipe, rec *recorder) ([]recipe.Output, error) {
	layers := ds.Layers()
	// Preflight every layer before writing anything: budget, CRS, emptiness,
	// geometry validity under the policy.
	var total int64
	var scans []layerScan
	var skipped, tables []string
	for _, l := range layers {
		// The declared count first, without reading the features (a forced
		// count may mean a full read).
		if err := budget.NewVectorMeter(l.Name(), r).Declared(declaredFeatureCount(l)); err != nil {
			return nil, err
		}
		n, err := l.FeatureCount(rec.opt())
		if err != nil {
			return nil, classify("gdal.FeatureCount", err, "", fault.CorruptSource, "layer %q cannot be read", l.Name())
		}
		total += int64(n)
		if r.MaxFeatures > 0 && total > r.MaxFeatures {
			return nil, fault.Data(fault.BudgetExceeded, "source has more than %d features (budget)", r.MaxFeatures)
		}
		if n == 0 {
			skipped = append(skipped, l.Name())
			continue
		}
		// An attribute table has no geometry, so no CRS to require: it is
		// refused or written as plain Parquet (docs/decisions/0091).
		if !hasGeometryColumn(l) {
			tables = append(tables, l.Name())
			scans = append(scans, layerScan{name: l.Name(), features: int64(n), table: true})
			continue
		}
		if err := layerCRS(l, r, rec); err != nil {
			return nil, err
		}
		// A single layer is taken as declared and proven while it is
		// written (copyFlatGeobuf, writeGeoParquet): one read of the
		// source. A source of several layers is scanned whole first, so
		// that one refused layer leaves no other written
		// (docs/decisions/0112, 0114).
		sc, declared := layerScan{}, false
		fgb := r.VectorFormat == recipe.FormatFlatGeobuf
		if !scanFirst && len(layers) == 1 && (!fgb || flatGeobufRefuses(l) == "" && fieldsCopied(l)) {
			sc, declared = declaredScan(l, int64(n))
		}
		if !declared {
			if sc, err = scanLayer(ctx, l, budget.NewVectorMeter(l.Name(), r)); err != nil {
				return nil, err
			}
		}
		if err := vetScan(sc, l, r, rec); err != nil {
			return nil, err
		}
		scans = append(scans, sc)
	}
	if len(tables) > 0 && r.AttributeTables != recipe.AttributeTablesParquet {
		return nil, noGeometry(tables, len(scans) > len(tables))
	}
	if len(scans) == 0 {
		return nil, fault.Data(fault.EmptyDataset, "every layer is empty (%s)", strings.Join(skipped, ", "))
	}
	for _, name := range skipped {
		rec.warn(fmt.Sprintf("empty layer %q skipped", name))
	}
	stem := formats.Stem(filepath.Base(s.Path))
	multi := len(scans) > 1
	extOf := func(sc layerScan) string {
		if sc.table {
			return recipe.Formats[recipe.FormatParquet].Extension
		}
		return recipe.Formats[r.VectorFormat].Extension
	}
	// One output per layer, never two layers in one name: SafeName is
	// one-to-one by construction, and this proves it for the source at hand
	// before anything is written.
	byName := map[string]string{}
	for _, sc := range scans {
		name := layerFileName(stem, sc.name, multi, extOf(sc))
		if other, dup := byName[name]; dup {
			return nil, fault.Data(fault.SchemaMismatch,
				"layers %q and %q would both be written as %s; rename one of them", other, sc.name, name)
		}
		byName[name] = sc.name
	}
	var outs []recipe.Output
	for _, sc := range scans {
		if err := ctx.Err(); err != nil {
			return outs, err
		}
		dst := filepath.Join(workDir, layerFileName(stem, sc.name, multi, extOf(sc)))
		o, digest, err := writeLayer(ctx, ds, &sc, dst, r, rec.child())
		if errors.Is(err, errNotAsDeclared) {
			// A one-read path met a feature not as declared: scan, then
			// write as any layer.
			if sc, err = rescan(ctx, ds, sc.name, r, rec); err == nil {
				o, digest, err = writeLayer(ctx, ds, &sc, dst, r, rec.child())
			}
		}
		if err != nil {
			return outs, err
		}
		if e.beforeCheck != nil {
			e.beforeCheck(o.Path)
		}
		checkStart := time.Now()
		if o.Fidelity, err = vectorFidelity(ctx, ds, sc, o.Path, r, digest, rec); err != nil {
			os.Remove(o.Path)
			return outs, err
		}
		o.Stats["fidelity_ns"] = time.Since(checkStart).Nanoseconds()
		o.Stats["source_bytes"] = s.Bytes
		outs = append(outs, o)
	}
	return outs, layersOneToOne(ds, outs, rec)
}

// writeLayer writes one layer's output: an attribute table as plain
// Parquet and any layer as GeoParquet unless FlatGeobuf is asked, a layer
// of a declared scan in one read of the source (writeGeoParquet,
// copyFlatGeobuf; errNotAsDeclared, dst removed, when a feature is not as
// declared), else by ogr2ogr. The digest, when not nil, is that of the
// source's features as the writer was handed them.
func writeLayer(ctx context.Context, ds *godal.Dataset, sc *layerScan, dst string, r recipe.Recipe, rec *recorder) (recipe.Output, *geoparquet.Digest, error) {
	switch {
	case r.VectorFormat != recipe.FormatFlatGeobuf || sc.table:
		return writeGeoParquet(ctx, ds, sc, dst, r, rec)
	case sc.declared:
		return copyFlatGeobuf(ctx, ds, *sc, dst, r, rec)
	}
	o, err := writeFlatGeobuf(ds, *sc, dst, r, rec)
	return o, nil, err
}

// vetScan refuses a scanned layer its conversion cannot keep (nulls and
// fields FlatGeobuf cannot hold, curves GeoParquet cannot, invalid
// geometries under the strict policy) and warns of what it keeps.
func vetScan(sc layerScan, l godal.Layer, r recipe.Recipe, rec *recorder) error {
	if sc.features == sc.nulls {
		// Features without any geometry are still features: GeoParquet
		// writes them with null geometries (geometry_types [], no
		// bbox); FlatGeobuf is refused below.
		rec.warn(fmt.Sprintf("layer %q: none of its %d features has a geometry (written with null geometries)", sc.name, sc.features))
	}
	if sc.curves > 0 && r.VectorFormat != recipe.FormatFlatGeobuf && r.WithDefaults().Curves != recipe.CurvesLinearize {
		return curveError(sc.name, sc.curves)
	}
	if sc.nulls > 0 && r.VectorFormat == recipe.FormatFlatGeobuf {
		// GDAL 3.6's FlatGeobuf writer skips a feature without geometry
		// (it has no encoding for one) and reports success: the output
		// would silently hold fewer features than the source.
		return fault.Data(fault.UnsupportedFormat,
			"layer %q has %d of %d features without geometry (null or empty); FlatGeobuf output cannot hold them and would drop them: convert with GeoParquet (the default vector format), which keeps them as null geometries",
			sc.name, sc.nulls, sc.features)
	}
	if bad := flatGeobufRefuses(l); bad != "" && r.VectorFormat == recipe.FormatFlatGeobuf {
		return fault.Data(fault.UnsupportedFormat,
			"layer %q has field %s, which FlatGeobuf output cannot hold (GDAL writes a Time as an empty DateTime and fails on lists): convert with GeoParquet (the default vector format), which keeps it as a Parquet TIME or LIST column",
			sc.name, bad)
	}
	switch policy := r.WithDefaults().GeometryPolicy; {
	case sc.invalid == 0:
	case policy == recipe.GeometryStrict:
		return fault.Data(fault.InvalidGeometry,
			"layer %q: %d of %d geometries are invalid (self-intersections, bad rings …); policy is strict: repair them (e.g. ST_MakeValid) or convert with geometry policy \"repair\" or \"keep\"",
			sc.name, sc.invalid, sc.features)
	case policy == recipe.GeometryKeep:
		rec.warn(fmt.Sprintf("layer %q: %d invalid geometries kept as they are (geometry policy \"repair\" makes them valid)", sc.name, sc.invalid))
	}
	return nil
}

// rescan scans a layer the one-read path gave up on, and vets it.
func rescan(ctx context.Context, ds *godal.Dataset, name string, r recipe.Recipe, rec *recorder) (layerScan, error) {
	l := ds.LayerByName(name)
	if l == nil {
		return layerScan{}, fault.Data(fault.CorruptSource, "layer %q cannot be opened again", name)
	}
	sc, err := scanLayer(ctx, *l, budget.NewVectorMeter(name, r))
	if err != nil {
		return sc, err
	}
	return sc, vetScan(sc, *l, r, rec)
}

// vectorFidelity checks one layer's output against the source layer.
func vectorFidelity(ctx context.Context, ds *godal.Dataset, sc layerScan, dst string, r recipe.Recipe, digest *geoparquet.Digest, rec *recorder) (*recipe.Fidelity, error) {
	l := ds.LayerByName(sc.name)
	if l == nil {
		return nil, fault.Data(fault.CorruptSource, "layer %q cannot be opened again", sc.name)
	}
	if r.VectorFormat == recipe.FormatFlatGeobuf && !sc.table {
		return flatGeobufFidelity(ctx, *l, sc, dst, r, digest, rec)
	}
	return geoParquetFidelity(*l, sc, dst, digest)
}

// noGeometry refuses a source holding attribute tables (layers without a
// geometry column) under recipe.AttributeTablesRefuse. The whole source
// is refused, its spatial layers too: an output set that silently left
// out a table would not be the source (docs/decisions/0091).
func noGeometry(tables []string, spatial bool) error {
	q := make([]string, len(tables))
	for i, t := range tables {
		q[i] = fmt.Sprintf("%q", t)
	}
	what := fmt.Sprintf("layer %s has no geometry column (an attribute table)", q[0])
	if len(q) > 1 {
		what = fmt.Sprintf("layers %s have no geometry column (attribute tables)", strings.Join(q, ", "))
	}
	also := ""
	if spatial {
		also = "; the source's spatial layers are not converted either (a source converts whole or not at all)"
	}
	return fault.Data(fault.NoGeometry, "%s; set attribute_tables: parquet in the recipe (vector settings) to write it as plain Parquet%s", what, also)
}

// layerCRS checks a layer's CRS (present, valid, georeferencing), or
// the recipe's assign_crs for a layer without one.
func layerCRS(l godal.Layer, r recipe.Recipe, rec *recorder) error {
	what := fmt.Sprintf("layer %q", l.Name())
	sr := l.SpatialRef()
	if sr == nil || isNullHandle(sr) {
		if r.AssignCRS != "" {
			as, err := assignedSRS(r.AssignCRS)
			if err != nil {
				return err
			}
			defer as.Close()
			wkt, _ := as.WKT()
			rec.warn(fmt.Sprintf("%s declares no CRS: assigned %s (recipe assign_crs)", what, r.AssignCRS))
			return checkCRS(wkt, what, rec)
		}
		return checkCRS("", what, rec)
	}
	if r.AssignCRS != "" {
		if err := checkDeclaredCRS(sr, r.AssignCRS, what); err != nil {
			return err
		}
	}
	wkt, err := sr.WKT()
	if err != nil {
		return fault.DataWrap(fault.InvalidCRS, err, "%s has a CRS that cannot be exported", what)
	}
	return checkCRS(wkt, what, rec)
}

// isNull reports a feature without geometry. godal hands out a Geometry
// wrapping a NULL handle in that case and has no accessor for it; calling
// any OGR_G_* function on it would log a CE_Failure.
func isNull(g *godal.Geometry) bool { return g == nil || isNullHandle(g) }

// isNullHandle reports a godal wrapper (pointer to a struct with a C handle
// field named "handle") around a NULL handle. Tests pin this to godal's layout.
func isNullHandle(p any) bool {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return true
	}
	h := v.Elem().FieldByName("handle")
	return !h.IsValid() || h.IsNil()
}

func flatten(t godal.GeometryType) godal.GeometryType {
	// wkb25DBit and the ISO Z/M offsets.
	t &^= godal.GeometryType(0x80000000)
	return godal.GeometryType(int(t) % 1000)
}

// scanLayer reads every feature of a layer; meter refuses it as soon as
// what its conversion would hold is over the memory budget (checked before
// the geometry is validated, which may take as much again).
func scanLayer(ctx context.Context, l godal.Layer, meter *budget.VectorMeter) (layerScan, error) {
	sc := layerScan{name: l.Name(), types: map[godal.GeometryType]int64{}}
	// OGR_G_IsValid reports each invalidity through CPLError (GEOS
	// "Self-intersection at …"); the count is what matters, so silence them
	// on this OS thread for the scan.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pushQuiet()
	defer popQuiet()
	l.ResetReading()
	defer l.ResetReading()
	for f := l.NextFeature(); f != nil; f = l.NextFeature() {
		sc.features++
		g := f.Geometry()
		null := isNull(g)
		var size int64
		if !null {
			size = wkbSize(g)
		}
		if err := meter.Add(size); err != nil {
			f.Close()
			return sc, err
		}
		switch {
		case null || g.Empty():
			sc.nulls++
		default:
			t := g.Type()
			iso := (uint32(t) &^ 0x80000000) / 1000
			sc.hasZ = sc.hasZ || uint32(t)&0x80000000 != 0 || iso == 1 || iso == 3
			sc.hasM = sc.hasM || iso == 2 || iso == 3
			ft := flatten(t)
			if lin, ok := linearOf[ft]; ok || hasCurve(g) {
				sc.curves++
				if ok {
					ft = lin
				}
			}
			sc.types[ft]++
			if !g.Valid() {
				sc.invalid++
			}
		}
		f.Close()
		if sc.features%4096 == 0 && ctx.Err() != nil {
			return sc, ctx.Err()
		}
	}
	family := map[godal.GeometryType]string{
		godal.GTPoint: "point", godal.GTMultiPoint: "point",
		godal.GTLineString: "line", godal.GTMultiLineString: "line",
		godal.GTPolygon: "polygon", godal.GTMultiPolygon: "polygon",
	}
	fams := map[string]int{}
	for t := range sc.types {
		fams[family[t]]++
	}
	sc.mixedKind = len(fams) > 1
	for f, n := range fams {
		if f != "" && n > 1 {
			sc.promote = true
		}
		if len(fams) == 1 {
			sc.family = f
		}
	}
	return sc, nil
}

// layerFileName is the work-dir file name of one layer's output: the
// source stem, and for a multi-layer source the layer's safe name.
func layerFileName(stem, layer string, multi bool, ext string) string {
	if multi {
		return stem + "." + recipe.SafeName(layer) + ext
	}
	return stem + ext
}
