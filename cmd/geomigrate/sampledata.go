package main

import (
	"context"
	"fmt"
	"io"

	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

func runSampleData(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sample-data", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "Usage: geomigrate sample-data DIR")
		return errUsage
	}
	if _, err := gdal.New(); err != nil {
		return err
	}
	samples, err := sampledata.Write(fs.Arg(0))
	if err != nil {
		return err
	}
	bad := 0
	for _, s := range samples {
		mark := "good"
		if s.Bad {
			mark, bad = "bad ", bad+1
		}
		fmt.Fprintf(stdout, "  %s  %-7s %s\n", mark, s.Kind, s.Path)
	}
	fmt.Fprintf(stdout, "%d sample file(s) in %s, %d of them deliberately bad\n", len(samples), fs.Arg(0), bad)
	return nil
}
