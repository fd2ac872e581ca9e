package gdal

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// What a raster holds beside its pixels, made by GDAL's own Python
// bindings and read back by them (an outside judge of the COG): external
// masks, alpha and per-band masks, DigitalGlobe metadata sidecars, GCPs,
// RPCs, unsorted overviews, colour tables, scale/offset, units and
// descriptions.

// rasterMaker is Python run with /usr/bin/python3 in the case's directory;
// `gdal`, `osr`, `np` are imported and `ramp(w, h)` is a Byte ramp.
const rasterMakerPrelude = `
from osgeo import gdal, osr
import numpy as np
gdal.UseExceptions()
def ramp(w, h, dt='uint8'):
    return (np.arange(w*h) % 200).reshape(h, w).astype(dt)
def utm():
    s = osr.SpatialReference(); s.ImportFromEPSG(32631); return s.ExportToWkt()
def create(name, w, h, bands=1, dt=gdal.GDT_Byte, opts=('TILED=YES',)):
    d = gdal.GetDriverByName('GTiff').Create(name, w, h, bands, dt, list(opts))
    for i in range(bands):
        d.GetRasterBand(i+1).WriteArray(ramp(w, h) + i)
    return d
def georef(d):
    d.SetGeoTransform([500000, 10, 0, 5000000, 0, -10]); d.SetProjection(utm())
`

// rasterJudge prints, as JSON, what GDAL reads in each file named on its
// command line.
const rasterJudge = `
import json, sys
from osgeo import gdal
gdal.UseExceptions()
out = {}
for p in sys.argv[1:]:
    d = gdal.Open(p)
    bands = []
    for i in range(d.RasterCount):
        b = d.GetRasterBand(i+1)
        m = b.GetMaskBand()
        ct = b.GetColorTable()
        bands.append({
            'mask_flags': b.GetMaskFlags(),
            'masked': int((m.ReadAsArray() == 0).sum()),
            'colours': [list(ct.GetColorEntry(k)) for k in range(ct.GetCount())] if ct else [],
            'scale': b.GetScale(), 'offset': b.GetOffset(), 'unit': b.GetUnitType(),
            'description': b.GetDescription(), 'metadata': b.GetMetadata(),
        })
    gcps = [[g.GCPPixel, g.GCPLine, g.GCPX, g.GCPY, g.GCPZ] for g in d.GetGCPs()]
    sr = d.GetGCPSpatialRef()
    rpc = {k: [float(x) for x in v.split()] for k, v in (d.GetMetadata('RPC') or {}).items()}
    ovr = [[o.XSize, o.YSize] for o in [d.GetRasterBand(1).GetOverview(k) for k in range(d.GetRasterBand(1).GetOverviewCount())]]
    out[p] = {'bands': bands, 'gcps': gcps, 'gcp_crs': sr.GetAuthorityCode(None) if sr else None,
              'rpc': rpc, 'imd': d.GetMetadata('IMD') or {}, 'imagery': d.GetMetadata('IMAGERY') or {},
              'overviews': ovr, 'files': [os.path.basename(f) for f in d.GetFileList()], 'rpc_tag': rpc_tag(p)}
print(json.dumps(out))
`

// rpcTagJudge adds, for a classic little-endian TIFF, the 92 doubles of
// its first IFD's RPCCoefficientTag (50844) as libtiff stored them, which
// GDAL prints with 15 significant digits only.
const rpcTagJudge = `
import struct
def rpc_tag(p):
    b = open(p, 'rb').read()
    if b[:4] != b'II*\x00':
        return None
    off = struct.unpack_from('<I', b, 4)[0]
    n = struct.unpack_from('<H', b, off)[0]
    for k in range(n):
        tag, typ, cnt, val = struct.unpack_from('<HHII', b, off + 2 + 12*k)
        if tag == 50844 and typ == 12:
            return list(struct.unpack_from('<%dd' % cnt, b, val))
    return None
`

