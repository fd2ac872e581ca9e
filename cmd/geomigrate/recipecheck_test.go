package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
)

// TestInvalidRecipeRefusedBeforeAnyFile: a recipe value, --co or CRS that
// this GDAL cannot apply refuses plan, migrate, backfill and recipe show
// with exit status 2 and one line naming the recipe's line (or the flag)
// and the reason, before any file is claimed: no destination, no state
// directory is written. (They used to pass and dead-letter every file
// they matched as a SystemicError.)
func TestInvalidRecipeRefusedBeforeAnyFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	mkdirs(t, src)
	copyFile(t, sampleFile(t, "dem_utm33.tif"), filepath.Join(src, "dem.tif"))
	copyFile(t, sampleFile(t, "parks.geojson"), filepath.Join(src, "parks.geojson"))
	recipeFile := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		args []string // after the command, its sources and --dest
		want []string // in the first line of the message
	}{
		{"lossy creation option on a lossless recipe",
			[]string{"--recipe", recipeFile("jpeg.yaml", "version: 1\ndefaults:\n  raster:\n    creation_options: {COMPRESS: JPEG}\n")},
			[]string{"jpeg.yaml", "line 4", "COMPRESS", "lossless by default", "min_psnr_db"}},
		{"--co COMPRESS=WEBP", []string{"--co", "COMPRESS=WEBP"}, []string{"the command line", "WEBP", "lossless by default"}},
		{"--co NOSUCH=1", []string{"--co", "NOSUCH=1"}, []string{"the command line", "NOSUCH", "no such option"}},
		{"unknown target_crs",
			[]string{"--recipe", recipeFile("target.yaml", "version: 1\nrules:\n  - match: \"**\"\n    raster:\n      target_crs: \"EPSG:999999\"\n")},
			[]string{"target.yaml", "line 5", "target_crs", "EPSG:999999", "PROJ"}},
		{"unknown assign_crs",
			[]string{"--recipe", recipeFile("assign.yaml", "version: 1\ndefaults:\n  assign_crs: \"EPSG:999999\"\n")},
			[]string{"assign.yaml", "line 3", "assign_crs", "EPSG:999999", "PROJ"}},
		{"a syntax error is exit 2 too",
			[]string{"--recipe", recipeFile("typo.yaml", "version: 1\ndefaults:\n  raster: {compresion: ZSTD}\n")},
			[]string{"typo.yaml", "line 3", "compresion"}},
	}
	commands := []struct {
		name string
		args func(dest string) []string
	}{
		{"plan", func(dest string) []string { return []string{"plan", src, "--dest", dest} }},
		{"migrate", func(dest string) []string { return []string{"migrate", src, "--dest", dest} }},
		{"backfill", func(dest string) []string { return []string{"backfill", src, "--dest", dest} }},
		// The AWS path refuses before it calls AWS: the endpoint below
		// answers nothing, so a call would fail otherwise (exit 1).
		{"migrate --backend aws", func(string) []string {
			return []string{"migrate", "s3://archive/rasters/", "--backend", "aws", "--dest", "s3://cloud-native/out", "--state-table", "T"}
		}},
		{"plan --backend aws", func(string) []string {
			return []string{"plan", "s3://archive/rasters/", "--backend", "aws", "--dest", "s3://cloud-native/out", "--state-table", "T"}
		}},
	}
	for k, v := range map[string]string{"AWS_EC2_METADATA_DISABLED": "true", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:9"} {
		t.Setenv(k, v)
	}
	for _, c := range cases {
		for _, cmd := range commands {
			t.Run(c.name+"/"+cmd.name, func(t *testing.T) {
				dest := filepath.Join(t.TempDir(), "out")
				_, _, err := run(t, append(cmd.args(dest), c.args...)...)
				var stderr bytes.Buffer
				if code := exitCode(err, &stderr); code != 2 {
					t.Fatalf("exit %d, want 2: %v", code, err)
				}
				first, _, _ := strings.Cut(stderr.String(), "\n")
				for _, w := range c.want {
					if !strings.Contains(first, w) {
						t.Errorf("message %q lacks %q", first, w)
					}
				}
				if _, err := os.Stat(dest); !os.IsNotExist(err) {
					t.Errorf("%s was written (a file claimed, or state): %v", dest, err)
				}
			})
		}
		// recipe show refuses the same recipe (it has no --dest).
		t.Run(c.name+"/recipe show", func(t *testing.T) {
			file, rest := "", c.args
			if rest[0] == "--recipe" {
				file, rest = rest[1], rest[2:]
			} else {
				file = recipeFile("empty.yaml", "version: 1\n")
			}
			_, _, err := run(t, append([]string{"recipe", "show", file, "dem.tif"}, rest...)...)
			if code := exitCode(err, &bytes.Buffer{}); code != 2 {
				t.Fatalf("exit %d, want 2: %v", code, err)
			}
		})
	}
}

