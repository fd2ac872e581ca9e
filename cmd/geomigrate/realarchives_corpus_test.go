package main

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gen writes the corpus with GDAL's own tools: the CLI where it can, Python
// with osgeo where it cannot (GCPs, RPC metadata, masks, list fields).
type gen struct {
	t *testing.T
}

// python is the interpreter that carries GDAL's bindings (python3-gdal).
const python = "/usr/bin/python3"

// run runs one external command with a deadline, failing the test with its
// output when it fails.
func (g *gen) run(name string, args ...string) string {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// py runs a Python script with osgeo imported and exceptions on; dir is
// its working directory.
func (g *gen) py(dir, script string) {
	g.t.Helper()
	g.run(python, "-c", "import os, sys\nos.chdir(sys.argv[1])\nfrom osgeo import gdal, ogr, osr\ngdal.UseExceptions()\nogr.UseExceptions()\n"+script, dir)
}

func (g *gen) write(path, text string) {
	g.t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		g.t.Fatal(err)
	}
}

// A raster of a few features (a gradient, a square of nodata) in UTM 33N.
const pyRaster = `
import numpy as np
def raster(name, w=300, h=200, bands=1, dtype=gdal.GDT_Int16, srs='EPSG:32633', gt=(500000, 10, 0, 5000000, 0, -10), opts=()):
    ds = gdal.GetDriverByName('GTiff').Create(name, w, h, bands, dtype, list(opts))
    if gt: ds.SetGeoTransform(gt)
    if srs: ds.SetProjection(srs)
    y, x = np.mgrid[0:h, 0:w]
    for b in range(1, bands + 1):
        ds.GetRasterBand(b).WriteArray(((x * 7 + y * 3 + b * 11) % 250).astype(np.int32))
    return ds
`

func makeOrdinaryGeoTIFF(g *gen, dir string) {
	g.py(dir, pyRaster+`
ds = raster('dem.tif', bands=2, opts=['TILED=YES', 'COMPRESS=DEFLATE'])
ds.SetMetadata({'SOURCE': 'generated survey', 'DATUM_NOTE': 'ellipsoidal'})
for b in (1, 2):
    band = ds.GetRasterBand(b)
    a = band.ReadAsArray(); a[20:40, 30:60] = -9999; band.WriteArray(a)
    band.SetNoDataValue(-9999)
    band.SetScale(0.5); band.SetOffset(10)
    band.SetUnitType('m')
    band.SetDescription(['elevation', 'slope'][b - 1])
    band.SetMetadata({'STATISTICS_NOTE': 'band %d' % b})
ds = None
ds = raster('classes.tif', dtype=gdal.GDT_Byte)
ct = gdal.ColorTable()
for i in range(256): ct.SetColorEntry(i, (i, 255 - i, (i * 3) % 256, 255))
ds.GetRasterBand(1).SetRasterColorTable(ct)
ds.GetRasterBand(1).SetColorInterpretation(gdal.GCI_PaletteIndex)
ds = None
`)
}

// pyLayers writes a layer of points with one field of each ordinary type.
const pyLayers = `
def srs(code):
    s = osr.SpatialReference(); s.ImportFromEPSG(code)
    s.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    return s
def fields(layer, specs):
    for name, t, sub in specs:
        fd = ogr.FieldDefn(name, t)
        if sub: fd.SetSubType(sub)
        layer.CreateField(fd)
def feature(layer, wkt, **values):
    f = ogr.Feature(layer.GetLayerDefn())
    for k, v in values.items():
        if v is not None: f.SetField(k, v)
    if wkt: f.SetGeometry(ogr.CreateGeometryFromWkt(wkt))
    layer.CreateFeature(f)
`

