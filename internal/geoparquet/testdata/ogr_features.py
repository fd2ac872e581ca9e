# Prints what GDAL's OGR reads from a vector file, for TestSetsAreWhatGDALReads:
# a header line of the first layer's fields (name:OGR type), then one line
# per feature: the geometry as ISO WKB (little-endian, hex) and each
# field's value (integers in decimal, reals as Python's shortest
# round-trip text, strings as they are), tab-separated.
import sys

from osgeo import ogr

ogr.UseExceptions()
ds = ogr.Open(sys.argv[1])
layer = ds.GetLayer(0)
defn = layer.GetLayerDefn()
fields = [defn.GetFieldDefn(i) for i in range(defn.GetFieldCount())]
out = sys.stdout
out.write("\t".join(f.GetName() + ":" + f.GetFieldTypeName(f.GetType()) for f in fields) + "\n")
for feat in layer:
    cols = [feat.GetGeometryRef().ExportToIsoWkb(ogr.wkbNDR).hex()]
    for i, f in enumerate(fields):
        t = f.GetType()
        if t in (ogr.OFTInteger, ogr.OFTInteger64):
            cols.append(str(feat.GetFieldAsInteger64(i)))
        elif t == ogr.OFTReal:
            cols.append(repr(feat.GetFieldAsDouble(i)))
        else:
            cols.append(feat.GetFieldAsString(i))
    out.write("\t".join(cols) + "\n")
