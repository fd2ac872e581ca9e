#!/usr/bin/python3
"""Outside judge: compares a source with geomigrate's output through GDAL/OGR
(never geomigrate's own readers) and prints one JSON object on stdout:

    {"checked": [...], "differences": [{"property": P, "detail": D}, ...]}

Each difference names the property that differs ("pixels", "mask",
"mask:band1", "gcps", "metadata:RPC", "field:ts", "geometry:M" ...), so the
caller can accept it only when a warning of the run report names it.

Usage:
  gdaljudge.py raster SRC OUT [--assign-crs EPSG:n]
      SRC and OUT are GDAL dataset names (a /vsizip/ path works). Compares
      size, band types, pixels block by block, nodata, scale/offset, units,
      descriptions, colour interpretation and tables, masks (per dataset and
      per band, alpha), GCPs and their CRS, RPCs, metadata domains (dataset
      and band), geotransform and CRS; and validates OUT as a COG.
  gdaljudge.py vector SRC OUT [--src-layer L] [--out-layer L] [--rows FILE]
               [--assign-crs EPSG:n] [--open-option K=V ...]
      Compares every feature's ISO WKB and attribute values as multisets
      (row order is not part of the data). OUT is read with OGR, or, when
      --rows is given, FILE holds the output's rows as JSON lines written by
      scripts/hyparquet/rows.mjs (GDAL 3.6 has no Parquet driver).
      Documented normalisation: a single geometry of the source equals a
      one-part multi geometry of the output (multi-promotion).
Exit status: 0 when the comparison ran (whatever it found), 1 when it could
not (a dataset would not open), 2 on bad usage.
"""
import argparse
import base64
import collections
import datetime
import json
import math
import sys

from osgeo import gdal, ogr, osr

gdal.UseExceptions()
ogr.UseExceptions()
osr.UseExceptions()

# Metadata domains that describe the file's layout, not its content: a COG
# has its own (tiles, compression, interleaving, overviews).
STRUCTURAL_DOMAINS = {"IMAGE_STRUCTURE", "DERIVED_SUBDATASETS", "SUBDATASETS", "COLOR_PROFILE",
                      "xml:XMP", "TILING_SCHEME", "_DEBUG_"}
# Keys of the default domain the GTiff/COG writers set themselves.
WRITER_KEYS = {"AREA_OR_POINT", "TIFFTAG_DATETIME", "TIFFTAG_SOFTWARE", "TIFFTAG_DOCUMENTNAME",
               "LAYOUT", "OVERVIEW_RESAMPLING", "COMPRESSION", "INTERLEAVE"}


class Diffs:
    def __init__(self):
        self.items = []
        self.checked = []

    def check(self, name):
        if name not in self.checked:
            self.checked.append(name)

    def add(self, prop, detail):
        self.items.append({"property": prop, "detail": detail})

    def dump(self, extra=None):
        out = {"checked": self.checked, "differences": self.items}
        if extra:
            out.update(extra)
        print(json.dumps(out, sort_keys=True))


def srs_of(wkt_or_srs):
    if not wkt_or_srs:
        return None
    if isinstance(wkt_or_srs, osr.SpatialReference):
        return wkt_or_srs
    s = osr.SpatialReference()
    s.SetFromUserInput(wkt_or_srs)
    return s


def same_srs(a, b):
    if a is None or b is None:
        return a is None and b is None
    # GeoParquet's default CRS is OGC:CRS84, EPSG:4326 with longitude first.
    return bool(a.IsSame(b, ["CRITERION=EQUIVALENT_EXCEPT_AXIS_ORDER_GEOGCRS", "IGNORE_DATA_AXIS_TO_SRS_AXIS_MAPPING=YES"]))


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def same_text_values(a, b):
    """Metadata values equal as text, or as numbers (RPC coefficients are
    rewritten with other spacing and digits by the TIFF writer)."""
    if a == b:
        return True
    ta, tb = str(a).split(), str(b).split()
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb):
        fx, fy = num(x), num(y)
        if fx is None or fy is None:
            if x != y:
                return False
        elif not math.isclose(fx, fy, rel_tol=1e-12, abs_tol=1e-12):
            return False
    return True


