// Command geomigrate-image builds the convert container's OCI image from the
// Docker-free layer build and pushes it, with no Docker engine:
//
//	geomigrate-image push [--opt build/gdal-layer-arm64] [--cli build/convert-container-arm64/geomigrate] REF
//	geomigrate-image save [flags] FILE.tar
//
// push prints REF@sha256:..., the value for the stack's convertImage
// context. Credentials come from the Docker config (~/.docker/config.json),
// whose credHelpers may name docker-credential-ecr-login for ECR; no Docker
// daemon is involved. See internal/ociimage for what the image holds.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/alecthomas/kong"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/geomigrate/geomigrate/internal/ociimage"
)

type sources struct {
	Opt     string `default:"build/gdal-layer-arm64" type:"existingdir" help:"the unpacked GDAL layer (make layer), the image's /opt"`
	CLI     string `default:"build/convert-container-arm64/geomigrate" type:"existingfile" help:"the geomigrate CLI linked against it (make layer)"`
	CACerts string `name:"ca-certs" default:"/etc/ssl/certs/ca-certificates.crt" type:"existingfile" help:"PEM bundle for /etc/ssl/certs/ca-certificates.crt"`
}

func (s sources) build() ociimage.Sources {
	return ociimage.Sources{Opt: s.Opt, CLI: s.CLI, CACerts: s.CACerts}
}

type pushCmd struct {
	sources
	Insecure bool   `help:"allow a plain-HTTP registry (a local one)"`
	Ref      string `arg:"" help:"repository:tag to push to, e.g. 123456789012.dkr.ecr.eu-west-1.amazonaws.com/geomigrate-convert:v1"`
}

func (c *pushCmd) Run(ctx context.Context) error {
	img, err := ociimage.Build(c.sources.build())
	if err != nil {
		return err
	}
	ref, err := ociimage.Push(ctx, img, c.Ref, c.Insecure)
	if err != nil {
		return err
	}
	fmt.Println(ref)
	return nil
}

type saveCmd struct {
	sources
	Tag  string `default:"geomigrate-convert:local" help:"the tag recorded in the tarball"`
	File string `arg:"" help:"the image tarball to write"`
}

func (c *saveCmd) Run(context.Context) error {
	tag, err := name.NewTag(c.Tag)
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	img, err := ociimage.Build(c.sources.build())
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(c.File, tag, img); err != nil {
		return fmt.Errorf("save %s: %w", c.File, err)
	}
	return nil
}

type cli struct {
	Push pushCmd `cmd:"" help:"build the convert image and push it to a registry (prints the digest reference)"`
	Save saveCmd `cmd:"" help:"build the convert image into a tarball (docker load / crane push can take it)"`
}

func main() {
	if err := realMain(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "geomigrate-image:", err)
		os.Exit(1)
	}
}

func realMain(ctx context.Context, args []string) error {
	var c cli
	p, err := kong.New(&c, kong.Name("geomigrate-image"), kong.Description("The convert container image, built and pushed without Docker."),
		kong.BindTo(ctx, (*context.Context)(nil)))
	if err != nil {
		return err
	}
	k, err := p.Parse(args)
	if err != nil {
		return err
	}
	return k.Run()
}
