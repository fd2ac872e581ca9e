package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// writeBootstraps creates dir/<name>/bootstrap for each name.
func writeBootstraps(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n, "bootstrap"), []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// A deploy or synth without the convert bootstrap must say which command builds it: make layer
// cross-compiles it against the layer (arm64); other architectures have no build here.
func TestMissingConvertBootstrapNamesTheLayerBuild(t *testing.T) {
	for arch, wants := range map[string][]string{
		"arm64":  {"`make layer LAYER_ARCH=arm64`", "build/gdal-layer-arm64.zip", "no Docker"},
		"x86_64": {"arm64 only", "gdalLayerArn"},
	} {
		t.Run(arch, func(t *testing.T) {
			dir := t.TempDir()
			writeBootstraps(t, dir, "hashcheck", "classify", "promote")
			c := &Config{BuildDir: dir, Architecture: arch, GDALLayerArn: "arn:aws:lambda:eu-west-1:123456789012:layer:gdal:1", RepoRoot: dir}
			_, err := ResolveAssets(c)
			if err == nil {
				t.Fatal("missing convert bootstrap accepted")
			}
			msg := err.Error()
			for _, want := range append([]string{"function convert: " + filepath.Join(dir, "convert") + "/bootstrap not found", "placeholderAssets=true"}, wants...) {
				if !strings.Contains(msg, want) {
					t.Errorf("error lacks %q:\n%s", want, msg)
				}
			}
			if strings.Contains(msg, "function hashcheck") {
				t.Errorf("names a function that was built:\n%s", msg)
			}
		})
	}
}

// Every missing bootstrap is named at once, each with its own command.
func TestMissingBootstrapsAllNamed(t *testing.T) {
	dir := t.TempDir()
	c := &Config{BuildDir: dir, Architecture: "arm64", GDALLayerArn: "arn:aws:lambda:eu-west-1:123456789012:layer:gdal:1", RepoRoot: dir}
	_, err := ResolveAssets(c)
	if err == nil {
		t.Fatal("empty build dir accepted")
	}
	for _, name := range FunctionNames {
		if !strings.Contains(err.Error(), "function "+name+":") {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
	// Every function but convert is pure Go, built by `make build`.
	if got, want := strings.Count(err.Error(), "run `make build` first"), len(FunctionNames)-1; got != want {
		t.Errorf("want `make build` for the %d pure-Go functions, got %d:\n%v", want, got, err)
	}
	if !strings.Contains(err.Error(), "`make layer LAYER_ARCH=arm64`") {
		t.Errorf("convert's command missing:\n%v", err)
	}
}

// The command in the message is a make target that exists and runs the Docker-free build.
func TestConvertBuildCommandMatchesMakefiles(t *testing.T) {
	root := repoRoot(t)
	lm, err := os.ReadFile(filepath.Join(root, "layers", "gdal", "layer.mk"))
	if err != nil {
		t.Fatal(err)
	}
	if ConvertBuildCommand("arm64") != "make layer LAYER_ARCH=arm64" ||
		!regexp.MustCompile(`(?m)^layer: .*\n(\t.*\n)*\tlayers/gdal/build-convert\.sh \$\(LAYER_ARCH\)\n`).Match(lm) {
		t.Errorf("layers/gdal/layer.mk's layer target does not build convert (layers/gdal/build-convert.sh), or %q is not it", ConvertBuildCommand("arm64"))
	}
	if st, err := os.Stat(filepath.Join(root, "layers", "gdal", "build-convert.sh")); err != nil || st.Mode()&0o111 == 0 {
		t.Error("layers/gdal/build-convert.sh is missing or not executable")
	}
}
