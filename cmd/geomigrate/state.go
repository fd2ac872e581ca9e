package main

import (
	"fmt"
	"os"

	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
)

// stateCmd groups the maintenance of the local state store.
type stateCmd struct {
	Repair stateRepairCmd `cmd:"" help:"Rebuild a damaged state store from its readable records."`
}

// stateRepairCmd is `geomigrate state repair`: the recovery of a damaged
// local state store (a truncated or overwritten state.db), which migrate
// and status refuse with a message naming this command.
type stateRepairCmd struct {
	Dest     string `name:"dest" placeholder:"DIR" help:"Destination directory of earlier runs."`
	StateDir string `name:"state-dir" placeholder:"DIR" help:"State directory (default DEST/.geomigrate-state)."`
}

func (c *stateRepairCmd) Run(e *cmdEnv) error {
	if c.Dest == "" && c.StateDir == "" {
		return usagef("state repair needs --dest or --state-dir")
	}
	paths := pathsFor(c.Dest, c.StateDir)
	if _, err := os.Stat(paths.db); err != nil {
		return fmt.Errorf("no state store at %s: %w", paths.db, err)
	}
	rep, err := boltstore.Repair(paths.db)
	if err != nil {
		return err
	}
	stdout := e.stdout
	fmt.Fprintf(stdout, "state store %s rebuilt: %d job(s) kept, %d damaged record(s) left out\n", paths.db, rep.Kept, rep.Lost)
	if rep.Stopped != "" {
		fmt.Fprintf(stdout, "reading stopped early at damage (%s): jobs past it are forgotten; their outputs are recognised and skipped on the next run\n", rep.Stopped)
	}
	fmt.Fprintf(stdout, "the damaged file is kept at %s\n", rep.Backup)
	return nil
}