func makeOrdinaryGeoPackage(g *gen, dir string) {
	g.py(dir, pyLayers+`
ds = ogr.GetDriverByName('GPKG').CreateDataSource('places.gpkg')
l = ds.CreateLayer('towns', srs(4326), ogr.wkbPoint)
fields(l, [('name', ogr.OFTString, 0), ('pop', ogr.OFTInteger64, 0), ('area', ogr.OFTReal, 0),
           ('founded', ogr.OFTDate, 0), ('capital', ogr.OFTInteger, ogr.OFSTBoolean), ('rank', ogr.OFTInteger, 0)])
for i in range(40):
    feature(l, 'POINT(%f %f)' % (5 + i * 0.1, 45 + i * 0.05), name='Bourg-%d é' % i, pop=10**10 + i * 37,
            area=i / 7.0, founded='19%02d-0%d-1%d' % (i, 1 + i % 9, i % 10), capital=i % 2, rank=None if i % 5 == 0 else i)
l = ds.CreateLayer('parcels', srs(2154), ogr.wkbPolygon)
fields(l, [('ref', ogr.OFTString, 0), ('surface', ogr.OFTReal, 0)])
for i in range(20):
    x, y = 650000 + i * 100, 6860000
    feature(l, 'POLYGON((%d %d,%d %d,%d %d,%d %d,%d %d))' % (x, y, x + 90, y, x + 90, y + 80, x, y + 80, x, y), ref='P%03d' % i, surface=90 * 80.0)
ds = None
`)
}

func makeShapefile(g *gen, dir string) {
	g.py(dir, pyLayers+`
ds = ogr.GetDriverByName('ESRI Shapefile').CreateDataSource('communes.shp')
l = ds.CreateLayer('communes', srs(2154), ogr.wkbPolygon, ['ENCODING=UTF-8'])
fields(l, [('nom', ogr.OFTString, 0), ('insee', ogr.OFTString, 0), ('pop', ogr.OFTInteger, 0), ('dens', ogr.OFTReal, 0)])
names = ['Évry', 'Sceaux', 'Créteil', 'Nanterre', 'Bobigny', 'Orléans', 'Châtillon']
for i, n in enumerate(names):
    x, y = 650000 + i * 1000, 6860000
    feature(l, 'POLYGON((%d %d,%d %d,%d %d,%d %d))' % (x, y, x + 900, y, x + 900, y + 700, x, y), nom=n, insee='9%04d' % i, pop=1000 * i + 7, dens=i * 1.25)
ds = None
`)
	for _, ext := range []string{".shx", ".dbf", ".prj", ".cpg"} {
		if _, err := os.Stat(filepath.Join(dir, "communes"+ext)); err != nil {
			g.t.Fatalf("the shapefile lacks its %s: %v", ext, err)
		}
	}
}

func makeNoCRS(g *gen, dir string) {
	g.py(dir, pyRaster+`
raster('scan.tif', srs=None).FlushCache()
`)
}

// makePAM sets metadata on a TIFF opened read-only, so that GDAL keeps it
// in survey.tif.aux.xml, and builds external overviews (survey.tif.ovr).
func makePAM(g *gen, dir string) {
	g.py(dir, pyRaster+`
raster('survey.tif', dtype=gdal.GDT_UInt16).FlushCache()
ds = gdal.Open('survey.tif')
ds.SetMetadata({'SURVEY': 'generated', 'OPERATOR': 'corpus'})
ds.SetMetadata({'FLIGHT': '7'}, 'ACQUISITION')
b = ds.GetRasterBand(1)
b.SetScale(0.01); b.SetOffset(-5); b.SetUnitType('dB'); b.SetDescription('backscatter')
ds = None
assert os.path.exists('survey.tif.aux.xml')
`)
	g.run("gdaladdo", "-q", "-ro", filepath.Join(dir, "survey.tif"), "2", "4")
	if _, err := os.Stat(filepath.Join(dir, "survey.tif.ovr")); err != nil {
		g.t.Fatalf("gdaladdo -ro wrote no .ovr: %v", err)
	}
}

// makeWorldFile writes a TIFF with a CRS but no geotransform, and its .tfw
// (GDAL's GTiff driver reads a world file, not a .prj).
func makeWorldFile(g *gen, dir string) {
	g.py(dir, pyRaster+`
raster('plan.tif', dtype=gdal.GDT_Byte, srs='EPSG:2154', gt=None).FlushCache()
open('plan.tfw', 'w').write('0.5\n0\n0\n-0.5\n650000.25\n6860000.75\n')
ds = gdal.Open('plan.tif')
assert ds.GetGeoTransform(can_return_null=True) is not None and ds.GetSpatialRef() is not None
`)
}

