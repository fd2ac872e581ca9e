package localrun_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// TestLineageAndFidelityOfEveryOutput runs the samples through the state
// machine and checks, for every output:
//   - the run report names what Convert proved equal to the source, and so
//     does the final object's metadata;
//   - a copy of the file alone (no object metadata) still says which source
//     content and which recipe it came from: the job's SHA-256 and recipe
//     hash, read from the COG's metadata (by gdalinfo, an outside reader,
//     when installed) or the GeoParquet key-value metadata.
func TestLineageAndFidelityOfEveryOutput(t *testing.T) {
	dir, _, keys := samples(t)
	p := newPipeline(t, dir)
	outcomes := p.run(t, p.store, keys)
	report := localrun.NewReport(time.Now(), nil)
	ctx := context.Background()
	var rasters, parquets int
	for _, key := range keys {
		o := outcomes[key]
		report.Files = append(report.Files, o)
		if o.Status != localrun.StatusCompleted {
			continue
		}
		if len(o.Fidelity) != len(o.Outputs) {
			t.Fatalf("%s: %d fidelity records for %d outputs", key, len(o.Fidelity), len(o.Outputs))
		}
		job, err := p.tracker.Get(ctx, o.JobID)
		if err != nil {
			t.Fatal(err)
		}
		for i, out := range o.Outputs {
			f := o.Fidelity[i]
			if f == nil || len(f.Checks) == 0 {
				t.Fatalf("%s → %s: no fidelity record in the report", key, out)
			}
			obj, err := p.store.Head(ctx, "dest", out)
			if err != nil || obj.Metadata[migration.MetaFidelity] != f.Summary() {
				t.Errorf("%s: object metadata %v (%v), want fidelity %q", out, obj.Metadata, err, f.Summary())
			}
			// The file alone, copied away from its object metadata.
			copied := filepath.Join(t.TempDir(), filepath.Base(out))
			b, err := os.ReadFile(filepath.Join(p.destDir, filepath.FromSlash(out)))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(copied, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var lin recipe.Lineage
			switch filepath.Ext(out) {
			case ".tif":
				rasters++
				if lin, err = gdal.ReadCOGLineage(copied); err != nil {
					t.Fatal(err)
				}
				if outside := gdalinfoLineage(t, copied); outside != nil && *outside != lin {
					t.Errorf("%s: gdalinfo reads %+v, godal %+v", out, *outside, lin)
				}
			case ".parquet":
				parquets++
				fh, err := os.Open(copied)
				if err != nil {
					t.Fatal(err)
				}
				info, err := geoparquet.ReadInfo(fh, int64(len(b)))
				fh.Close()
				if err != nil {
					t.Fatal(err)
				}
				if lin, err = recipe.ParseLineage(info.KeyValue[geoparquet.LineageKey]); err != nil {
					t.Fatal(err)
				}
				if lin.Layer != f.Layer {
					t.Errorf("%s: lineage layer %q, fidelity layer %q", out, lin.Layer, f.Layer)
				}
			default:
				continue // FlatGeobuf: GDAL 3.6 writes no metadata (docs/fidelity.md)
			}
			if lin.SourceSHA256 != job.SourceSHA256 || lin.RecipeHash != job.RecipeHash || lin.Fingerprint != job.Fingerprint ||
				lin.ToolVersion != "test" || lin.EngineVersion != p.engine.Version() {
				t.Errorf("%s: lineage in the file %+v, job %s / %s", out, lin, job.SourceSHA256, job.RecipeHash)
			}
		}
	}
	if rasters == 0 || parquets == 0 {
		t.Fatalf("checked %d COGs and %d GeoParquet files; the samples should give both", rasters, parquets)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := report.Write(path); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(text), `"fidelity": [`) || !strings.Contains(string(text), `"band_crc32c"`) {
		t.Errorf("the written report holds no fidelity records (%v)", err)
	}
}

// gdalinfoLineage reads a COG's lineage with the gdalinfo program (nil
// when it is not installed).
func gdalinfoLineage(t *testing.T, path string) *recipe.Lineage {
	t.Helper()
	if _, err := exec.LookPath("gdalinfo"); err != nil {
		return nil
	}
	out, err := exec.Command("gdalinfo", "-json", path).Output()
	if err != nil {
		t.Fatalf("gdalinfo: %v", err)
	}
	var info struct {
		Metadata map[string]map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatal(err)
	}
	md := info.Metadata[""]
	return &recipe.Lineage{
		SourceSHA256: md[gdal.MetaSourceSHA256], Fingerprint: md[gdal.MetaSourceFingerprint], RecipeHash: md[gdal.MetaRecipe],
		ToolVersion: md[gdal.MetaToolVersion], EngineVersion: md[gdal.MetaEngineVersion],
	}
}