type judgedBand struct {
	MaskFlags   int               `json:"mask_flags"`
	Masked      int64             `json:"masked"`
	Colours     [][4]int          `json:"colours"`
	Scale       *float64          `json:"scale"`
	Offset      *float64          `json:"offset"`
	Unit        string            `json:"unit"`
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata"`
}

type judgedRaster struct {
	Bands     []judgedBand         `json:"bands"`
	GCPs      [][5]float64         `json:"gcps"`
	GCPCRS    *string              `json:"gcp_crs"`
	RPC       map[string][]float64 `json:"rpc"`
	IMD       map[string]string    `json:"imd"`
	Imagery   map[string]string    `json:"imagery"`
	Overviews [][2]int             `json:"overviews"`
	Files     []string             `json:"files"`
	RPCTag    []float64            `json:"rpc_tag"`
}

func runPython(t *testing.T, dir, script string, args ...string) []byte {
	t.Helper()
	if _, err := os.Stat(cogValidatorPython); err != nil {
		t.Skipf("no %s with GDAL's bindings", cogValidatorPython)
	}
	cmd := exec.Command(cogValidatorPython, append([]string{"-c", script}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("python: %v\n%s", err, msg)
	}
	return out
}

// judgeRasters reads src and out with GDAL's Python bindings.
func judgeRasters(t *testing.T, src, out string) (judgedRaster, judgedRaster) {
	t.Helper()
	var got map[string]judgedRaster
	if err := json.Unmarshal(runPython(t, filepath.Dir(src), "import os\n"+rpcTagJudge+rasterJudge, src, out), &got); err != nil {
		t.Fatal(err)
	}
	return got[src], got[out]
}

// gcpScript writes gcp.tif, placed by 210 GCPs with a GCP CRS (EPSG:4326)
// and no geotransform: converted as it is, and reprojected.
const gcpScript = `
d = create('gcp.tif', 300, 200)
s = osr.SpatialReference(); s.ImportFromEPSG(4326)
g = []
for i in range(15):
    for j in range(14):
        px, ln = i*20.0 + 0.5, j*14.0 + 0.25
        g.append(gdal.GCP(2.0 + px*0.001, 48.0 - ln*0.001, 10.0 + i + j/7.0, px, ln, 'p%d' % len(g), ''))
d.SetGCPs(g, s.ExportToWkt())
d = None
`

func TestRasterContentCarried(t *testing.T) {
	rpb := `satId = "WV02";
bandId = "P";
SpecId = "RPC00B";
BEGIN_GROUP = IMAGE
	errBias = 1.0;
	errRand = 0.5;
	lineOffset = 100;
	sampOffset = 150;
	latOffset = +48.0000;
	longOffset = +002.0000;
	heightOffset = +100;
	lineScale = 100;
	sampScale = 150;
	latScale = +0.1000;
	longScale = +000.1000;
	heightScale = +500;
	lineNumCoef = (` + coefs(0, -1) + `);
	lineDenCoef = (` + coefs(1) + `);
	sampNumCoef = (` + coefs(0, 0, 1) + `);
	sampDenCoef = (` + coefs(1) + `);
END_GROUP = IMAGE
END;
`
	imd := `version = "28.3";
generationTime = 2016-07-01T12:00:00.000000Z;
productOrderId = "058";
BEGIN_GROUP = IMAGE_1
	satId = "WV02";
	firstLineTime = 2016-06-30T10:11:12.123456Z;
	cloudCover = 0.125;
END_GROUP = IMAGE_1
END;
`
	rpcPy := `
rpc = {'LINE_OFF':'100','SAMP_OFF':'150','LAT_OFF':'48.25','LONG_OFF':'2.125','HEIGHT_OFF':'0','LINE_SCALE':'100','SAMP_SCALE':'150',
       'LAT_SCALE':'0.1','LONG_SCALE':'0.1','HEIGHT_SCALE':'500','ERR_BIAS':'1.5','ERR_RAND':'0.25',
       'LINE_NUM_COEFF':' '.join(['0.001','-1.0000000000000002']+['0']*18),'LINE_DEN_COEFF':' '.join(['1']+['0']*19),
       'SAMP_NUM_COEFF':' '.join(['0','0','1']+['1e-9']*17),'SAMP_DEN_COEFF':' '.join(['1']+['0']*19)}
`
	cases := []struct {
		name     string
		src      string
		py       string
		files    map[string]string // written beside the source
		siblings []string          // sidecars GDAL is given (as preflight would name them)
		target   string            // the recipe's target_crs
		nodata   string            // the recipe's nodata
		checks   []string          // in files[].fidelity.checks
		warn     []string          // each in some warning
		judge    func(t *testing.T, src, out judgedRaster)
	}{
		{
			name: "external mask", src: "m.tif",
			py: `
gdal.SetConfigOption('GDAL_TIFF_INTERNAL_MASK', 'NO')
d = create('m.tif', 300, 200); georef(d)
d.CreateMaskBand(gdal.GMF_PER_DATASET)
m = np.zeros((200, 300), 'uint8'); m[50:150, 100:250] = 255; m[0, 0] = 255
d.GetRasterBand(1).GetMaskBand().WriteArray(m)
d = None
`,
			// With a second sidecar GDAL is given the list of siblings,
			// and reads only those: the mask must be on it.
			files:  map[string]string{"m.tif.aux.xml": `<PAMDataset><Metadata><MDI key="NOTE">beside</MDI></Metadata></PAMDataset>`},
			checks: []string{"masks", "metadata"},
			judge: func(t *testing.T, src, out judgedRaster) {
				if !slices.Contains(src.Files, "m.tif.msk") {
					t.Fatalf("the fixture has no external mask: %v", src.Files)
				}
				if src.Bands[0].Masked != 200*300-100*150-1 || out.Bands[0].Masked != src.Bands[0].Masked || out.Bands[0].MaskFlags != 2 {
					t.Errorf("masked pixels: source %d, COG %d (flags %d)", src.Bands[0].Masked, out.Bands[0].Masked, out.Bands[0].MaskFlags)
				}
				if len(out.Files) != 1 {
					t.Errorf("the COG is not one file: %v", out.Files)
				}
			},
		},
		{
			name: "alpha band", src: "rgba.tif",
			py: `
d = create('rgba.tif', 300, 200, 4, opts=('TILED=YES', 'PHOTOMETRIC=RGB', 'ALPHA=YES')); georef(d)
a = np.zeros((200, 300), 'uint8'); a[:, :120] = 255
d.GetRasterBand(4).WriteArray(a)
d = None
`,
			checks: []string{"mask_flags", "pixels"},
			judge: func(t *testing.T, src, out judgedRaster) {
				for i := range src.Bands {
					want := map[bool]int{true: 6, false: 1}[i < 3] // alpha, per dataset; the alpha band itself all valid
					if src.Bands[i].MaskFlags != want || out.Bands[i].MaskFlags != want || out.Bands[i].Masked != src.Bands[i].Masked {
						t.Errorf("band %d: alpha mask flags %d/%d, masked %d/%d", i+1, src.Bands[i].MaskFlags, out.Bands[i].MaskFlags, src.Bands[i].Masked, out.Bands[i].Masked)
					}
				}
			},
		},
		{
			name: "per-band masks", src: "pb.tif",
			py: `
gdal.SetConfigOption('GDAL_TIFF_INTERNAL_MASK', 'NO')
d = create('pb.tif', 300, 200, 2); georef(d)
for i in (1, 2):
    b = d.GetRasterBand(i); b.CreateMaskBand(0)
    m = np.full((200, 300), 255, 'uint8'); m[:, :50*i] = 0
    b.GetMaskBand().WriteArray(m)
d = None
`,
			warn: []string{"band 2 has a mask of its own, which a COG cannot hold"},
			judge: func(t *testing.T, src, out judgedRaster) {
				if src.Bands[0].Masked != 200*50 || src.Bands[1].Masked != 200*100 {
					t.Fatalf("the fixture's masks: %d, %d", src.Bands[0].Masked, src.Bands[1].Masked)
				}
				if out.Bands[0].Masked != src.Bands[0].Masked {
					t.Errorf("band 1 masked %d, source %d", out.Bands[0].Masked, src.Bands[0].Masked)
				}
			},
		},
		{
			name: "DigitalGlobe sidecars", src: "dg.tif",
			py: `
d = create('dg.tif', 300, 200); d = None
`,
			files:    map[string]string{"dg.RPB": rpb, "dg.IMD": imd},
			siblings: []string{"dg.IMD", "dg.RPB"},
			checks:   []string{"rpc"},
			warn:     []string{"metadata domain IMD (", "metadata domain IMAGERY ("},
			judge: func(t *testing.T, src, out judgedRaster) {
				if len(src.RPC) < 14 || len(src.IMD) == 0 || len(src.Imagery) == 0 {
					t.Fatalf("the fixture's sidecars were not read: RPC %v IMD %v IMAGERY %v", src.RPC, src.IMD, src.Imagery)
				}
				sameRPC(t, src, out)
				if len(out.Files) != 1 {
					t.Errorf("the COG is not one file: %v", out.Files)
				}
			},
		},
		{
			name: "_RPC.TXT sidecar", src: "t.tif",
			py: rpcPy + `
d = create('t.tif', 300, 200, opts=('RPCTXT=YES', 'PROFILE=BASELINE')); d.SetMetadata(rpc, 'RPC'); d = None
`,
			siblings: []string{"t_RPC.TXT"},
			checks:   []string{"rpc"},
			judge: func(t *testing.T, src, out judgedRaster) {
				if !slices.Contains(src.Files, "t_RPC.TXT") {
					t.Fatalf("the fixture's RPCs are not in a sidecar: %v", src.Files)
				}
				sameRPC(t, src, out)
				if len(out.Files) != 1 {
					t.Errorf("the COG is not one file: %v", out.Files)
				}
			},
		},
		{
			name: "GCPs with a GCP CRS", src: "gcp.tif",
			py:     gcpScript,
			checks: []string{"gcps", "gcp_crs"},
			judge: func(t *testing.T, src, out judgedRaster) {
				if len(src.GCPs) != 210 || !slices.Equal(src.GCPs, out.GCPs) {
					t.Errorf("%d GCPs in the source, %d in the COG, or other values", len(src.GCPs), len(out.GCPs))
				}
				if src.GCPCRS == nil || out.GCPCRS == nil || *out.GCPCRS != "4326" {
					t.Errorf("GCP CRS %v → %v", src.GCPCRS, out.GCPCRS)
				}
			},
		},
		{
			name: "GCPs reprojected", src: "gcp.tif", target: "EPSG:3857",
			py:     gcpScript,
			checks: []string{"warp", "geotransform"},
			warn:   []string{"through its GCPs or RPCs"},
			judge: func(t *testing.T, src, out judgedRaster) {
				if len(src.GCPs) != 210 || len(out.GCPs) != 0 {
					t.Errorf("%d GCPs in the source, %d in the COG", len(src.GCPs), len(out.GCPs))
				}
			},
		},
		{
			name: "RPCs only", src: "rpc.tif",
			py: rpcPy + `
d = create('rpc.tif', 300, 200); d.SetMetadata(rpc, 'RPC'); d = None
`,
			checks: []string{"rpc"},
			judge:  func(t *testing.T, src, out judgedRaster) { sameRPC(t, src, out) },
		},
		{
			name: "RPCs reprojected", src: "rpc.tif", target: "EPSG:4326",
			py: rpcPy + `
d = create('rpc.tif', 300, 200); d.SetMetadata(rpc, 'RPC'); d = None
`,
			checks: []string{"warp", "geotransform", "crs"},
			warn:   []string{"through its GCPs or RPCs"},
			judge: func(t *testing.T, src, out judgedRaster) {
				if len(src.RPC) == 0 || len(out.RPC) != 0 {
					t.Errorf("RPCs: %d items in the source, %d in the COG", len(src.RPC), len(out.RPC))
				}
			},
		},
		{
			name: "unsorted overviews and mask", src: "u.tif",
			py: `
gdal.SetConfigOption('GDAL_TIFF_INTERNAL_MASK', 'YES')
d = create('u.tif', 1024, 1024); georef(d)
d.CreateMaskBand(gdal.GMF_PER_DATASET)
m = np.full((1024, 1024), 255, 'uint8'); m[:100, :] = 0
d.GetRasterBand(1).GetMaskBand().WriteArray(m)
d.BuildOverviews('NEAREST', [4]); d.BuildOverviews('NEAREST', [2])
d = None
`,
			checks: []string{"masks"},
			judge: func(t *testing.T, src, out judgedRaster) {
				if len(src.Overviews) != 2 || src.Overviews[0][0] > src.Overviews[1][0] {
					t.Fatalf("the fixture's overviews are sorted: %v", src.Overviews)
				}
				for i := 1; i < len(out.Overviews); i++ {
					if out.Overviews[i][0] >= out.Overviews[i-1][0] {
						t.Errorf("COG overviews %v", out.Overviews)
					}
				}
				if out.Bands[0].Masked != src.Bands[0].Masked {
					t.Errorf("masked %d → %d", src.Bands[0].Masked, out.Bands[0].Masked)
				}
			},
		},
		{
			name: "nodata assigned to a raster without a mask", src: "nd.tif", nodata: "7",
			py: `
d = create('nd.tif', 300, 200); georef(d); d = None
`,
			checks: []string{"mask_flags", "nodata"},
			judge: func(t *testing.T, src, out judgedRaster) {
				if src.Bands[0].MaskFlags != 1 || out.Bands[0].MaskFlags != 8 || out.Bands[0].Masked != 300 {
					t.Errorf("mask flags %d → %d, %d masked", src.Bands[0].MaskFlags, out.Bands[0].MaskFlags, out.Bands[0].Masked)
				}
			},
		},
		{
			name: "colour table", src: "pal.tif",
			py: `
d = create('pal.tif', 300, 200); georef(d)
ct = gdal.ColorTable()
for k in range(200): ct.SetColorEntry(k, (k, 255 - k, (7*k) % 256, 255))
d.GetRasterBand(1).SetColorTable(ct)
d = None
`,
			checks: []string{"colour_table"},
			judge: func(t *testing.T, src, out judgedRaster) {
				if sc := src.Bands[0].Colours; len(sc) != 256 || sc[7] != [4]int{7, 248, 49, 255} || !slices.Equal(sc, out.Bands[0].Colours) {
					t.Errorf("colour table of %d entries written with %d or other colours", len(src.Bands[0].Colours), len(out.Bands[0].Colours))
				}
			},
		},
		{
			name: "scale, offset, units, descriptions, metadata", src: "props.tif",
			py: `
d = create('props.tif', 300, 200, 2, gdal.GDT_UInt16); georef(d)
for i, (s, o, u, n) in enumerate([(0.01, -5.0, 'm', 'height'), (2.5, 100.0, 'K', 'brightness temperature')]):
    b = d.GetRasterBand(i+1); b.SetScale(s); b.SetOffset(o); b.SetUnitType(u); b.SetDescription(n)
    b.SetMetadataItem('SENSOR_BAND', 'B%d' % (i+1))
d.SetMetadataItem('PRODUCT', 'L2A')
d.SetMetadataItem('K', 'v', 'VENDOR_DOMAIN')
d = None
`,
			checks: []string{"scale_offset", "unit", "description"},
			warn:   []string{"metadata domain VENDOR_DOMAIN (1 items) is not carried"},
			judge: func(t *testing.T, src, out judgedRaster) {
				for i := range src.Bands {
					s, o := src.Bands[i], out.Bands[i]
					if s.Scale == nil || o.Scale == nil || *s.Scale != *o.Scale || *s.Offset != *o.Offset || s.Unit != o.Unit || s.Description != o.Description || o.Metadata["SENSOR_BAND"] != s.Metadata["SENSOR_BAND"] {
						t.Errorf("band %d: source %+v, COG %+v", i+1, s, o)
					}
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			runPython(t, dir, rasterMakerPrelude+c.py)
			for n, text := range c.files {
				writeFile(t, dir, n, text)
			}
			src := filepath.Join(dir, c.src)
			r := fgbRecipe()
			r.TargetCRS = c.target
			r.NoData = c.nodata
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var outs []recipe.Output
			var err error
			if c.siblings != nil {
				// The sidecars as preflight names them once the registry
				// lists them: given here as GDAL's sibling files.
				s, perr := preflight.Local(src, r, probe{})
				if perr != nil {
					t.Fatal(perr)
				}
				s.Siblings = append([]string{c.src}, c.siblings...)
				outs, err = engine.convertSource(ctx, s, t.TempDir(), r.WithDefaults())
			} else {
				outs, err = engine.Convert(ctx, src, t.TempDir(), r)
			}
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			o := outs[0]
			t.Logf("checks %v; warnings %q", o.Fidelity.Checks, o.Warnings)
			for _, want := range c.checks {
				if !slices.Contains(o.Fidelity.Checks, want) {
					t.Errorf("fidelity checks %v lack %q", o.Fidelity.Checks, want)
				}
			}
			for _, want := range c.warn {
				if !slices.ContainsFunc(o.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
					t.Errorf("no warning says %q: %q", want, o.Warnings)
				}
			}
			entries, _ := os.ReadDir(filepath.Dir(o.Path))
			if len(entries) != 1 {
				t.Errorf("the work dir holds %d files, want the COG alone", len(entries))
			}
			judgeCOG(t, o.Path)
			s, out := judgeRasters(t, src, o.Path)
			c.judge(t, s, out)
			// The STAC item has a footprint however the COG is placed.
			d, err := engine.Describe(ctx, o.Path, o.Format)
			if err != nil {
				t.Fatalf("Describe: %v", err)
			}
			if len(d.BBox) != 4 || d.BBox[0] >= d.BBox[2] || d.BBox[1] >= d.BBox[3] {
				t.Errorf("Describe: bbox %v", d.BBox)
			}
		})
	}
}

// coefs is 20 RPB coefficients: vs, then zeros.
func coefs(vs ...float64) string {
	parts := make([]string, 20)
	for i := range parts {
		v := 0.0
		if i < len(vs) {
			v = vs[i]
		}
		parts[i] = "\n\t\t\t" + strconvF(v)
	}
	return strings.Join(parts, ",")
}

func strconvF(v float64) string { return strings.Replace(f64(v), "e", "E", 1) }

// sameRPC: every RPC item of the source comes back with the same numbers:
// exactly in the COG's RPC tag, and as GDAL prints it (15 significant
// digits) in its RPC metadata.
func sameRPC(t *testing.T, src judgedRaster, out judgedRaster) {
	t.Helper()
	if len(src.RPC) == 0 {
		t.Fatal("the source has no RPCs")
	}
	if len(out.RPCTag) != 92 {
		t.Fatalf("the COG has no RPC tag of 92 doubles: %v", out.RPCTag)
	}
	at := map[string]int{"ERR_BIAS": 0, "ERR_RAND": 1, "LINE_OFF": 2, "SAMP_OFF": 3, "LAT_OFF": 4, "LONG_OFF": 5, "HEIGHT_OFF": 6,
		"LINE_SCALE": 7, "SAMP_SCALE": 8, "LAT_SCALE": 9, "LONG_SCALE": 10, "HEIGHT_SCALE": 11,
		"LINE_NUM_COEFF": 12, "LINE_DEN_COEFF": 32, "SAMP_NUM_COEFF": 52, "SAMP_DEN_COEFF": 72}
	for k, v := range src.RPC {
		i, ok := at[k]
		if !ok {
			continue
		}
		if tag := out.RPCTag[i : i+len(v)]; !slices.Equal(v, tag) {
			t.Errorf("RPC %s %v stored as %v", k, v, tag)
		}
		printed := make([]float64, len(v))
		for j := range v {
			printed[j] = digits15(v[j])
		}
		if !slices.Equal(printed, out.RPC[k]) {
			t.Errorf("RPC %s %v read back as %v", k, v, out.RPC[k])
		}
	}
}

// TestUngeoreferencedRefused: GCPs without a CRS of their own, or nothing
// at all, still leave a raster nowhere on Earth.
func TestUngeoreferencedRefused(t *testing.T) {
	for _, c := range []struct{ name, py, want string }{
		{"GCPs without a CRS", `
d = create('x.tif', 30, 20)
d.SetGCPs([gdal.GCP(2.0, 48.0, 0, 0.5, 0.5), gdal.GCP(2.1, 48.0, 0, 29.5, 0.5), gdal.GCP(2.0, 47.9, 0, 0.5, 19.5)], '')
d = None
`, "has 3 GCPs but no CRS for them"},
		{"no georeferencing", `
d = create('x.tif', 30, 20); d = None
`, "has no coordinate reference system"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			runPython(t, dir, rasterMakerPrelude+c.py)
			_, err := engine.Convert(context.Background(), filepath.Join(dir, "x.tif"), t.TempDir(), fgbRecipe())
			if fault.CodeOf(err) != fault.MissingCRS || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want MissingCRS saying %q", err, c.want)
			}
		})
	}
}

