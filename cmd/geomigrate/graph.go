package main

import (
	"context"
	"fmt"
	"io"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
)

func runGraph(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("graph", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	sm, err := localrun.ParsedMigrate()
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(stdout, asl.Mermaid(sm))
	return err
}
