package localrun_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
)

// TestRasterContentMigrates: rasters placed by GCPs or RPCs, one with an
// external mask and one whose overviews are not sorted by size, each
// complete through the whole pipeline (convert, validate, describe, stage,
// promote); none is routed, none reaches the DLQ.
func TestRasterContentMigrates(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no %s with GDAL's bindings", python)
	}
	gdalEngine(t)
	dir := t.TempDir()
	cmd := exec.Command(python, "-c", `
from osgeo import gdal, osr
import numpy as np
gdal.UseExceptions()
def create(name, w, h):
    d = gdal.GetDriverByName('GTiff').Create(name, w, h, 1, gdal.GDT_Byte, ['TILED=YES'])
    d.GetRasterBand(1).WriteArray((np.arange(w*h) % 200).reshape(h, w).astype('uint8'))
    return d
def georef(d):
    s = osr.SpatialReference(); s.ImportFromEPSG(32631)
    d.SetGeoTransform([500000, 10, 0, 5000000, 0, -10]); d.SetProjection(s.ExportToWkt())
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
gdal.SetConfigOption('GDAL_TIFF_INTERNAL_MASK', 'NO')
d = create('masked.tif', 300, 200); georef(d)
d.CreateMaskBand(gdal.GMF_PER_DATASET)
m = np.zeros((200, 300), 'uint8'); m[50:150, 100:250] = 255
d.GetRasterBand(1).GetMaskBand().WriteArray(m)
d = None
# A second sidecar: GDAL is then given the list of siblings and reads
# only those.
open('masked.tif.aux.xml', 'w').write('<PAMDataset><Metadata><MDI key="NOTE">beside</MDI></Metadata></PAMDataset>')
gdal.SetConfigOption('GDAL_TIFF_INTERNAL_MASK', 'YES')
d = create('unsorted.tif', 1024, 1024); georef(d)
d.BuildOverviews('NEAREST', [4]); d.BuildOverviews('NEAREST', [2])
d = None
`)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	p := newPipeline(t, dir)
	keys := []string{"gcp.tif", "masked.tif", "rpc.tif", "unsorted.tif"}
	got := p.run(t, p.store, keys)
	for _, k := range keys {
		if o := got[k]; o.Status != localrun.StatusCompleted {
			t.Errorf("%s: %s (%s: %s)", k, o.Status, o.Error, o.Message)
		}
	}
	if n := len(p.deadLetter.messages(t)); n != 0 {
		t.Errorf("%d message(s) in the DLQ", n)
	}
	// The mask reached the COG: GDAL's bindings count its masked pixels.
	cog := ""
	for k := range outputs(t, p) {
		if strings.HasSuffix(k, "masked.tif") {
			cog = filepath.Join(p.destDir, filepath.FromSlash(k))
		}
	}
	out, err := exec.Command(python, "-c", `
import sys
from osgeo import gdal
gdal.UseExceptions()
d = gdal.Open(sys.argv[1])  # held: a band does not keep its dataset alive
b = d.GetRasterBand(1)
print(b.GetMaskFlags(), int((b.GetMaskBand().ReadAsArray() == 0).sum()))
`, cog).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "2 45000" {
		t.Errorf("the COG's mask: flags and masked pixels %q (%v), want 2 45000", out, err)
	}
}
