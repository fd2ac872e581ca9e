package gdal

import (
	"encoding/json"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The Lambda layer (layers/gdal/manifest.json, what layers/gdal/build.sh
// compiles in) and this package's driver lists must name the same drivers:
// a driver the allow-list accepts but the layer lacks fails on Lambda only
// (UnsupportedFormat for a file the CLI converts); a driver the layer
// builds that nothing uses is weight (and attack surface) paid for nothing.
// No Docker needed: this reads the manifest, not a built layer.

type layerDriver struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Role  string `json:"role"`
	Cmake string `json:"cmake"`
	Why   string `json:"why"`
}

type layerManifest struct {
	Drivers  []layerDriver `json:"drivers"`
	NotBuilt []struct {
		Name string `json:"name"`
		Why  string `json:"why"`
	} `json:"not_built"`
	Libraries []string          `json:"libraries"`
	Versions  map[string]string `json:"versions"`
}

func readLayerManifest(t *testing.T) layerManifest {
	t.Helper()
	p := filepath.Join("..", "..", "layers", "gdal", "manifest.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m layerManifest
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return m
}

func TestLayerManifestMatchesDriverLists(t *testing.T) {
	m := readLayerManifest(t)

	// What this package opens sources with (the allow-list and the drivers
	// a container hands its subdatasets to), by kind, and what it writes with.
	inputKind := map[string]string{}
	for kind, list := range map[string][]string{"raster": preflight.RasterDrivers, "vector": preflight.VectorDrivers} {
		for _, d := range list {
			for _, s := range subdatasetDrivers(d) {
				inputKind[s] = kind
			}
		}
	}
	output := map[string]bool{}
	for _, d := range outputDrivers {
		output[d] = true
	}

	built := map[string]layerDriver{}
	for _, d := range m.Drivers {
		if _, dup := built[d.Name]; dup {
			t.Errorf("manifest lists driver %q twice", d.Name)
		}
		built[d.Name] = d
	}
	notBuilt := map[string]string{}
	for _, d := range m.NotBuilt {
		if strings.TrimSpace(d.Why) == "" {
			t.Errorf("not_built %q: no reason given", d.Name)
		}
		if _, ok := built[d.Name]; ok {
			t.Errorf("driver %q is both built and not_built", d.Name)
		}
		if _, ok := inputKind[d.Name]; !ok {
			t.Errorf("not_built %q is not in the allow-list (preflight.RasterDrivers/VectorDrivers): drop it from the manifest", d.Name)
		}
		notBuilt[d.Name] = d.Why
	}

	for _, name := range sortedKeys(inputKind) {
		_, isBuilt := built[name]
		_, isOut := notBuilt[name]
		if !isBuilt && !isOut {
			t.Errorf("allow-listed input driver %q is not in the layer: add it to layers/gdal/manifest.json drivers, or to not_built with the reason", name)
		}
	}
	for _, name := range outputDrivers {
		if _, ok := built[name]; !ok {
			t.Errorf("output driver %q (outputDrivers) is not in the layer", name)
		}
	}

	for _, name := range sortedKeys(built) {
		d := built[name]
		kind, isInput := inputKind[name]
		isOutput := output[name]
		switch d.Role {
		case "input":
			if !isInput {
				t.Errorf("layer driver %q has role input but is not in preflight.RasterDrivers/VectorDrivers (or their subdataset drivers)", name)
			}
		case "output":
			if !isOutput || isInput {
				t.Errorf("layer driver %q has role output; outputDrivers=%v, input=%v", name, outputDrivers, isInput)
			}
		case "input+output":
			if !isInput || !isOutput {
				t.Errorf("layer driver %q has role input+output; input=%v output=%v", name, isInput, isOutput)
			}
		case "internal":
			if isInput || isOutput {
				t.Errorf("layer driver %q has role internal but the engine reads or writes with it: give it that role", name)
			}
			if strings.TrimSpace(d.Why) == "" {
				t.Errorf("internal layer driver %q: say why it is built (field why)", name)
			}
		default:
			t.Errorf("layer driver %q: role %q (want input, output, input+output or internal)", name, d.Role)
		}
		if isInput && d.Kind != kind {
			t.Errorf("layer driver %q: kind %q, the allow-list has it as %s", name, d.Kind, kind)
		}
		if slices.Contains(preflight.UnsafeDrivers, name) && d.Cmake != "core" {
			t.Errorf("layer driver %q is one this package refuses as unsafe; build it only if GDAL cannot do without it (cmake core)", name)
		}
	}

	// GeoParquet is written in Go (internal/geoparquet): GDAL's Parquet
	// driver and Apache Arrow C++ are dead weight in the layer.
	for _, d := range m.Drivers {
		if strings.EqualFold(d.Name, "Parquet") || strings.EqualFold(d.Name, "Arrow") {
			t.Errorf("layer builds GDAL's %s driver; GeoParquet is written by internal/geoparquet", d.Name)
		}
	}
	for _, l := range m.Libraries {
		if strings.Contains(strings.ToLower(l), "arrow") || strings.Contains(strings.ToLower(l), "parquet") {
			t.Errorf("layer ships library %q; nothing in the engine uses it", l)
		}
	}
	for k := range m.Versions {
		if k == "arrow" {
			t.Error("manifest pins an Arrow version; the layer builds no Arrow")
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