func makeExternalMask(g *gen, dir string) {
	g.py(dir, pyRaster+`
gdal.SetConfigOption('GDAL_TIFF_INTERNAL_MASK', 'NO')
ds = raster('ortho.tif', bands=3, dtype=gdal.GDT_Byte)
ds.CreateMaskBand(gdal.GMF_PER_DATASET)
m = np.full((200, 300), 255, dtype=np.uint8)
m[:, :100] = 0          # a third of the pixels masked
m[150:, 200:] = 0
ds.GetRasterBand(1).GetMaskBand().WriteArray(m)
ds = None
assert os.path.exists('ortho.tif.msk')
`)
}

// DigitalGlobe sidecars: the .IMD (image metadata), .RPB (RPC model) and
// the .XML that holds both, as GDAL's DigitalGlobe reader reads them.
func makeDigitalGlobe(g *gen, dir string) {
	g.py(dir, pyRaster+`
raster('scene.tif', dtype=gdal.GDT_UInt16, srs='EPSG:4326', gt=(6.0, 0.0001, 0, 45.02, 0, -0.0001)).FlushCache()
`)
	coef := func() string {
		var b strings.Builder
		for i := 0; i < 20; i++ {
			v := "+0.000000e+00"
			switch i {
			case 0:
				v = "+1.000000e+00"
			case 2:
				v = "-1.000000e+00"
			}
			b.WriteString("\t\t\t" + v)
			if i < 19 {
				b.WriteString(",\n")
			}
		}
		return b.String()
	}
	g.write(filepath.Join(dir, "scene.IMD"), `version = "28.3";
generationTime = 2014-03-19T10:10:10.000000Z;
productOrderId = "000000000000_01_P001";
productCatalogId = "A0100100000B5C00";
imageDescriptor = "ORStandard2A";
bandId = "P";
numRows = 200;
numColumns = 300;
BEGIN_GROUP = IMAGE_1
	satId = "WV02";
	CatId = "1030010000000000";
	firstLineTime = 2014-03-12T10:10:10.123456Z;
	cloudCover = 0.02;
END_GROUP = IMAGE_1
END;
`)
	g.write(filepath.Join(dir, "scene.RPB"), `satId = "WV02";
bandId = "P";
SpecId = "RPC00B";
BEGIN_GROUP = IMAGE
	errBias = 5.0;
	errRand = 0.5;
	lineOffset = 100;
	sampOffset = 150;
	latOffset = +45.0100;
	longOffset = +006.0150;
	heightOffset = +500;
	lineScale = 100;
	sampScale = 150;
	latScale = +0.0100;
	longScale = +0.0150;
	heightScale = +500;
	lineNumCoef = (
`+coef()+`);
	lineDenCoef = (
`+coef()+`);
	sampNumCoef = (
`+coef()+`);
	sampDenCoef = (
`+coef()+`);
END_GROUP = IMAGE
END;
`)
	g.write(filepath.Join(dir, "scene.XML"), `<?xml version="1.0" encoding="UTF-8"?>
<isd>
  <IMD>
    <VERSION>28.3</VERSION>
    <BANDID>P</BANDID>
    <IMAGE><SATID>WV02</SATID><FIRSTLINETIME>2014-03-12T10:10:10.123456Z</FIRSTLINETIME><CLOUDCOVER>0.02</CLOUDCOVER></IMAGE>
  </IMD>
</isd>
`)
	// The sidecars are read: the source carries the domains to keep.
	out := g.run(python, "-c", "import sys\nfrom osgeo import gdal\nds=gdal.Open(sys.argv[1])\nprint([d for d in ('RPC', 'IMD', 'IMAGERY') if ds.GetMetadata(d)])", filepath.Join(dir, "scene.tif"))
	for _, d := range []string{"RPC", "IMD", "IMAGERY"} {
		if !strings.Contains(out, "'"+d+"'") {
			g.t.Fatalf("GDAL reads no %s domain from the DigitalGlobe sidecars: %s", d, out)
		}
	}
}

