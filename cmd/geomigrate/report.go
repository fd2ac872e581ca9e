package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/htmlreport"
	"github.com/geomigrate/geomigrate/internal/localrun"
)

// reportCmd reads a run report back: the summary a run prints, or with
// --html one self-contained page with a quick-look of every output.
type reportCmd struct {
	File string `arg:"" name:"RUN.json" help:"The JSON run report (DEST/.geomigrate-state/reports/...)."`
	HTML bool   `name:"html" help:"Write the report as one self-contained HTML page (totals, hints, a quick-look of every output)."`
	Out  string `short:"o" name:"output" placeholder:"FILE" help:"HTML file to write (default: the report's path with .html; - for stdout)."`
	Dest string `name:"dest" placeholder:"DIR" help:"Where the outputs are (default: the report's destination)."`
}

func (c *reportCmd) Run(e *cmdEnv) error {
	return runReport(e.stdout, e.stderr, c.File, c.HTML, c.Out, c.Dest)
}

func runReport(stdout, stderr io.Writer, run string, html bool, out, destDir string) error {
	pos := []string{run}
	asHTML, dest := &html, &destDir
	report, err := readReport(pos[0])
	if err != nil {
		return err
	}
	if !*asHTML {
		report.PrintSummary(stdout)
		return nil
	}
	// --dest also serves outputs of an aws run copied to this machine.
	local := report.Backend == "local" || *dest != ""
	if *dest == "" {
		*dest = report.Dest
	}
	engine, err := gdal.New()
	if err != nil {
		return err
	}
	path := out
	if path == "" {
		path = strings.TrimSuffix(pos[0], filepath.Ext(pos[0])) + ".html"
	}
	var page bytes.Buffer
	res, err := htmlreport.Write(&page, pageRun(pos[0], report, *dest, local), engine)
	if err != nil {
		return err
	}
	if path == "-" {
		_, err = stdout.Write(page.Bytes())
		return err
	}
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(stdout, "%s: %d quick-look(s)\n", path, res.Images)
	for _, m := range res.Missing {
		fmt.Fprintf(stderr, "  no quick-look: %s\n", m)
	}
	return nil
}

// readReport reads a JSON run report of a schema version this build knows.
func readReport(path string) (*localrun.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var r localrun.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("report: %s is not a run report: %w", path, err)
	}
	if r.SchemaVersion > localrun.ReportSchemaVersion {
		return nil, fmt.Errorf("report: %s has schema version %d; this geomigrate reads up to %d", path, r.SchemaVersion, localrun.ReportSchemaVersion)
	}
	return &r, nil
}

// pageRun is the report as the page shows it; outputs are read under dest
// when local.
func pageRun(source string, r *localrun.Report, dest string, local bool) htmlreport.Run {
	run := htmlreport.Run{
		Source: source, SchemaVersion: r.SchemaVersion, Started: r.Started, Finished: r.Finished, Seconds: r.Seconds,
		Backend: r.Backend, Dest: r.Dest, Workers: r.Workers, Generator: "geomigrate " + buildinfo.Version,
		Signals: r.Signals,
	}
	for _, o := range r.Files {
		f := htmlreport.File{
			Dataset: o.Bucket, Key: o.Key, Status: o.Status, Reason: o.Reason, Tier: o.Tier, Error: o.Error, Code: o.Code,
			Message: o.Message, Hint: o.Hint, Warnings: o.Warnings, BytesIn: o.BytesIn, BytesOut: o.BytesOut,
		}
		for _, key := range o.Outputs {
			out := htmlreport.Output{Key: key}
			// An S3 destination is not read from here (no network); a
			// key is never followed out of the destination.
			if local && filepath.IsLocal(filepath.FromSlash(key)) {
				out.Path = filepath.Join(dest, filepath.FromSlash(key))
			}
			f.Outputs = append(f.Outputs, out)
		}
		run.Files = append(run.Files, f)
	}
	return run
}
