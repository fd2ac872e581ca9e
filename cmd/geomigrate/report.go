package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/htmlreport"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/termtable"
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

// reportPerPage is how many quick-looks a page of `report --html` holds:
// 50 of the samples' keep a page near 150 KB (docs/decisions/0108).
const reportPerPage = 50

func runReport(stdout, stderr io.Writer, run string, html bool, out, destDir string) error {
	report, err := readReport(run)
	if err != nil {
		return err
	}
	if !html {
		report.PrintSummary(stdout, termtable.Width(stdout))
		return nil
	}
	// --dest also serves outputs of an aws run copied to this machine.
	local := report.Backend == "local" || destDir != ""
	dest := destDir
	if dest == "" {
		// A local run names its destination relative to the report file
		// (or absolutely), never to the directory it ran in.
		dest = report.Dest
		if local && !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(run), dest)
		}
	}
	engine, err := gdal.New()
	if err != nil {
		return err
	}
	path := out
	if path == "" {
		path = strings.TrimSuffix(run, filepath.Ext(run)) + ".html"
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	pageName := func(n int) string {
		if n == 1 {
			return filepath.Base(path)
		}
		return fmt.Sprintf("%s-%d.html", base, n)
	}
	paging := htmlreport.Paging{PerPage: reportPerPage, Href: func(n int) string { return url.PathEscape(pageName(n)) }}
	pageDir := filepath.Dir(path)
	if path == "-" {
		// One stream, one page.
		paging, pageDir = htmlreport.Paging{}, "."
	}
	pages, res, err := htmlreport.Render(pageRun(run, report, dest, local, pageDir), engine, paging)
	if err != nil {
		return err
	}
	if path == "-" {
		if _, err = stdout.Write(pages[0]); err != nil {
			return err
		}
	} else {
		for i, b := range pages {
			if err := os.WriteFile(filepath.Join(pageDir, pageName(i+1)), b, 0o644); err != nil {
				return fmt.Errorf("report: %w", err)
			}
		}
		fmt.Fprintf(stdout, "%s: %d quick-look(s)", path, res.Images)
		if len(pages) > 1 {
			fmt.Fprintf(stdout, " on %d pages (%s … %s)", len(pages), pageName(1), pageName(len(pages)))
		}
		fmt.Fprintln(stdout)
	}
	for _, m := range res.Missing {
		fmt.Fprintf(stderr, "  no quick-look: %s\n", m)
	}
	if len(res.Failed) > 0 {
		return fmt.Errorf("report: %d output(s) could not be drawn (is %s the destination? --dest names it)", len(res.Failed), dest)
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
// when local, and their STAC items linked relative to pageDir.
func pageRun(source string, r *localrun.Report, dest string, local bool, pageDir string) htmlreport.Run {
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
		for i, key := range o.Outputs {
			out := htmlreport.Output{Key: key}
			if i < len(o.STACItems) {
				out.ItemKey = o.STACItems[i]
			}
			// An S3 destination is not read from here (no network); a
			// key is never followed out of the destination.
			if local && filepath.IsLocal(filepath.FromSlash(key)) {
				out.Path = filepath.Join(dest, filepath.FromSlash(key))
				if out.ItemKey != "" && filepath.IsLocal(filepath.FromSlash(out.ItemKey)) {
					out.Item = relativeHref(pageDir, filepath.Join(dest, filepath.FromSlash(out.ItemKey)))
				}
			}
			f.Outputs = append(f.Outputs, out)
		}
		run.Files = append(run.Files, f)
	}
	return run
}

// relativeHref is target as a relative URL from a page in dir.
func relativeHref(dir, target string) string {
	ad, err1 := filepath.Abs(dir)
	at, err2 := filepath.Abs(target)
	if err1 != nil || err2 != nil {
		return ""
	}
	rel, err := filepath.Rel(ad, at)
	if err != nil {
		return ""
	}
	return (&url.URL{Path: filepath.ToSlash(rel)}).String()
}
