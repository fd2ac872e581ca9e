package main

import (
	"fmt"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
)

type graphCmd struct {
	Backfill bool `name:"backfill" help:"Draw the backfill state machine (the Distributed Map over a prefix or an inventory) instead of migrate."`
}

func (c *graphCmd) Run(e *cmdEnv) error {
	sm, err := localrun.ParsedMigrate()
	if c.Backfill {
		sm, err = localrun.ParsedBackfill("SOURCE-BUCKET", resultsBucket, nil)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(e.stdout, asl.Mermaid(sm))
	return err
}