func makeGCPs(g *gen, dir string) {
	g.py(dir, pyRaster+`
ds = raster('gcps.tif', w=300, h=280, dtype=gdal.GDT_Byte, srs=None, gt=None)
gcps = []
for j in range(14):
    for i in range(15):
        px, ln = i * 20 + 5, j * 20 + 5
        gcps.append(gdal.GCP(6.0 + px * 0.0001 + j * 0.00001, 45.5 - ln * 0.0001, 0.0, px + 0.5, ln + 0.5))
assert len(gcps) == 210
ds.SetGCPs(gcps, osr.SpatialReference('''GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AUTHORITY["EPSG","4326"]]''').ExportToWkt())
ds = None
`)
}

func makeRPC(g *gen, dir string) {
	g.py(dir, pyRaster+`
ds = raster('rpc.tif', dtype=gdal.GDT_UInt16, srs=None, gt=None)
c = ' '.join(['1'] + ['0'] * 19)
ds.SetMetadata({
    'LINE_OFF': '100', 'SAMP_OFF': '150', 'LAT_OFF': '45.01', 'LONG_OFF': '6.015', 'HEIGHT_OFF': '500',
    'LINE_SCALE': '100', 'SAMP_SCALE': '150', 'LAT_SCALE': '0.01', 'LONG_SCALE': '0.015', 'HEIGHT_SCALE': '500',
    'LINE_NUM_COEFF': ' '.join(['0', '0', '-1'] + ['0'] * 17), 'LINE_DEN_COEFF': c,
    'SAMP_NUM_COEFF': ' '.join(['0', '1'] + ['0'] * 18), 'SAMP_DEN_COEFF': c,
    'ERR_BIAS': '5', 'ERR_RAND': '0.5'}, 'RPC')
ds = None
ds = gdal.Open('rpc.tif')
assert ds.GetMetadata('RPC') and ds.GetGeoTransform(can_return_null=True) is None
`)
}

// makeUnsortedOverviews adds overviews in two passes (4 then 2), so the
// file's IFDs hold them out of size order.
func makeUnsortedOverviews(g *gen, dir string) {
	g.py(dir, pyRaster+`
raster('ovr.tif', w=1024, h=1024, dtype=gdal.GDT_Byte).FlushCache()
`)
	p := filepath.Join(dir, "ovr.tif")
	g.run("gdaladdo", "-q", "-r", "average", p, "4")
	g.run("gdaladdo", "-q", "-r", "average", p, "2")
	out := g.run(python, "-c", "import sys\nfrom osgeo import gdal\nds=gdal.Open(sys.argv[1])\nb=ds.GetRasterBand(1)\nprint([b.GetOverview(i).XSize for i in range(b.GetOverviewCount())])", p)
	if !strings.Contains(out, "[256, 512]") {
		g.t.Fatalf("overviews are in order after all (%s): the case proves nothing", strings.TrimSpace(out))
	}
}

func makeLineStringZM(g *gen, dir string) {
	g.py(dir, pyLayers+`
ds = ogr.GetDriverByName('GPKG').CreateDataSource('tracks.gpkg')
l = ds.CreateLayer('tracks', srs(4326), ogr.wkbLineStringZM)
fields(l, [('id', ogr.OFTInteger, 0)])
for i in range(12):
    pts = ','.join('%f %f %f %f' % (6 + k * 0.01, 45 + i * 0.01, 400 + k, 1000.0 * i + k * 0.5) for k in range(6))
    feature(l, 'LINESTRING ZM (%s)' % pts, id=i)
ds = None
`)
}

func makeCurves(g *gen, dir string) {
	g.py(dir, pyLayers+`
ds = ogr.GetDriverByName('GPKG').CreateDataSource('curves.gpkg')
l = ds.CreateLayer('arcs', srs(2154), ogr.wkbCircularString)
fields(l, [('id', ogr.OFTInteger, 0)])
for i in range(3):
    feature(l, 'CIRCULARSTRING(%d 0,%d 10,%d 0)' % (i * 100, i * 100 + 10, i * 100 + 20), id=i)
l = ds.CreateLayer('rounds', srs(2154), ogr.wkbCurvePolygon)
fields(l, [('id', ogr.OFTInteger, 0)])
feature(l, 'CURVEPOLYGON(CIRCULARSTRING(0 0,10 0,0 0))', id=1)
feature(l, 'CURVEPOLYGON(COMPOUNDCURVE(CIRCULARSTRING(0 0,5 5,10 0),(10 0,0 0)))', id=2)
l = ds.CreateLayer('surfaces', srs(2154), ogr.wkbMultiSurface)
fields(l, [('id', ogr.OFTInteger, 0)])
feature(l, 'MULTISURFACE(CURVEPOLYGON(CIRCULARSTRING(0 0,10 0,0 0)),((20 0,30 0,30 10,20 0)))', id=1)
ds = None
`)
}

