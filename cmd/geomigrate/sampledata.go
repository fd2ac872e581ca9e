package main

import (
	"fmt"

	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/sampledata"
	"github.com/geomigrate/geomigrate/internal/termtable"
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
	t := termtable.New("  ", termtable.Column{}, termtable.Column{}, termtable.Column{Fit: termtable.Middle})
	for _, s := range samples {
		mark := "good"
		if s.Bad {
			mark, bad = "bad", bad+1
		}
		t.Add(mark, string(s.Kind), s.Path)
	}
	if err := t.Write(e.stdout, termtable.Width(e.stdout)); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%d sample file(s) in %s, %d of them deliberately bad\n", len(samples), c.Dir, bad)
	return nil
}
