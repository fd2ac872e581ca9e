package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/geomigrate/geomigrate/internal/validate"
)

func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", stderr)
	format := fs.String("format", "", "COG, GeoParquet or FlatGeobuf (default: from the extension)")
	asJSON := fs.Bool("json", false, "print the verdicts as JSON lines")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "Usage: geomigrate validate FILE... [--format F] [--json]")
		return errUsage
	}
	invalid := 0
	for _, f := range files {
		res, err := validate.File(f, *format)
		if err != nil {
			return err
		}
		if !res.Valid {
			invalid++
		}
		if *asJSON {
			if err := json.NewEncoder(stdout).Encode(res); err != nil {
				return err
			}
			continue
		}
		verdict := "valid"
		if !res.Valid {
			verdict = "INVALID"
		}
		fmt.Fprintf(stdout, "%s: %s %s\n", f, verdict, res.Format)
		for _, e := range res.Errors {
			fmt.Fprintf(stdout, "  error: %s\n", e)
		}
		for _, w := range res.Warnings {
			fmt.Fprintf(stdout, "  warning: %s\n", w)
		}
	}
	if invalid > 0 {
		return fmt.Errorf("%d of %d file(s) invalid", invalid, len(files))
	}
	return nil
}
