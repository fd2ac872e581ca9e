// Package validate checks converted outputs with the project's own pure-Go
// validators before they are staged, and for `geomigrate validate FILE`.
package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/geomigrate/geomigrate/internal/cogcheck"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Result is the verdict on one file.
type Result struct {
	Path     string   `json:"path"`
	Format   string   `json:"format"`
	Valid    bool     `json:"valid"`
	Errors   []string `json:"errors,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Err returns the problems as one error, nil when valid.
func (r Result) Err() error {
	if r.Valid {
		return nil
	}
	return fmt.Errorf("%s is not a valid %s: %s", filepath.Base(r.Path), r.Format, strings.Join(r.Errors, "; "))
}

// Output validates a converted file and returns its problems as an error
// (nil when valid); the form migration.Convert takes.
func Output(path, format string) error {
	res, err := File(path, format)
	if err != nil {
		return err
	}
	return res.Err()
}

// FormatOf guesses a file's format from its extension (formats.OutputFormat).
func FormatOf(path string) string { return formats.OutputFormat(path) }

// File validates path as format ("" to guess from the extension).
func File(path, format string) (Result, error) {
	if format == "" {
		format = FormatOf(path)
	}
	res := Result{Path: path, Format: format}
	switch format {
	case recipe.FormatCOG:
		rep, err := cogcheck.CheckFile(path)
		if err != nil {
			return res, fmt.Errorf("validate.File: %s: %w", path, err)
		}
		res.Errors, res.Warnings, res.Valid = rep.Errors, rep.Warnings, rep.Valid()
	case recipe.FormatGeoParquet:
		f, err := os.Open(path)
		if err != nil {
			return res, fmt.Errorf("validate.File: %s: %w", path, err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return res, fmt.Errorf("validate.File: %s: %w", path, err)
		}
		rep, err := geoparquet.Validate(f, fi.Size())
		if err != nil {
			return res, fmt.Errorf("validate.File: %s: %w", path, err)
		}
		res.Errors, res.Valid = rep.Problems, rep.OK()
	case recipe.FormatParquet:
		// An attribute table: readable as Parquet, with no "geo" metadata.
		f, err := os.Open(path)
		if err != nil {
			return res, fmt.Errorf("validate.File: %s: %w", path, err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return res, fmt.Errorf("validate.File: %s: %w", path, err)
		}
		if _, err := geoparquet.ReadTableInfo(f, fi.Size()); err != nil {
			res.Errors = []string{err.Error()}
		}
		res.Valid = len(res.Errors) == 0
	case recipe.FormatFlatGeobuf:
		res.Errors = flatGeobufHeader(path)
		res.Valid = len(res.Errors) == 0
	default:
		return res, fmt.Errorf("validate.File: %s: no validator for format %q", path, format)
	}
	return res, nil
}

// flatGeobufMagic is "fgb", version 3, "fgb", patch 0 (FlatGeobuf spec).
var flatGeobufMagic = []byte{0x66, 0x67, 0x62, 0x03, 0x66, 0x67, 0x62}

func flatGeobufHeader(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{err.Error()}
	}
	defer f.Close()
	head := make([]byte, 12)
	if n, _ := f.Read(head); n < 12 {
		return []string{"file is shorter than a FlatGeobuf header"}
	}
	if string(head[:7]) != string(flatGeobufMagic) {
		return []string{"missing FlatGeobuf magic bytes"}
	}
	return nil
}