func makeInvalidPolygons(g *gen, dir string) {
	g.py(dir, pyLayers+`
ds = ogr.GetDriverByName('GPKG').CreateDataSource('bowtie.gpkg')
l = ds.CreateLayer('zones', srs(2154), ogr.wkbPolygon)
fields(l, [('name', ogr.OFTString, 0)])
feature(l, 'POLYGON((0 0,10 10,10 0,0 10,0 0))', name='bowtie')
feature(l, 'POLYGON((20 0,30 10,30 0,20 10,20 0))', name='bowtie2')
feature(l, 'POLYGON((40 0,50 0,50 10,40 10,40 0))', name='valid')
# MakeValid turns this one into GEOMETRYCOLLECTION(POLYGON, LINESTRING).
feature(l, 'POLYGON((60 0,70 0,70 10,60 10,60 0,55 -5,60 0))', name='spike')
ds = None
`)
}

func makeNoGeometry(g *gen, dir string) {
	g.py(dir, pyLayers+`
ds = ogr.GetDriverByName('GPKG').CreateDataSource('codes.gpkg')
l = ds.CreateLayer('codes', None, ogr.wkbNone)
fields(l, [('code', ogr.OFTString, 0), ('label', ogr.OFTString, 0), ('weight', ogr.OFTReal, 0)])
for i in range(25):
    feature(l, None, code='C%02d' % i, label='libellé %d' % i, weight=i * 0.25)
ds = None
`)
}

func makeAllNull(g *gen, dir string) {
	g.py(dir, pyLayers+`
ds = ogr.GetDriverByName('GPKG').CreateDataSource('nulls.gpkg')
l = ds.CreateLayer('pending', srs(4326), ogr.wkbPoint)
fields(l, [('id', ogr.OFTInteger, 0), ('note', ogr.OFTString, 0)])
for i in range(8):
    feature(l, None, id=i, note='to survey %d' % i)
ds = None
`)
}

func makeTimestamps(g *gen, dir string) {
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < 6; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"type":"Feature","properties":{"id":` + strconv.Itoa(i) + `,"ts":"2024-03-0` + strconv.Itoa(i+1) + `T1` + strconv.Itoa(i) + `:30:00+07:00","level":` + strconv.Itoa(i*3) + `.5},"geometry":{"type":"Point","coordinates":[105.8` + strconv.Itoa(i) + `,21.0` + strconv.Itoa(i) + `]}}`)
	}
	b.WriteString("]}\n")
	g.write(filepath.Join(dir, "readings.geojson"), b.String())
	out := g.run(python, "-c", "import sys\nfrom osgeo import ogr\nds=ogr.Open(sys.argv[1])\nf=ds.GetLayer(0).GetNextFeature()\nd=f.GetFieldDefnRef('ts')\nprint(ogr.GetFieldTypeName(d.GetType()), f.GetFieldAsDateTime('ts')[6])", filepath.Join(dir, "readings.geojson"))
	if strings.TrimSpace(out) != "DateTime 128" {
		g.t.Fatalf("OGR reads the timestamps as %q, want DateTime with a +07 offset (128)", out)
	}
}

func makeListFields(g *gen, dir string) {
	g.write(filepath.Join(dir, "lists.geojson"), `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"name":"a","ints":[1,2,3,4],"reals":[0.5,1.25],"tags":["x","y"]},"geometry":{"type":"Point","coordinates":[1,2]}},
{"type":"Feature","properties":{"name":"b","ints":[7],"reals":[3.75,-1.0,2.5],"tags":["only"]},"geometry":{"type":"Point","coordinates":[3,4]}},
{"type":"Feature","properties":{"name":"c","ints":[],"reals":[],"tags":[]},"geometry":{"type":"Point","coordinates":[5,6]}},
{"type":"Feature","properties":{"name":"d","ints":null,"reals":null,"tags":null},"geometry":{"type":"Point","coordinates":[7,8]}}
]}
`)
	out := g.run(python, "-c", "import sys\nfrom osgeo import ogr\nds=ogr.Open(sys.argv[1])\nd=ds.GetLayer(0).GetLayerDefn()\nprint(' '.join(ogr.GetFieldTypeName(d.GetFieldDefn(i).GetType()) for i in range(d.GetFieldCount())))", filepath.Join(dir, "lists.geojson"))
	if strings.TrimSpace(out) != "String IntegerList RealList StringList" {
		g.t.Fatalf("OGR reads the list fields as %q", out)
	}
}

// makeSRTMZip writes an SRTM-3 tile (1201², Int16, mostly one height) with
// GDAL's SRTMHGT driver and deflates it into N45E006.hgt.zip: a few kB that
// inflate to 2.9 MB, the ratio of any ordinary compressed DEM.
func makeSRTMZip(g *gen, dir string) {
	tmp := g.t.TempDir()
	g.py(tmp, `