def compare_dicts(d, prop, src, out):
    for k in sorted(set(src) | set(out)):
        if k not in out:
            d.add(prop, f"{k} missing from the output (source: {src[k]!r})")
        elif k not in src:
            continue  # added by the writer
        elif not same_text_values(src[k], out[k]):
            d.add(prop, f"{k}: source {src[k]!r}, output {out[k]!r}")


def mask_bytes(band):
    import numpy as np
    a = band.ReadAsArray()
    return (a > 0).astype(np.uint8)


def compare_masks(d, s, o):
    import numpy as np
    d.check("mask")
    for i in range(1, s.RasterCount + 1):
        sb, ob = s.GetRasterBand(i), o.GetRasterBand(i)
        sf, of = sb.GetMaskFlags(), ob.GetMaskFlags()
        prop = "mask" if sf & gdal.GMF_PER_DATASET else f"mask:band{i}"
        if sf == gdal.GMF_ALL_VALID and of == gdal.GMF_ALL_VALID:
            continue
        if sf & gdal.GMF_NODATA and of & gdal.GMF_NODATA:
            continue  # nodata is compared as nodata; pixels as pixels
        sm, om = mask_bytes(sb.GetMaskBand()), mask_bytes(ob.GetMaskBand())
        n = int(np.count_nonzero(sm != om))
        if n:
            d.add(prop, f"band {i}: {n} of {sm.size} pixels differ in validity "
                        f"(source {int(np.count_nonzero(sm == 0))} masked, output {int(np.count_nonzero(om == 0))}; "
                        f"mask flags source {sf}, output {of})")


def compare_pixels(d, s, o):
    d.check("pixels")
    bad = []
    for i in range(1, s.RasterCount + 1):
        sb, ob = s.GetRasterBand(i), o.GetRasterBand(i)
        if sb.DataType != ob.DataType:
            d.add("data_type", f"band {i}: source {gdal.GetDataTypeName(sb.DataType)}, output {gdal.GetDataTypeName(ob.DataType)}")
            continue
        step = 256
        blocks = 0
        for y in range(0, s.RasterYSize, step):
            h = min(step, s.RasterYSize - y)
            for x in range(0, s.RasterXSize, step):
                w = min(step, s.RasterXSize - x)
                if sb.ReadRaster(x, y, w, h) != ob.ReadRaster(x, y, w, h):
                    blocks += 1
        if blocks:
            bad.append(f"band {i}: {blocks} blocks of {step}x{step} differ")
    for b in bad:
        d.add("pixels", b)


def gcp_tuple(g):
    return (g.GCPPixel, g.GCPLine, g.GCPX, g.GCPY, g.GCPZ)


