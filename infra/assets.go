package main

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Assets resolves where the Lambda code and the GDAL layer come from.
//
// Real deploys use build/<name>/bootstrap (made by the root Makefile's `build` target) and the
// layer zip from `make layer` (or an existing layer ARN). With the context flag
// placeholderAssets=true (set by `make synth` and by the tests) each missing input is replaced
// by a small stand-in written to a temporary directory, and the stack carries a warning, so a
// template can be synthesized and checked on a machine that has built nothing. Deploy targets
// never set the flag.
type Assets struct {
	FunctionDirs map[string]string // name → directory holding bootstrap
	LayerZip     string            // path of the layer zip ("" when LayerArn is used)
	LayerArn     string
	Placeholders []string // what was replaced by a stand-in (for the warning)
	// ContainerContext is the stand-in build context of the convert container ("" : the
	// repository, or the convertImage context value).
	ContainerContext string
	tmp              string
}

const placeholderBootstrap = "#!/bin/sh\necho 'geomigrate placeholder asset: run make build before deploying' >&2\nexit 1\n"

// ResolveAssets finds the build outputs or, when allowed, writes stand-ins for the missing ones.
func ResolveAssets(c *Config) (*Assets, error) {
	a := &Assets{FunctionDirs: map[string]string{}, LayerArn: c.GDALLayerArn}
	var missing []string
	for _, name := range FunctionNames {
		dir := c.Path(filepath.Join(c.BuildDir, name))
		if _, err := os.Stat(filepath.Join(dir, "bootstrap")); err == nil {
			a.FunctionDirs[name] = dir
			continue
		}
		if !c.PlaceholderAssets {
			missing = append(missing, fmt.Sprintf("function %s: %s/bootstrap not found: %s", name, dir, bootstrapBuildHint(c, name)))
			continue
		}
		p, err := a.placeholderDir(name)
		if err != nil {
			return nil, err
		}
		a.FunctionDirs[name] = p
		a.Placeholders = append(a.Placeholders, "function "+name)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s\n  (or pass -c placeholderAssets=true to synthesize without a build; never deploy that)", strings.Join(missing, "\n  "))
	}
	// The convert container's image is pushed before a deploy (make image-push, context
	// convertImage); synth and the tests stand a build context in for it that cannot build.
	if c.PlaceholderAssets && c.ConvertImage == "" {
		d, err := a.placeholderContainerContext()
		if err != nil {
			return nil, err
		}
		a.ContainerContext = d
		a.Placeholders = append(a.Placeholders, "convert container image")
	}
	if a.LayerArn != "" {
		return a, nil
	}
	zipPath := c.Path(c.GDALLayerZip)
	if _, err := os.Stat(zipPath); err == nil {
		a.LayerZip = zipPath
		return a, nil
	}
	if !c.PlaceholderAssets {
		return nil, fmt.Errorf("GDAL layer: neither context gdalLayerArn nor a built layer zip at %s is available.\n"+
			"  Build it with `make layer` (no Docker needed, see layers/gdal/README.md), or pass\n"+
			"  -c gdalLayerArn=arn:aws:lambda:<region>:<account>:layer:<name>:<version> to use an existing layer,\n"+
			"  or -c placeholderAssets=true to synthesize without it (never deploy that)", zipPath)
	}
	z, err := a.placeholderLayer()
	if err != nil {
		return nil, err
	}
	a.LayerZip = z
	a.Placeholders = append(a.Placeholders, "GDAL layer")
	return a, nil
}

// ConvertBuildCommand is the command that builds the convert bootstrap for arch: convert links
// GDAL through cgo, so it is cross-compiled against the layer's own /opt by make layer
// (layers/gdal/build-convert.sh), without Docker.
func ConvertBuildCommand(arch string) string { return "make layer LAYER_ARCH=" + arch }

// bootstrapBuildHint says how to produce build/<name>/bootstrap.
func bootstrapBuildHint(c *Config, name string) string {
	if name != "convert" {
		return "run `make build` first"
	}
	arch := c.Architecture
	if arch == "" {
		arch = "arm64"
	}
	if arch != "arm64" {
		return fmt.Sprintf("the Docker-free layer build (make layer) is arm64 only: for %s bring a convert bootstrap linked against your own GDAL layer (-c gdalLayerArn=...)", arch)
	}
	hint := fmt.Sprintf("build it with `%s` (no Docker: cross-compiled against the layer it also writes, build/gdal-layer-%s.zip; see layers/gdal/README.md)",
		ConvertBuildCommand(arch), arch)
	if filepath.Clean(c.BuildDir) != "build" {
		hint += fmt.Sprintf("; make layer writes build/convert/bootstrap: copy it to %s/convert/", c.BuildDir)
	}
	return hint
}

func (a *Assets) tmpDir() (string, error) {
	if a.tmp == "" {
		d, err := os.MkdirTemp("", "geomigrate-placeholder-assets-")
		if err != nil {
			return "", err
		}
		a.tmp = d
	}
	return a.tmp, nil
}

func (a *Assets) placeholderDir(name string) (string, error) {
	t, err := a.tmpDir()
	if err != nil {
		return "", err
	}
	d := filepath.Join(t, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	// Same content for every run, so the asset hash (and the template) is stable.
	if err := os.WriteFile(filepath.Join(d, "bootstrap"), []byte(placeholderBootstrap), 0o755); err != nil {
		return "", err
	}
	return d, nil
}

func (a *Assets) placeholderLayer() (string, error) {
	t, err := a.tmpDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(t, "gdal-layer-placeholder.zip")
	f, err := os.Create(p)
	if err != nil {
		return "", err
	}
	zw := zip.NewWriter(f)
	w, err := zw.Create("share/gdal/PLACEHOLDER")
	if err == nil {
		_, err = w.Write([]byte("placeholder GDAL layer: run make layer\n"))
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return p, err
}

// Cleanup removes the stand-ins; call it after app.Synth (the CLI has copied them into cdk.out).
func (a *Assets) Cleanup() {
	if a != nil && a.tmp != "" {
		os.RemoveAll(a.tmp)
	}
}
