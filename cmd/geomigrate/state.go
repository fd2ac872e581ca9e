package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
)

// runState is `geomigrate state repair`: the recovery of a damaged local
// state store (a truncated or overwritten state.db), which migrate and
// status refuse with a message naming this command.
func runState(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := func() error {
		fmt.Fprintln(stderr, "Usage: geomigrate state repair --dest DIR | --state-dir DIR")
		return errUsage
	}
	if len(args) == 0 || args[0] != "repair" {
		return usage()
	}
	fs := newFlagSet("state repair", stderr)
	dest := fs.String("dest", "", "destination directory of earlier runs")
	stateDir := fs.String("state-dir", "", "state directory (default DEST/"+stateDirName+")")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *dest == "" && *stateDir == "" {
		return usage()
	}
	paths := pathsFor(*dest, *stateDir)
	if _, err := os.Stat(paths.db); err != nil {
		return fmt.Errorf("no state store at %s: %w", paths.db, err)
	}
	rep, err := boltstore.Repair(paths.db)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "state store %s rebuilt: %d job(s) kept, %d damaged record(s) left out\n", paths.db, rep.Kept, rep.Lost)
	if rep.Stopped != "" {
		fmt.Fprintf(stdout, "reading stopped early at damage (%s): jobs past it are forgotten; their outputs are recognised and skipped on the next run\n", rep.Stopped)
	}
	fmt.Fprintf(stdout, "the damaged file is kept at %s\n", rep.Backup)
	return nil
}