// TestMaskBlocksWithinBudget: a mask read in blocks larger than the
// memory budget allows is refused like the raster's own blocks, here an
// external .msk of one 2000-row strip beside a tiled raster, in a zip
// (which preflight's TIFF checks do not open).
func TestMaskBlocksWithinBudget(t *testing.T) {
	dir := t.TempDir()
	runPython(t, dir, rasterMakerPrelude+`
d = create('s.tif', 2000, 2000); georef(d)
d.GetRasterBand(1).WriteArray(np.random.default_rng(1).integers(0, 256, (2000, 2000), dtype='uint8')); d = None
m = gdal.GetDriverByName('GTiff').Create('s.tif.msk', 2000, 2000, 1, gdal.GDT_Byte, ['COMPRESS=DEFLATE', 'BLOCKYSIZE=2000'])
m.SetMetadataItem('INTERNAL_MASK_FLAGS_1', '2')
a = np.full((2000, 2000), 255, 'uint8'); a[:10] = 0
m.GetRasterBand(1).WriteArray(a); m = None
`)
	zp := writeZip(t, filepath.Join(dir, "s.zip"), []zipEntry{
		{name: "s.tif", file: filepath.Join(dir, "s.tif")},
		{name: "s.tif.msk", file: filepath.Join(dir, "s.tif.msk")},
	})
	r := fgbRecipe()
	r.MaxMemory = 2 << 20 // 256 KiB a block: a 512² output tile fits, a 2000² mask strip does not
	_, err := engine.Convert(context.Background(), zp, t.TempDir(), r)
	if fault.CodeOf(err) != fault.BudgetExceeded || !strings.Contains(err.Error(), "has a mask read in blocks of 2000 x 2000") {
		t.Fatalf("err = %v, want BudgetExceeded for the mask's blocks", err)
	}
	r.MaxMemory = 64 << 20
	outs, err := engine.Convert(context.Background(), zp, t.TempDir(), r)
	if err != nil {
		t.Fatalf("within the budget: %v", err)
	}
	if !slices.Contains(outs[0].Fidelity.Checks, "masks") {
		t.Errorf("checks %v: the zipped mask was not compared", outs[0].Fidelity.Checks)
	}
}