import numpy as np
ds = gdal.GetDriverByName('MEM').Create('', 1201, 1201, 1, gdal.GDT_Int16)
ds.SetGeoTransform((6 - 1 / 2400.0, 1 / 1200.0, 0, 46 + 1 / 2400.0, 0, -1 / 1200.0))
ds.SetProjection('EPSG:4326')
a = np.full((1201, 1201), 812, dtype=np.int16)
a[500:520, 600:640] = 1350
a[0, :] = np.arange(1201) % 37 + 800
ds.GetRasterBand(1).WriteArray(a)
ds.GetRasterBand(1).SetNoDataValue(-32768)
gdal.GetDriverByName('SRTMHGT').CreateCopy('N45E006.hgt', ds)
`)
	hgt := filepath.Join(tmp, "N45E006.hgt")
	zf, err := os.Create(filepath.Join(dir, "N45E006.hgt.zip"))
	if err != nil {
		g.t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "N45E006.hgt", Method: zip.Deflate})
	if err != nil {
		g.t.Fatal(err)
	}
	src, err := os.Open(hgt)
	if err != nil {
		g.t.Fatal(err)
	}
	defer src.Close()
	if _, err := io.Copy(w, src); err != nil {
		g.t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		g.t.Fatal(err)
	}
	if err := zf.Close(); err != nil {
		g.t.Fatal(err)
	}
	if fi, _ := os.Stat(zf.Name()); fi.Size() > 64<<10 {
		g.t.Fatalf("the zip is %d bytes: not the high-ratio case", fi.Size())
	}
}

func makeClashes(g *gen, dir string) {
	g.py(dir, pyRaster+`
raster('dem.tif').FlushCache()
raster('dem.tiff', bands=2).FlushCache()
raster('other.tif', dtype=gdal.GDT_Byte).FlushCache()
`)
	makeGMLNamed(g, dir, "roads")
	const lake = `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"name":"%s"},"geometry":{"type":"Point","coordinates":[6.5,45.5]}}]}` + "\n"
	g.write(filepath.Join(dir, "lakes.geojson"), fmt.Sprintf(lake, "Léman"))
	g.write(filepath.Join(dir, "lakes.json"), fmt.Sprintf(lake, "Annecy"))
}

func makeGML(g *gen, dir string) { makeGMLNamed(g, dir, "towns") }

// makeGMLNamed writes NAME.gml and its NAME.xsd with ogr2ogr's GML driver.
func makeGMLNamed(g *gen, dir, name string) {
	tmp := g.t.TempDir()
	g.py(tmp, pyLayers+`
ds = ogr.GetDriverByName('GPKG').CreateDataSource('in.gpkg')
l = ds.CreateLayer('`+name+`', srs(4326), ogr.wkbLineString)
fields(l, [('name', ogr.OFTString, 0), ('lanes', ogr.OFTInteger, 0), ('width', ogr.OFTReal, 0)])
for i in range(10):
    feature(l, 'LINESTRING(%f 45,%f 45.1)' % (6 + i * 0.01, 6 + i * 0.01), name='R%d' % i, lanes=1 + i % 3, width=3.5 + i)
