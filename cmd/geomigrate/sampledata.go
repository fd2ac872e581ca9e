package main

import (
	"fmt"

	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

type sampleDataCmd struct {
	Dir string `arg:"" name:"DIR" help:"Directory to write the samples into."`
}

func (c *sampleDataCmd) Run(e *cmdEnv) error {
	if _, err := gdal.New(); err != nil {
		return err
	}
	samples, err := sampledata.Write(c.Dir)
	if err != nil {
		return err
	}
	bad := 0
	for _, s := range samples {
		mark := "good"
		if s.Bad {
			mark, bad = "bad ", bad+1
		}
		fmt.Fprintf(e.stdout, "  %s  %-7s %s\n", mark, s.Kind, s.Path)
	}
	fmt.Fprintf(e.stdout, "%d sample file(s) in %s, %d of them deliberately bad\n", len(samples), c.Dir, bad)
	return nil
}
