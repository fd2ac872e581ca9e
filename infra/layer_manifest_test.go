package main

import (
	"archive/zip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type layerManifest struct {
	Versions      map[string]string `json:"versions"`
	BaseImage     string            `json:"base_image"`
	Architectures []string          `json:"architectures"`
	Network       bool              `json:"network"`
	Drivers       []struct {
		Name, Kind, Role, Cmake, Why string
	} `json:"drivers"`
	NotBuilt []struct {
		Name, Why string
	} `json:"not_built"`
	Libraries  []string         `json:"libraries"`
	Layout     []string         `json:"layout"`
	SizeBudget map[string]int64 `json:"size_budget"`
}

func readLayerManifest(t *testing.T) (*layerManifest, string) {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "layers", "gdal")
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m layerManifest
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return &m, dir
}

// The layer's contract, checked without Docker.
func TestLayerManifest(t *testing.T) {
	m, dir := readLayerManifest(t)
	// Which drivers: internal/gdal's TestLayerManifestMatchesDriverLists compares them with the
	// engine's own allow-list and output drivers (no copy of those lists here).
	for _, d := range m.Drivers {
		if d.Cmake == "" || (d.Cmake != "core" && !strings.HasPrefix(d.Cmake, "GDAL_ENABLE_DRIVER_") && !strings.HasPrefix(d.Cmake, "OGR_ENABLE_DRIVER_")) {
			t.Errorf("driver %s: cmake switch %q", d.Name, d.Cmake)
		}
		if strings.Contains(d.Name, "|") {
			t.Errorf("driver %q: '|' separates DRIVER_NAMES for the check stage", d.Name)
		}
	}
	for _, lib := range []string{"proj", "geos", "zstd", "libdeflate", "openjpeg"} {
		if !strings.Contains(strings.Join(m.Libraries, ","), lib) {
			t.Errorf("manifest lacks library %s", lib)
		}
	}
	if m.Network {
		t.Error("the layer must be built without network access (network: false)")
	}
	if strings.Join(m.Architectures, ",") != "arm64" || !strings.Contains(m.BaseImage, "provided:al2023") {
		t.Errorf("architectures %v base %s", m.Architectures, m.BaseImage)
	}
	if _, ok := m.Versions["arrow"]; ok {
		t.Error("manifest pins Arrow; GeoParquet is written in Go and the layer builds no Arrow")
	}
	for _, v := range []string{"gdal", "proj", "geos"} {
		if m.Versions[v] == "" {
			t.Errorf("no pinned %s version", v)
		}
	}

	// Size budget: the layer plus the function must fit Lambda's 250 MiB unzipped limit.
	b := m.SizeBudget
	if b["lambda_unzipped_limit_bytes"] != 250*1024*1024 {
		t.Errorf("Lambda unzipped limit is 262144000 bytes, manifest says %d", b["lambda_unzipped_limit_bytes"])
	}
	if b["layer_unzipped_max_bytes"] <= 0 || b["layer_unzipped_max_bytes"]+b["function_reserve_bytes"] > b["lambda_unzipped_limit_bytes"] {
		t.Errorf("layer budget %d + function reserve %d exceeds %d", b["layer_unzipped_max_bytes"], b["function_reserve_bytes"], b["lambda_unzipped_limit_bytes"])
	}
	if b["layer_zip_max_bytes"] <= 0 || b["layer_zip_max_bytes"] > b["layer_unzipped_max_bytes"] {
		t.Errorf("zip budget %d", b["layer_zip_max_bytes"])
	}

	// The build reads the manifest (single source of drivers, versions and Debian packages) and
	// keeps GDAL offline.
	sh, _ := os.ReadFile(filepath.Join(dir, "build-layer.sh"))
	env, _ := os.ReadFile(filepath.Join(dir, "layer-env.sh"))
	for what, cond := range map[string]bool{
		"layer-env.sh reads manifest.json":              strings.Contains(string(env), `MANIFEST="$HERE/manifest.json"`),
		"layer-env.sh takes the driver switches":        strings.Contains(string(env), "DRIVER_FLAGS=") && strings.Contains(string(env), "m['drivers']"),
		"layer-env.sh takes the Debian packages":        strings.Contains(string(env), "m['debian']['packages']"),
		"build-layer.sh turns optional drivers off":     strings.Contains(string(sh), "-DGDAL_BUILD_OPTIONAL_DRIVERS=OFF") && strings.Contains(string(sh), "-DOGR_BUILD_OPTIONAL_DRIVERS=OFF"),
		"build-layer.sh builds without curl":            strings.Contains(string(sh), "-DGDAL_USE_CURL=OFF"),
		"build-layer.sh builds without Arrow/Parquet":   strings.Contains(string(sh), "-DGDAL_USE_ARROW=OFF") && strings.Contains(string(sh), "-DGDAL_USE_PARQUET=OFF"),
		"build-layer.sh builds with iconv (code pages)": strings.Contains(string(sh), "-DGDAL_USE_ICONV=ON"),
		"build-layer.sh sets DT_RPATH":                  strings.Contains(string(sh), "--force-rpath --set-rpath /opt/lib"),
		"build-layer.sh checks the drivers exactly":     strings.Contains(string(sh), "the layer's drivers differ from layers/gdal/manifest.json"),
		"build-layer.sh writes build/gdal-layer-<arch>": strings.Contains(string(sh), `gdal-layer-$ARCH.zip`),
	} {
		if !cond {
			t.Error(what)
		}
	}
	for _, f := range []string{"build-layer.sh", "build-convert.sh", "lambda-chroot.sh", "layer-report.py"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s missing or not executable", f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Error("layers/gdal/README.md missing")
	}
}

