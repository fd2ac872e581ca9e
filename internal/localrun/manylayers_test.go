package localrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/validate"
)

// TestAManyLayerSourceCompletesInTheContainer: a 300-layer GeoPackage
// (made with GDAL's Python bindings) routed to the container task
// completes: its outputs list, far over Step Functions' payload quota, is
// staged by Convert and comes back from the task's result object as
// outputs_ref (ConvertTaskSucceeded, the Parallel's ResultSelector), and
// Promote reads it from staging.
func TestAManyLayerSourceCompletesInTheContainer(t *testing.T) {
	const layers = 300
	src := t.TempDir()
	script := fmt.Sprintf(`
import sys
from osgeo import ogr, osr
ogr.UseExceptions()
srs = osr.SpatialReference(); srs.ImportFromEPSG(4326)
ds = ogr.GetDriverByName('GPKG').CreateDataSource(sys.argv[1])
ds.StartTransaction()
for i in range(%d):
    l = ds.CreateLayer('layer_%%03d' %% i, srs, ogr.wkbPoint)
    l.CreateField(ogr.FieldDefn('n', ogr.OFTInteger))
    f = ogr.Feature(l.GetLayerDefn()); f.SetField('n', i)
    f.SetGeometry(ogr.CreateGeometryFromWkt('POINT (%%d %%d)' %% (i %% 180, i %% 90)))
    l.CreateFeature(f)
ds.CommitTransaction()
`, layers)
	if out, err := exec.Command("/usr/bin/python3", "-c", script, filepath.Join(src, "many.gpkg")).CombinedOutput(); err != nil {
		t.Fatalf("make the GeoPackage: %v\n%s", err, out)
	}
	p := newPipeline(t, src)
	p.cfg.Container = migration.ContainerLimits{Bytes: 1, PixelsBands: 1, Features: 1}
	conv := migration.NewConvert(p.cfg, p.store, p.tracker, p.engine, validate.Output, quiet)
	exec := p.containerExecutor(t, p.inProcessTask(conv))
	outs := (&localrun.Runner{Executor: exec, Workers: 1}).Run(context.Background(), []migration.Source{{Bucket: "src", Key: "many.gpkg", KeyEncoding: "plain"}})
	o := outs[0]
	if o.Status != localrun.StatusCompleted || o.Message != "" || o.BytesOut == 0 || !slices.Contains(entered(o), "ConvertInContainer") {
		b, _ := json.Marshal(o)
		t.Fatalf("outcome %.2000s (states %v)", b, entered(o))
	}
	for i := range layers {
		if _, err := os.Stat(filepath.Join(p.destDir, "many", fmt.Sprintf("layer_%03d.parquet", i))); err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
	}
	staged, _ := filepath.Glob(filepath.Join(p.destDir, migration.DefaultStagingPrefix, "*", "*"))
	for _, f := range staged {
		if !strings.HasPrefix(filepath.Base(f), ".geomigrate-") {
			t.Errorf("staging still holds %s", f)
		}
	}
}
