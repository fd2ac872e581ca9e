package main

import (
	"fmt"
	"io"

	"github.com/alecthomas/kong"

	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/gdal"
)

// printVersion names what decides the output bytes: geomigrate, the GDAL
// and PROJ it links, and the commit it was built from.
func printVersion(w io.Writer) error {
	libs := "GDAL unavailable"
	if engine, err := gdal.New(); err == nil {
		libs = engine.VersionDetail()
	} else {
		libs += ": " + err.Error()
	}
	_, err := fmt.Fprintf(w, "geomigrate %s (commit %s; %s)\n", buildinfo.Version, buildinfo.Commit(), libs)
	return err
}

// versionFlag is --version: the versions, then exit 0.
type versionFlag bool

// BeforeReset prints before any other flag is checked, so --version works
// alone and with any command.
func (versionFlag) BeforeReset(app *kong.Kong) error {
	if err := printVersion(app.Stdout); err != nil {
		return err
	}
	app.Exit(0)
	return nil
}

// versionCmd is `geomigrate version`.
type versionCmd struct{}

func (versionCmd) Run(e *cmdEnv) error { return printVersion(e.stdout) }
