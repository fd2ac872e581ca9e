package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/geomigrate/geomigrate/internal/validate"
)

// validateFormats are the formats validate checks, as --format spells
// them.
var validateFormats = []string{"COG", "GeoParquet", "FlatGeobuf"}

type validateCmd struct {
	Files  []string `arg:"" name:"FILE" help:"Output files to check."`
	Format string   `name:"format" placeholder:"FORMAT" help:"COG, GeoParquet or FlatGeobuf, any case (default: from each file's extension)."`
	JSON   bool     `name:"json" help:"Print the verdicts as JSON lines."`
}

// Validate spells --format as the validators do.
func (c *validateCmd) Validate() error {
	if c.Format == "" {
		return nil
	}
	for _, f := range validateFormats {
		if strings.EqualFold(f, c.Format) {
			c.Format = f
			return nil
		}
	}
	return fmt.Errorf("--format %q: want %s", c.Format, strings.Join(validateFormats, ", "))
}

// Run gives one verdict per file and goes on to the next whatever the
// verdict: a file that cannot be read, or whose format has no validator,
// is invalid, not the end of the check.
func (c *validateCmd) Run(e *cmdEnv) error {
	invalid := 0
	for _, f := range c.Files {
		res, err := validate.File(f, c.Format)
		if err != nil {
			res.Valid, res.Errors = false, []string{strings.TrimPrefix(err.Error(), "validate "+f+": ")}
		}
		if !res.Valid {
			invalid++
		}
		if c.JSON {
			if err := json.NewEncoder(e.stdout).Encode(res); err != nil {
				return err
			}
			continue
		}
		verdict := "valid"
		if !res.Valid {
			verdict = "INVALID"
		}
		format := res.Format
		if format == "" {
			format = "(unknown format)"
		}
		fmt.Fprintf(e.stdout, "%s: %s %s\n", f, verdict, format)
		for _, msg := range res.Errors {
			fmt.Fprintf(e.stdout, "  error: %s\n", msg)
		}
		for _, w := range res.Warnings {
			fmt.Fprintf(e.stdout, "  warning: %s\n", w)
		}
	}
	if invalid > 0 {
		return fmt.Errorf("%d of %d file(s) invalid", invalid, len(c.Files))
	}
	return nil
}