// TestContentFidelityCatchesAlteredOutput: a mask pixel, a GCP or an RPC
// altered in the COG between its conversion and its check is caught as a
// SystemicError, and nothing is returned.
func TestContentFidelityCatchesAlteredOutput(t *testing.T) {
	dir := t.TempDir()
	runPython(t, dir, rasterMakerPrelude+`
gdal.SetConfigOption('GDAL_TIFF_INTERNAL_MASK', 'NO')
d = create('m.tif', 300, 200); georef(d)
d.CreateMaskBand(gdal.GMF_PER_DATASET)
m = np.zeros((200, 300), 'uint8'); m[50:150, 100:250] = 255
d.GetRasterBand(1).GetMaskBand().WriteArray(m)
d = None
s = osr.SpatialReference(); s.ImportFromEPSG(4326)
d = create('gcp.tif', 300, 200)
d.SetGCPs([gdal.GCP(2.0 + i*0.01, 48.0 - j*0.01, 0, i*30.0, j*20.0) for i in range(11) for j in range(11)], s.ExportToWkt())
d = None
d = create('rpc.tif', 300, 200)
d.SetMetadata({'LINE_OFF': '100', 'SAMP_OFF': '150', 'LAT_OFF': '48', 'LONG_OFF': '2', 'HEIGHT_OFF': '0',
    'LINE_SCALE': '100', 'SAMP_SCALE': '150', 'LAT_SCALE': '0.1', 'LONG_SCALE': '0.1', 'HEIGHT_SCALE': '500',
    'LINE_NUM_COEFF': ' '.join(['0', '-1'] + ['0']*18), 'LINE_DEN_COEFF': ' '.join(['1'] + ['0']*19),
    'SAMP_NUM_COEFF': ' '.join(['0', '0', '1'] + ['0']*17), 'SAMP_DEN_COEFF': ' '.join(['1'] + ['0']*19)}, 'RPC')
d = None
`)
	cases := []struct {
		name, src string
		change    func(ds *godal.Dataset) error
		says      string
	}{
		{"mask pixel", "m.tif", func(ds *godal.Dataset) error {
			return ds.Bands()[0].MaskBand().Write(120, 60, []byte{0}, 1, 1)
		}, "mask: 1 pixels differ"},
		{"GCP", "gcp.tif", func(ds *godal.Dataset) error {
			g := ds.GCPs()
			g[7].DfGCPZ += 0.5
			return ds.SetGCPs(g, godal.GCPSpatialRef(ds.GCPSpatialRef()))
		}, "GCP 8"},
		{"RPC", "rpc.tif", nil, "RPC LAT_OFF"}, // patched in the tag itself: patchRPCLatOff
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var altered string
			e := tampering(func(t *testing.T, p string) {
				altered = p
				if c.change == nil {
					patchRPCLatOff(t, p)
					return
				}
				updateCOG(t, p, c.change)
			}, t)
			_, err := e.Convert(context.Background(), filepath.Join(dir, c.src), t.TempDir(), fgbRecipe())
			if !isSystemic(err) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %T %v, want a SystemicError saying %q", err, err, c.says)
			}
			if _, serr := os.Stat(altered); !os.IsNotExist(serr) {
				t.Errorf("the altered output %s is left behind (%v)", altered, serr)
			}
		})
	}
}

// patchRPCLatOff adds 0.5 to LAT_OFF (the fifth double) in the
// RPCCoefficientTag of a classic little-endian TIFF's first IFD: GDAL
// does not rewrite the tag when the RPC domain is updated in place.
func patchRPCLatOff(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if string(b[:4]) != "II*\x00" {
		t.Fatalf("%s is not a classic little-endian TIFF", p)
	}
	off := int(le.Uint32(b[4:]))
	for k := range int(le.Uint16(b[off:])) {
		e := b[off+2+12*k:]
		if le.Uint16(e) == 50844 {
			at := int(le.Uint32(e[8:])) + 4*8
			le.PutUint64(b[at:], math.Float64bits(math.Float64frombits(le.Uint64(b[at:]))+0.5))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("%s has no RPC tag", p)
}
