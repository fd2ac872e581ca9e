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
	if strings.Join(m.Architectures, ",") != "arm64,x86_64" || !strings.Contains(m.BaseImage, "provided:al2023") {
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

	// The build reads the manifest (single source of drivers and versions) and keeps GDAL offline.
	df, _ := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	sh, _ := os.ReadFile(filepath.Join(dir, "build.sh"))
	check := dockerStage(string(df), "check")
	for what, cond := range map[string]bool{
		"build.sh reads manifest.json":                strings.Contains(string(sh), "manifest.json"),
		"build.sh passes the driver flags":            strings.Contains(string(sh), `DRIVER_FLAGS="$DRIVER_FLAGS"`),
		"build.sh passes the driver names":            strings.Contains(string(sh), `DRIVER_NAMES="$DRIVER_NAMES"`),
		"build.sh writes build/gdal-layer-<arch>":     strings.Contains(string(sh), `gdal-layer-$ARCH.zip`),
		"Dockerfile turns optional drivers off":       strings.Contains(string(df), "-DGDAL_BUILD_OPTIONAL_DRIVERS=OFF") && strings.Contains(string(df), "-DOGR_BUILD_OPTIONAL_DRIVERS=OFF"),
		"Dockerfile builds without curl":              strings.Contains(string(df), "-DGDAL_USE_CURL=OFF"),
		"Dockerfile builds without Arrow/Parquet":     strings.Contains(string(df), "-DGDAL_USE_ARROW=OFF") && strings.Contains(string(df), "-DGDAL_USE_PARQUET=OFF") && !strings.Contains(string(df), "arrow-devel"),
		"Dockerfile builds convert in the image":      strings.Contains(string(df), "./functions/convert"),
		"check stage starts from the Lambda image":    strings.HasPrefix(check, "FROM base AS check"),
		"check stage installs nothing":                !strings.Contains(check, "dnf ") && !strings.Contains(check, "yum "),
		"check stage checks drivers in the image":     strings.Contains(check, "drivers.txt") && strings.Contains(check, "DRIVER_NAMES"),
		"check stage runs ldd on libs and bootstrap":  strings.Contains(check, "ldd") && strings.Contains(check, "/opt/lib") && strings.Contains(check, "/var/task") && strings.Contains(check, "bootstrap"),
		"check stage fails on a library not found":    strings.Contains(check, "grep -q 'not found'") && strings.Contains(check, "exit 1"),
		"export takes the layer from the check stage": strings.Contains(dockerStage(string(df), "export"), "--from=check /opt /opt"),
	} {
		if !cond {
			t.Error(what)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "build.sh")); err != nil || st.Mode()&0o111 == 0 {
		t.Error("build.sh missing or not executable")
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
		var drivers string
		for _, f := range z.File {
			total += f.UncompressedSize64
			names[f.Name] = true
			if f.Name == "share/gdal-layer/drivers.txt" {
				r, err := f.Open()
				if err == nil {
					b, _ := io.ReadAll(r)
					drivers = string(b)
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
		for _, d := range m.Drivers {
			if !strings.Contains(drivers, "  "+d.Name+" -") {
				t.Errorf("%s: driver %s not in share/gdal-layer/drivers.txt", p, d.Name)
			}
		}
	}
	if !found {
		t.Skip("no build/gdal-layer-<arch>.zip (run make layer, needs Docker); the manifest itself is checked by TestLayerManifest")
	}
}

// dockerStage returns the text of the Dockerfile stage named name, from its FROM line to the next FROM.
func dockerStage(df, name string) string {
	lines := strings.Split(df, "\n")
	var out []string
	in := false
	for _, l := range lines {
		if strings.HasPrefix(l, "FROM ") {
			if in {
				break
			}
			in = strings.HasSuffix(strings.TrimSpace(l), " AS "+name)
		}
		if in {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
