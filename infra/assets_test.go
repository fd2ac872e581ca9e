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

// A deploy or synth without the convert bootstrap must say which command builds it: on a
// non-arm64 host `make build` cannot (cgo + an arm64 GDAL exist only in the layer image).
func TestMissingConvertBootstrapNamesTheLayerBuild(t *testing.T) {
	for _, arch := range []string{"arm64", "x86_64"} {
		t.Run(arch, func(t *testing.T) {
			dir := t.TempDir()
			writeBootstraps(t, dir, "hashcheck", "classify", "promote")
			c := &Config{BuildDir: dir, Architecture: arch, GDALLayerArn: "arn:aws:lambda:eu-west-1:123456789012:layer:gdal:1", RepoRoot: dir}
			_, err := ResolveAssets(c)
			if err == nil {
				t.Fatal("missing convert bootstrap accepted")
			}
			msg := err.Error()
			for _, want := range []string{
				"function convert: " + filepath.Join(dir, "convert") + "/bootstrap not found",
				"`layers/gdal/build.sh " + arch + "`",
				"build/gdal-layer-" + arch + ".zip",
				"placeholderAssets=true",
			} {
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
	if !strings.Contains(err.Error(), "`layers/gdal/build.sh arm64`") {
		t.Errorf("convert's command missing:\n%v", err)
	}
}

// The command in the message is the one the Makefiles run: functions/functions.mk's
// FUNCTIONS_CONVERT_IN_LAYER and infra/infra.mk's layer target.
func TestConvertBuildCommandMatchesMakefiles(t *testing.T) {
	root := repoRoot(t)
	fm, err := os.ReadFile(filepath.Join(root, "functions", "functions.mk"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^FUNCTIONS_CONVERT_IN_LAYER := (\S+) \$\(or \$\(LAYER_ARCH\),arm64\)$`).FindSubmatch(fm)
	if m == nil || string(m[1])+" arm64" != ConvertBuildCommand("arm64") {
		t.Errorf("functions/functions.mk FUNCTIONS_CONVERT_IN_LAYER does not run %q (found %q)", ConvertBuildCommand("arm64"), m)
	}
	im, err := os.ReadFile(filepath.Join(root, "infra", "infra.mk"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(im), "\t"+ConvertBuildCommand("$(LAYER_ARCH)")+"\n") {
		t.Errorf("infra/infra.mk's layer target does not run %q", ConvertBuildCommand("$(LAYER_ARCH)"))
	}
	if st, err := os.Stat(filepath.Join(root, strings.Fields(ConvertBuildCommand("arm64"))[0])); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("%s is missing or not executable", ConvertBuildCommand("arm64"))
	}
}