// When a layer has been built (make layer), check the real zip against the same manifest.
func TestBuiltLayerAgainstManifest(t *testing.T) {
	m, _ := readLayerManifest(t)
	found := false
	for _, arch := range m.Architectures {
		p := filepath.Join(repoRoot(t), "build", "gdal-layer-"+arch+".zip")
		z, err := zip.OpenReader(p)
		if err != nil {
			continue
		}
		found = true
		var total uint64
		names := map[string]bool{}
		var drivers, version string
		for _, f := range z.File {
			total += f.UncompressedSize64
			names[f.Name] = true
			if f.Name == "share/gdal-layer/drivers.txt" || f.Name == "share/gdal-layer/version.txt" {
				r, err := f.Open()
				if err == nil {
					b, _ := io.ReadAll(r)
					if strings.HasSuffix(f.Name, "drivers.txt") {
						drivers = string(b)
					} else {
						version = strings.TrimSpace(string(b))
					}
					r.Close()
				}
			}
		}
		z.Close()
		if int64(total) > m.SizeBudget["layer_unzipped_max_bytes"] {
			t.Errorf("%s: %d bytes unzipped, budget %d", p, total, m.SizeBudget["layer_unzipped_max_bytes"])
		}
		for _, l := range m.Layout {
			ok := false
			for n := range names {
				if strings.HasPrefix(n, l) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s lacks %s", p, l)
			}
		}
		// Exactly the manifest's drivers, as the layer's own gdalinfo/ogrinfo listed them.
		want := map[string]bool{}
		for _, d := range m.Drivers {
			want[d.Name] = true
		}
		got := map[string]bool{}
		for _, l := range strings.Split(drivers, "\n") {
			if name, _, ok := strings.Cut(strings.TrimPrefix(l, "  "), " -"); ok && strings.HasPrefix(l, "  ") {
				got[name] = true
			}
		}
		for n := range want {
			if !got[n] {
				t.Errorf("%s: manifest driver %s not in share/gdal-layer/drivers.txt", p, n)
			}
		}
		for n := range got {
			if !want[n] {
				t.Errorf("%s: the layer registers driver %s, which the manifest does not list", p, n)
			}
		}
		if !strings.HasPrefix(version, "GDAL "+m.Versions["gdal"]+",") {
			t.Errorf("%s: the layer's gdalinfo --version says %q, the manifest pins %s", p, version, m.Versions["gdal"])
		}
	}
	if !found {
		if os.Getenv("GEOMIGRATE_REQUIRE_LAYER") != "" {
			t.Fatal("no build/gdal-layer-<arch>.zip: run make layer")
		}
		t.Skip("no build/gdal-layer-<arch>.zip (run make layer); the manifest itself is checked by TestLayerManifest")
	}
}