// TestLossyRecipeEndToEnd: migrate with rio-cogeo's jpeg profile and a
// threshold writes a JPEG COG of an RGB orthophoto; the run report's
// fidelity entry names it lossy with each band's PSNR (valid against
// docs/report-schema.json), the output's own metadata says lossy, and the
// float raster the same rule matches waits in remediation, saying why.
func TestLossyRecipeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	src, dest := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	mkdirs(t, src)
	script := `
import sys
import numpy as np
from osgeo import gdal, osr
gdal.UseExceptions()
ds = gdal.GetDriverByName("GTiff").Create(sys.argv[1], 600, 400, 3, gdal.GDT_Byte)
ds.SetGeoTransform([500000, 1, 0, 5200000, 0, -1])
srs = osr.SpatialReference(); srs.ImportFromEPSG(32633)
ds.SetProjection(srs.ExportToWkt())
y, x = np.mgrid[0:400, 0:600]
for b in range(3):
    ds.GetRasterBand(b+1).WriteArray((128 + 90*np.sin(x/(20.0+7*b))*np.cos(y/31.0)).astype(np.uint8))
    ds.GetRasterBand(b+1).SetColorInterpretation([gdal.GCI_RedBand, gdal.GCI_GreenBand, gdal.GCI_BlueBand][b])
`
	if out, err := exec.Command(python, "-c", script, filepath.Join(src, "ortho.tif")).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	copyFile(t, sampleFile(t, "temperature_f32.tif"), filepath.Join(src, "temperature.tif"))
	recipePath := filepath.Join(dir, "recipe.yaml")
	if err := os.WriteFile(recipePath, []byte("version: 1\ndefaults:\n  raster: {profile: jpeg, quality: 90, min_psnr_db: 30}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file sent to remediation does not fail the run: the report says.
	out, stderr, _ := run(t, "migrate", src, "--dest", dest, "--recipe", recipePath)
	rep := lastReport(t, out)
	byKey := map[string]localrun.Outcome{}
	for _, f := range rep.Files {
		byKey[f.Key] = f
	}
	ortho, temp := byKey["ortho.tif"], byKey["temperature.tif"]
	if ortho.Status != localrun.StatusCompleted || len(ortho.Fidelity) != 1 || ortho.Fidelity[0].Lossy == nil {
		t.Fatalf("ortho.tif: %+v\n%s", ortho, stderr)
	}
	l := ortho.Fidelity[0].Lossy
	if l.Compression != "JPEG" || l.Quality != 90 || l.MinPSNR != 30 || len(l.Bands) != 3 || l.Bands[0].PSNR == nil || *l.Bands[0].PSNR < 30 {
		t.Errorf("fidelity: %+v", l)
	}
	if temp.Status != localrun.StatusRemediation || temp.Code != "InvalidInput" || !strings.Contains(temp.Message, "lossy") || !strings.Contains(temp.Message, "Float32") {
		t.Errorf("temperature.tif: %s %s: %s", temp.Status, temp.Code, temp.Message)
	}
	i := strings.LastIndex(out, "report: ")
	reportPath := strings.TrimSpace(strings.SplitN(out[i+len("report: "):], "\n", 2)[0])
	if err := reportSchema(t).Validate(readJSON(t, reportPath)); err != nil {
		t.Errorf("the report with a lossy fidelity entry: %v", err)
	}
	if got := cogCompression(t, filepath.Join(dest, "ortho.tif")); got != "YCbCr JPEG" {
		t.Errorf("compression %q", got)
	}
	info, err := exec.Command("gdalinfo", filepath.Join(dest, "ortho.tif")).Output()
	if err != nil || !strings.Contains(string(info), "GEOMIGRATE_LOSSY=lossy JPEG quality=90 min_psnr_db=30") {
		t.Errorf("gdalinfo: %v\n%s", err, info)
	}
}
