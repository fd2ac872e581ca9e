package ociimage

import (
	"archive/tar"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// fakeSources is a layer-shaped tree (a library, its soname link, data) and a CLI.
func fakeSources(t *testing.T) Sources {
	t.Helper()
	d := t.TempDir()
	opt := filepath.Join(d, "opt")
	for p, body := range map[string]string{
		"lib/libgdal.so.36.3.10.3":     "elf",
		"lib/gconv/gconv-modules":      "module",
		"share/proj/proj.db":           "db",
		"share/gdal-layer/version.txt": "GDAL 3.10.3",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(opt, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(opt, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("libgdal.so.36.3.10.3", filepath.Join(opt, "lib", "libgdal.so")); err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(d, "geomigrate")
	ca := filepath.Join(d, "ca.pem")
	for p, body := range map[string]string{cli: "#!cli", ca: "-----BEGIN CERTIFICATE-----"} {
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Sources{Opt: opt, CLI: cli, CACerts: ca}
}

// The image pushed to a registry (go-containerregistry's in-process one) and
// pulled back is arm64, runs geomigrate task convert with the layer's
// environment, and holds /opt as built, symlinks included; the same inputs
// give the same digest.
func TestBuildPushPull(t *testing.T) {
	src := fakeSources(t)
	img, err := Build(src)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Build(src)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of the same inputs: %s and %s", d1, d2)
	}

	reg := httptest.NewServer(registry.New())
	t.Cleanup(reg.Close)
	digestRef, err := Push(context.Background(), img, strings.TrimPrefix(reg.URL, "http://")+"/geomigrate-convert:test", true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(digestRef, "/geomigrate-convert@"+d1.String()) {
		t.Errorf("Push returned %s, want the repository @ %s", digestRef, d1)
	}
	ref, err := name.ParseReference(digestRef, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := pulled.Digest(); d != d1 {
		t.Errorf("pulled digest %s, pushed %s", d, d1)
	}
	cf, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != "arm64" || cf.OS != "linux" || !slices.Equal(cf.Config.Entrypoint, Entrypoint) {
		t.Errorf("config: %s/%s entrypoint %v", cf.OS, cf.Architecture, cf.Config.Entrypoint)
	}
	for _, want := range []string{"GDAL_DATA=/opt/share/gdal", "GCONV_PATH=/opt/lib/gconv", "PROJ_NETWORK=OFF"} {
		if !slices.Contains(cf.Config.Env, want) {
			t.Errorf("env lacks %s: %v", want, cf.Config.Env)
		}
	}
	files := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(pulled))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
	}
	for _, want := range []string{"opt/lib/libgdal.so.36.3.10.3", "opt/lib/gconv/gconv-modules", "opt/share/proj/proj.db",
		"usr/local/bin/geomigrate", "etc/ssl/certs/ca-certificates.crt"} {
		if files[want] == nil {
			t.Errorf("image lacks %s", want)
		}
	}
	if h := files["tmp/"]; (h == nil && files["tmp"] == nil) || (h == nil && files["tmp"].Mode&0o1777 != 0o1777) {
		t.Error("image lacks a world-writable /tmp")
	}
	if h := files["opt/lib/libgdal.so"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "libgdal.so.36.3.10.3" {
		t.Errorf("opt/lib/libgdal.so is not the soname link: %+v", h)
	}
	if h := files["usr/local/bin/geomigrate"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("the CLI is not executable: %+v", h)
	}
}

// A directory that is not a built layer is refused with the command that builds one.
func TestBuildRefusesAnUnbuiltLayer(t *testing.T) {
	src := fakeSources(t)
	src.Opt = t.TempDir()
	if _, err := Build(src); err == nil || !strings.Contains(err.Error(), "make layer") {
		t.Errorf("err = %v, want one naming make layer", err)
	}
}