ds = None
`)
	g.run("ogr2ogr", "-f", "GML", "-dsco", "FORMAT=GML3", filepath.Join(dir, name+".gml"), filepath.Join(tmp, "in.gpkg"))
	if _, err := os.Stat(filepath.Join(dir, name+".xsd")); err != nil {
		g.t.Fatalf("ogr2ogr wrote no schema beside the GML: %v", err)
	}
}

func makeFileGDB(g *gen, dir string) {
	tmp := g.t.TempDir()
	makeOrdinaryGeoPackage(g, tmp)
	g.run("ogr2ogr", "-f", "OpenFileGDB", filepath.Join(dir, "parcels.gdb"), filepath.Join(tmp, "places.gpkg"))
	g.py(dir, pyRaster+`
raster('other.tif', dtype=gdal.GDT_Byte).FlushCache()
`)
}

func makeGPX(g *gen, dir string) {
	g.py(dir, pyLayers+`
ds = ogr.GetDriverByName('GPX').CreateDataSource('walk.gpx')
l = ds.CreateLayer('waypoints', srs(4326), ogr.wkbPoint)
for i in range(5):
    f = ogr.Feature(l.GetLayerDefn())
    f.SetField('name', 'WP%d' % i); f.SetField('ele', 400.5 + i)
    f.SetGeometry(ogr.CreateGeometryFromWkt('POINT(%f %f)' % (6 + i * 0.001, 45 + i * 0.001)))
    l.CreateFeature(f)
l = ds.CreateLayer('tracks', srs(4326), ogr.wkbMultiLineString)
f = ogr.Feature(l.GetLayerDefn()); f.SetField('name', 'morning')
f.SetGeometry(ogr.CreateGeometryFromWkt('MULTILINESTRING((6 45,6.001 45.001,6.002 45.003))'))
l.CreateFeature(f)
ds = None
`)
}

func makeCSV(g *gen, dir string) {
	g.write(filepath.Join(dir, "wells.csv"), "id,name,depth,WKT\n"+
		"1,Puits du Moulin,12.5,\"POINT (6.1 45.2)\"\n"+
		"2,Source haute,3.25,\"POINT (6.2 45.3)\"\n"+
		"3,Forage 3,120,\"POINT (6.3 45.4)\"\n")
}

func makeGeoJSONSeq(g *gen, dir string) {
	tmp := g.t.TempDir()
	makeOrdinaryGeoPackage(g, tmp)
	g.run("ogr2ogr", "-f", "GeoJSONSeq", filepath.Join(dir, "stream.geojsonl"), filepath.Join(tmp, "places.gpkg"), "towns")
}

func makeFlatGeobufInput(g *gen, dir string) {
	g.py(dir, pyLayers+`
ds = ogr.GetDriverByName('FlatGeobuf').CreateDataSource('lines.fgb')
l = ds.CreateLayer('lines', srs(3857), ogr.wkbLineString)
fields(l, [('name', ogr.OFTString, 0), ('speed', ogr.OFTInteger, 0), ('len', ogr.OFTReal, 0)])
for i in range(15):
    feature(l, 'LINESTRING(%d 0,%d 100,%d 250)' % (i * 1000, i * 1000 + 50, i * 1000 + 75), name='L%d' % i, speed=30 + i, len=250.0 + i / 3.0)
ds = None
`)
}

func makeTopoJSON(g *gen, dir string) {
	g.write(filepath.Join(dir, "regions.topojson"), `{"type":"Topology",
"transform":{"scale":[0.001,0.001],"translate":[6,45]},
"objects":{"regions":{"type":"GeometryCollection","geometries":[
 {"type":"Polygon","arcs":[[0,1]],"properties":{"name":"north","code":1}},
 {"type":"Polygon","arcs":[[-1,2]],"properties":{"name":"south","code":2}}]}},
"arcs":[[[0,500],[1000,0]],[[1000,500],[0,500],[-1000,0],[0,-500]],[[0,500],[0,-500],[1000,0],[0,500]]]}
`)
	out := g.run(python, "-c", "import sys\nfrom osgeo import ogr\nds=ogr.Open(sys.argv[1])\nprint(ds.GetDriver().GetName(), ds.GetLayer(0).GetFeatureCount())", filepath.Join(dir, "regions.topojson"))
	if strings.TrimSpace(out) != "TopoJSON 2" {
		g.t.Fatalf("OGR reads the TopoJSON as %q", out)
	}
}