def compare_raster(args):
    d = Diffs()
    s = gdal.Open(args.src)
    o = gdal.Open(args.out)
    d.check("size")
    if (s.RasterXSize, s.RasterYSize, s.RasterCount) != (o.RasterXSize, o.RasterYSize, o.RasterCount):
        d.add("size", f"source {s.RasterXSize}x{s.RasterYSize}x{s.RasterCount}, output {o.RasterXSize}x{o.RasterYSize}x{o.RasterCount}")
        d.dump()
        return
    compare_pixels(d, s, o)
    compare_masks(d, s, o)

    d.check("bands")
    for i in range(1, s.RasterCount + 1):
        sb, ob = s.GetRasterBand(i), o.GetRasterBand(i)
        pairs = {
            "nodata": (sb.GetNoDataValue(), ob.GetNoDataValue()),
            "scale": (sb.GetScale(), ob.GetScale()),
            "offset": (sb.GetOffset(), ob.GetOffset()),
            "unit": (sb.GetUnitType() or "", ob.GetUnitType() or ""),
            "description": (sb.GetDescription() or "", ob.GetDescription() or ""),
            "color_interpretation": (gdal.GetColorInterpretationName(sb.GetColorInterpretation()),
                                     gdal.GetColorInterpretationName(ob.GetColorInterpretation())),
        }
        # A TIFF's first band of a MINISBLACK image is Gray: GTiff has no
        # way to write "Undefined" there, and nothing about the values changes.
        if i == 1 and pairs["color_interpretation"] == ("Undefined", "Gray"):
            pairs["color_interpretation"] = ("Gray", "Gray")
        for name, (a, b) in pairs.items():
            d.check(name)
            # A scale of 1 and an offset of 0 are GDAL's "none".
            if name == "scale" and (a in (None, 1.0)) and (b in (None, 1.0)):
                continue
            if name == "offset" and (a in (None, 0.0)) and (b in (None, 0.0)):
                continue
            if isinstance(a, float) and isinstance(b, float) and (a == b or (math.isnan(a) and math.isnan(b))):
                continue
            if a != b:
                d.add(name, f"band {i}: source {a!r}, output {b!r}")
        d.check("color_table")
        sc, oc = sb.GetColorTable(), ob.GetColorTable()
        if (sc is None) != (oc is None):
            d.add("color_table", f"band {i}: source {'has' if sc else 'has no'} colour table, output {'has' if oc else 'has no'}")
        elif sc is not None:
            se = [sc.GetColorEntry(k) for k in range(sc.GetCount())]
            oe = [oc.GetColorEntry(k) for k in range(oc.GetCount())]
            n = min(len(se), len(oe))
            # The TIFF writer pads a table to 2^bits entries.
            if se[:n] != oe[:n] or any(e != (0, 0, 0, 255) and e != (0, 0, 0, 0) for e in oe[n:]) or len(oe) < len(se):
                d.add("color_table", f"band {i}: {len(se)} source entries, {len(oe)} output entries, differing")
        d.check("metadata")
        compare_metadata(d, sb, ob, f"band{i}:")

    d.check("geotransform")
    sg = s.GetGeoTransform(can_return_null=True)
    og = o.GetGeoTransform(can_return_null=True)
    if (sg is None) != (og is None) or (sg and any(not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9) for a, b in zip(sg, og))):
        d.add("geotransform", f"source {sg}, output {og}")

    d.check("crs")
    ss = srs_of(args.assign_crs) if args.assign_crs and not s.GetSpatialRef() else s.GetSpatialRef()
    if not same_srs(ss, o.GetSpatialRef()):
        d.add("crs", f"source {ss.GetName() if ss else None}, output {o.GetSpatialRef().GetName() if o.GetSpatialRef() else None}")

    d.check("gcps")
    sgcp, ogcp = s.GetGCPs() or [], o.GetGCPs() or []
    if len(sgcp) != len(ogcp):
        d.add("gcps", f"source {len(sgcp)} GCPs, output {len(ogcp)}")
    else:
        diff = [k for k, (a, b) in enumerate(zip(sgcp, ogcp))
                if any(not math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-9) for x, y in zip(gcp_tuple(a), gcp_tuple(b)))]
        if diff:
            d.add("gcps", f"{len(diff)} of {len(sgcp)} GCPs differ (first: #{diff[0]})")
        if sgcp and not same_srs(s.GetGCPSpatialRef(), o.GetGCPSpatialRef()):
            d.add("gcps", "GCP CRS differs")

    compare_metadata(d, s, o, "")

    d.check("cog")
    try:
        from osgeo_utils.samples import validate_cloud_optimized_geotiff as v
        warnings, errors, _ = v.validate(args.out, full_check=True)
        for e in errors:
            d.add("cog", e)
    except ImportError:
        d.add("cog", "validate_cloud_optimized_geotiff not importable")
    d.dump()


def compare_metadata(d, s, o, prefix):
    d.check("metadata")
    # GDAL's metadata readers fill IMAGERY (and at times RPC, IMD) on
    # request without listing them among the domains.
    listed = list(s.GetMetadataDomainList() or [])
    for extra in ("IMAGERY", "RPC", "IMD", "GEOLOCATION"):
        if extra not in listed and s.GetMetadata(extra):
            listed.append(extra)
    domains = [x for x in listed if x not in STRUCTURAL_DOMAINS]
    for dom in domains:
        if dom.startswith("xml:"):
            a, b = s.GetMetadata(dom), o.GetMetadata(dom)
            if a != b:
                d.add(f"metadata:{prefix}{dom}", "XML document missing or different")
            continue
        src = s.GetMetadata_Dict(dom) or {}
        out = o.GetMetadata_Dict(dom) or {}
        if dom == "":
            src = {k: v for k, v in src.items() if k not in WRITER_KEYS}
        compare_dicts(d, f"metadata:{prefix}{dom or 'default'}", src, out)


