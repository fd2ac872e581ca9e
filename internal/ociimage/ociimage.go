// Package ociimage assembles the convert container's OCI image without a
// Docker engine: one layer holding the GDAL Lambda layer's /opt (which
// bundles its own glibc and loader, so no base image is needed), the
// geomigrate CLI linked against it, and the CA certificates the AWS SDK
// needs; an arm64 config whose entry point is `geomigrate task convert`.
// go-containerregistry writes and pushes it; nothing here is hand-rolled
// beyond the file list.
package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/geomigrate/geomigrate/internal/config"
)

// Entrypoint is the container's command: convert one job (internal/migration's container task).
var Entrypoint = []string{"/usr/local/bin/geomigrate", "task", "convert"}

// Env is the image's environment: the layer's (config.LayerEnvironment, as the Convert
// Lambda has it), the PATH of the CLI and the CA bundle the image carries.
func Env() []string {
	env := []string{"PATH=/usr/local/bin:/opt/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	for k, v := range config.LayerEnvironment() {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// Sources are the files the image is made of.
type Sources struct {
	Opt     string // the unpacked layer (build/gdal-layer-arm64): becomes /opt
	CLI     string // the geomigrate CLI built against it: /usr/local/bin/geomigrate
	CACerts string // a PEM bundle: /etc/ssl/certs/ca-certificates.crt
}

// epoch is every entry's time, so the same inputs give the same digest.
var epoch = time.Unix(946684800, 0).UTC()

// Build returns the arm64 image of src.
func Build(src Sources) (v1.Image, error) {
	layerTar, err := rootfs(src)
	if err != nil {
		return nil, fmt.Errorf("ociimage.Build: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("ociimage.Build: layer: %w", err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, fmt.Errorf("ociimage.Build: %w", err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("ociimage.Build: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = "arm64", "linux", v1.Time{Time: epoch}
	cf.Config.Entrypoint = Entrypoint
	cf.Config.Env = Env()
	cf.Config.WorkingDir = "/tmp"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("ociimage.Build: %w", err)
	}
	return img, nil
}

// Push writes img to ref (repository:tag; insecure allows a plain-HTTP registry) with the
// credentials of the Docker config (credential helpers such as ecr-login included; no daemon)
// and returns the digest reference, repository@sha256:..., that the stack's convertImage takes.
func Push(ctx context.Context, img v1.Image, ref string, insecure bool) (string, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return "", fmt.Errorf("ociimage.Push: %w", err)
	}
	if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("ociimage.Push: %s: %w", r, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("ociimage.Push: %w", err)
	}
	return r.Context().Name() + "@" + d.String(), nil
}

// rootfs is the image's single layer as a tar: /opt from src.Opt (symlinks kept), the CLI,
// the CA bundle, and an empty /tmp.
func rootfs(src Sources) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: epoch})
	}
	for _, d := range []string{"etc", "etc/ssl", "etc/ssl/certs", "usr", "usr/local", "usr/local/bin"} {
		if err := dir(d); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: epoch}); err != nil {
		return nil, err
	}
	if err := addFile(tw, src.CLI, "usr/local/bin/geomigrate", 0o755); err != nil {
		return nil, err
	}
	if err := addFile(tw, src.CACerts, "etc/ssl/certs/ca-certificates.crt", 0o644); err != nil {
		return nil, err
	}
	if err := addTree(tw, src.Opt, "opt"); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func addFile(tw *tar.Writer, from, name string, mode int64) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(b)), ModTime: epoch}); err != nil {
		return err
	}
	_, err = tw.Write(b)
	return err
}

// addTree adds root's files under prefix in sorted order.
func addTree(tw *tar.Writer, root, prefix string) error {
	if st, err := os.Stat(filepath.Join(root, "lib", "libgdal.so")); err != nil || st.IsDir() {
		return fmt.Errorf("%s is not a built layer (no lib/libgdal.so): run make layer", root)
	}
	var paths []string
	if err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	}); err != nil {
		return err
	}
	sort.Strings(paths)
	for _, p := range paths {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := prefix
		if rel != "." {
			name = prefix + "/" + filepath.ToSlash(rel)
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case st.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: epoch}); err != nil {
				return err
			}
		case st.IsDir():
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimSuffix(name, "/") + "/", Mode: 0o755, ModTime: epoch}); err != nil {
				return err
			}
		case st.Mode().IsRegular():
			if err := addFile(tw, p, name, int64(st.Mode().Perm())); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a file, directory or symlink", p)
		}
	}
	return nil
}