# ---- vectors -------------------------------------------------------------

def canon_number(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    f = float(v)
    if math.isfinite(f) and f.is_integer() and abs(f) < 2 ** 53:
        return int(f)
    if math.isnan(f):
        return "NaN"
    return repr(f)


def canon(v):
    """One form for a value however it was read: numbers by value, lists
    element-wise, times as UTC instants with milliseconds."""
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        return [canon(x) for x in v]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return canon_number(v)
    return v


def ogr_datetime(f, i, date_only):
    y, mo, da, h, mi, s, tz = f.GetFieldAsDateTime(i)
    sec = int(s)
    ms = int(round((s - sec) * 1000))
    dt = datetime.datetime(y, mo, da, h, mi, sec, ms * 1000, tzinfo=datetime.timezone.utc)
    if tz > 1:  # 100 is UTC; each unit one quarter hour
        dt -= datetime.timedelta(minutes=15 * (tz - 100))
    if date_only:
        return dt.strftime("%Y-%m-%d")
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def ogr_value(f, i, defn):
    if not f.IsFieldSetAndNotNull(i):
        return None
    t, st = defn.GetType(), defn.GetSubType()
    if t in (ogr.OFTInteger, ogr.OFTInteger64):
        v = f.GetFieldAsInteger64(i)
        return bool(v) if st == ogr.OFSTBoolean else v
    if t == ogr.OFTReal:
        return f.GetFieldAsDouble(i)
    if t == ogr.OFTDate:
        return ogr_datetime(f, i, True)
    if t == ogr.OFTDateTime:
        return ogr_datetime(f, i, False)
    if t == ogr.OFTIntegerList:
        v = f.GetFieldAsIntegerList(i)
        return [bool(x) for x in v] if st == ogr.OFSTBoolean else v
    if t == ogr.OFTInteger64List:
        return f.GetFieldAsInteger64List(i)
    if t == ogr.OFTRealList:
        return f.GetFieldAsDoubleList(i)
    if t == ogr.OFTStringList:
        # The bindings give None for a set, non-null empty list.
        return f.GetFieldAsStringList(i) or []
    if t == ogr.OFTBinary:
        return f.GetFieldAsBinary(i).hex()
    return f.GetFieldAsString(i)


def row_value(v, src_defn):
    """A value of a rows.mjs line in the form ogr_value gives."""
    if v is None:
        return None
    if isinstance(v, dict) and "$bytes" in v:
        return v["$bytes"]
    if isinstance(v, dict) and "$date" in v:
        iso = v["$date"]
        if src_defn is not None and src_defn.GetType() == ogr.OFTDate:
            return iso[:10]
        return iso
    return v


def geometry_key(g):
    if g is None:
        return None
    return g.ExportToIsoWkb(ogr.wkbNDR).hex()


def geometry_kind(g):
    if g is None:
        return "null"
    t = g.GetGeometryType()
    return ogr.GeometryTypeToName(t)


def promote(src_geom, out_geom):
    """Multi-promotion, the documented normalisation: the source geometry
    promoted to the output's multi type when the output holds one part."""
    if src_geom is None or out_geom is None:
        return src_geom
    st, ot = ogr.GT_Flatten(src_geom.GetGeometryType()), ogr.GT_Flatten(out_geom.GetGeometryType())
    multi = {ogr.wkbPoint: ogr.wkbMultiPoint, ogr.wkbLineString: ogr.wkbMultiLineString,
             ogr.wkbPolygon: ogr.wkbMultiPolygon, ogr.wkbCurvePolygon: ogr.wkbMultiSurface,
             ogr.wkbCompoundCurve: ogr.wkbMultiCurve, ogr.wkbCircularString: ogr.wkbMultiCurve}
    if multi.get(st) == ot:
        return ogr.ForceTo(src_geom.Clone(), out_geom.GetGeometryType())
    return src_geom


def source_features(layer):
    defn = layer.GetLayerDefn()
    fields = [defn.GetFieldDefn(i) for i in range(defn.GetFieldCount())]
    layer.ResetReading()
    for f in layer:
        g = f.GetGeometryRef()
        yield (g.Clone() if g is not None else None), {fd.GetName(): canon(ogr_value(f, i, fd)) for i, fd in enumerate(fields)}


def ogr_output_features(layer, src_fields):
    """The output's features; a date the output format holds as a
    timestamp at midnight UTC (FlatGeobuf has no date type) is read back
    as the date, a documented normalisation."""
    for g, attrs in source_features(layer):
        for k, v in attrs.items():
            fd = src_fields.get(k)
            if fd is not None and fd.GetType() == ogr.OFTDate and isinstance(v, str) and v.endswith("T00:00:00.000Z"):
                attrs[k] = v[:10]
        yield g, attrs


def rows_output_features(path, src_fields):
    with open(path) as fh:
        for line in fh:
            row = json.loads(line)
            wkb = row.pop("$geometry", None)
            g = ogr.CreateGeometryFromWkb(bytes.fromhex(wkb)) if wkb else None
            yield g, {k: canon(row_value(v, src_fields.get(k))) for k, v in row.items()}


def dims(g):
    if g is None:
        return ""
    return ("Z" if g.Is3D() else "") + ("M" if g.IsMeasured() else "")


def compare_vector(args):
    d = Diffs()
    oo = [x for x in (args.open_option or [])]
    sds = gdal.OpenEx(args.src, gdal.OF_VECTOR, open_options=oo)
    sl = sds.GetLayerByName(args.src_layer) if args.src_layer else sds.GetLayer(0)
    sdefn = sl.GetLayerDefn()
    src_fields = {sdefn.GetFieldDefn(i).GetName(): sdefn.GetFieldDefn(i) for i in range(sdefn.GetFieldCount())}
    src = list(source_features(sl))
    if args.rows:
        out = list(rows_output_features(args.rows, src_fields))
        if args.geo:
            compare_geo(d, sl, args)
    else:
        ods = gdal.OpenEx(args.out, gdal.OF_VECTOR)
        ol = ods.GetLayerByName(args.out_layer) if args.out_layer else ods.GetLayer(0)
        out = list(ogr_output_features(ol, src_fields))
        out_crs = ol.GetSpatialRef()
        out_type = ol.GetGeomType()
        d.check("crs")
        ss = sl.GetSpatialRef() or (srs_of(args.assign_crs) if args.assign_crs else None)
        if sl.GetGeomType() != ogr.wkbNone and not same_srs(ss, out_crs):
            d.add("crs", "layer CRS differs")
        d.check("geometry_type")
        if sl.GetGeomType() != ogr.wkbNone and out_type is not None:
            st, ot = sl.GetGeomType(), out_type
            if st != ot and promote_type(st) != ot:
                d.add("geometry_type", f"source {ogr.GeometryTypeToName(st)}, output {ogr.GeometryTypeToName(ot)}")

    d.check("features")
    if len(src) != len(out):
        d.add("features", f"source {len(src)} features, output {len(out)}")

    # Geometries: as a multiset of ISO WKB after multi-promotion.
    d.check("geometry")
    out_kinds = collections.Counter()
    for g, _ in out:
        out_kinds[(ogr.GT_Flatten(g.GetGeometryType()) if g else None)] += 1
    # The output's multi type (if any) decides promotion; one type per layer.
    sample = next((g for g, _ in out if g is not None), None)
    sg = collections.Counter(geometry_key(promote(g, sample)) for g, _ in src)
    og = collections.Counter(geometry_key(g) for g, _ in out)
    if sg != og:
        missing = sg - og
        extra = og - sg
        sd = collections.Counter(dims(g) for g, _ in src if g is not None)
        od = collections.Counter(dims(g) for g, _ in out if g is not None)
        skinds = collections.Counter(geometry_kind(g) for g, _ in src)
        okinds = collections.Counter(geometry_kind(g) for g, _ in out)
        prop = "geometry"
        if sd != od:
            lost = "".join(c for c in "ZM" if any(c in k for k in sd) and not any(c in k for k in od))
            prop = f"geometry:{lost or 'dimensions'}"
        elif {k.replace("Multi", "").strip() for k in skinds} != {k.replace("Multi", "").strip() for k in okinds}:
            prop = "geometry:type"
        d.add(prop, f"{sum(missing.values())} source geometries not in the output, {sum(extra.values())} output geometries not in the source "
                    f"(source kinds {dict(skinds)}, output {dict(okinds)})")

    # Attributes: one multiset per source field, then whole rows.
    for name, fd in src_fields.items():
        prop = f"field:{name}"
        d.check(prop)
        if out and all(name not in a for _, a in out):
            d.add(prop, "field missing from the output")
            continue
        sv = collections.Counter(json.dumps(a.get(name), sort_keys=True) for _, a in src)
        ov = collections.Counter(json.dumps(a.get(name), sort_keys=True) for _, a in out)
        if sv != ov:
            miss = sorted((sv - ov).elements())[:3]
            extra = sorted((ov - sv).elements())[:3]
            d.add(prop, f"{sum((sv - ov).values())} values differ ({ogr.GetFieldTypeName(fd.GetType())}); e.g. source {miss}, output {extra}")

    d.check("rows")
    if not d.items:
        def rowkey(g, a, sample):
            return json.dumps([geometry_key(g), {k: a.get(k) for k in src_fields}], sort_keys=True)
        sr = collections.Counter(rowkey(promote(g, sample), a, sample) for g, a in src)
        orr = collections.Counter(rowkey(g, a, sample) for g, a in out)
        if sr != orr:
            d.add("rows", f"{sum((sr - orr).values())} rows pair geometries and values differently")
    d.dump({"source_features": len(src), "output_features": len(out)})


def compare_geo(d, sl, args):
    """The GeoParquet `geo` metadata's CRS and geometry types against the
    source layer (the metadata as hyparquet read it)."""
    with open(args.geo) as fh:
        geo = json.load(fh)
    if geo is None:
        if sl.GetGeomType() != ogr.wkbNone:
            d.add("geo", "no geo metadata")
        return
    col = geo["columns"][geo["primary_column"]]
    d.check("crs")
    if "crs" not in col:
        out = osr.SpatialReference()
        out.SetFromUserInput("OGC:CRS84")
    elif col["crs"] is None:
        out = None
    else:
        out = osr.SpatialReference()
        out.SetFromUserInput(json.dumps(col["crs"]))
    ss = sl.GetSpatialRef() or (srs_of(args.assign_crs) if args.assign_crs else None)
    if not same_srs(ss, out):
        d.add("crs", f"source {ss.GetName() if ss else None}, geo metadata {out.GetName() if out else None}")
    d.check("geometry_type")
    st = sl.GetGeomType()
    if st not in (ogr.wkbUnknown, ogr.wkbNone) and col.get("geometry_types"):
        names = {ogr.GeometryTypeToName(t).replace(" ", "") for t in (st, promote_type(st))}
        want = {n.replace("3D", "").replace("Measured", "") for n in names}
        got = {t.split(" ")[0] for t in col["geometry_types"]}
        if not got <= {w for w in want}:
            d.add("geometry_type", f"source layer {ogr.GeometryTypeToName(st)}, geo metadata {col['geometry_types']}")


def promote_type(t):
    flat = ogr.GT_Flatten(t)
    multi = {ogr.wkbPoint: ogr.wkbMultiPoint, ogr.wkbLineString: ogr.wkbMultiLineString,
             ogr.wkbPolygon: ogr.wkbMultiPolygon}.get(flat)
    if multi is None:
        return t
    if ogr.GT_HasZ(t):
        multi = ogr.GT_SetZ(multi)
    if ogr.GT_HasM(t):
        multi = ogr.GT_SetM(multi)
    return multi


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="kind", required=True)
    r = sub.add_parser("raster")
    r.add_argument("src")
    r.add_argument("out")
    r.add_argument("--assign-crs")
    v = sub.add_parser("vector")
    v.add_argument("src")
    v.add_argument("out", nargs="?")
    v.add_argument("--src-layer")
    v.add_argument("--out-layer")
    v.add_argument("--rows")
    v.add_argument("--geo", help="the output's geo metadata (rows.mjs --geo), with --rows")
    v.add_argument("--assign-crs")
    v.add_argument("--open-option", action="append")
    args = p.parse_args()
    try:
        if args.kind == "raster":
            compare_raster(args)
        else:
            if not args.rows and not args.out:
                p.error("vector: OUT or --rows")
            compare_vector(args)
    except RuntimeError as e:
        print(f"gdaljudge: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
