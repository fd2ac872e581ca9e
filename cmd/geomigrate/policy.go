package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/internal/policy/ssmpolicy"
)

// policySource is the run's run-time policy document: --policy FILE (read
// again before each caught error is classified, so an edit during a run
// routes the files that fail after it), else with --backend aws the SSM
// parameter --policy-parameter (read again once --policy-ttl passed), else
// nil (the built-in policy). A document that is refused at start stops the
// command with the problems listed; one refused later leaves the last good
// one in force and is logged.
func (f *runFlags) policySource(ctx context.Context, log *slog.Logger) (*policy.Source, error) {
	switch {
	case f.Policy != "":
		s := policy.NewSource(policy.File{Path: f.Policy}, 0, log)
		if _, err := s.Load(ctx); err != nil {
			return nil, fmt.Errorf("--policy %s: %w", f.Policy, err)
		}
		return s, nil
	case f.Where.aws() && f.Where.AWS.PolicyParameter != "":
		p, err := f.Where.policyParameter(ctx)
		if err != nil {
			return nil, err
		}
		s := policy.NewSource(p, f.Where.AWS.PolicyTTL.Duration(), log)
		if _, err := s.Load(ctx); err != nil {
			return nil, fmt.Errorf("--policy-parameter %s: %w", p.Name, err)
		}
		return s, nil
	}
	return nil, nil
}

// policyParameter is the SSM parameter --policy-parameter names.
func (b *backendFlags) policyParameter(ctx context.Context) (ssmpolicy.Parameter, error) {
	o := b.clientOptions()
	cfg, err := awsconfig.Load(ctx, o)
	if err != nil {
		return ssmpolicy.Parameter{}, err
	}
	return ssmpolicy.Parameter{Client: ssmpolicy.NewClient(cfg, o.EndpointURL), Name: b.AWS.PolicyParameter}, nil
}

// policyCmd is `geomigrate policy`.
type policyCmd struct {
	Init  policyInitCmd  `cmd:"" help:"Print the built-in policy document, a starting point to edit (geomigrate policy init > policy.json)."`
	Check policyCheckCmd `cmd:"" help:"Validate a policy document and print it with the defaults filled in."`
	Put   policyPutCmd   `cmd:"" help:"Validate a policy document and store it in the SSM parameter the functions read (--policy-parameter)."`
}

type policyInitCmd struct{}

// Run prints the document in force when none is given, so a first policy
// file starts from what the run already does rather than from a blank page.
func (*policyInitCmd) Run(e *cmdEnv) error {
	_, err := fmt.Fprintf(e.stdout, "%s\n", policy.Default().JSON())
	return err
}

type policyCheckCmd struct {
	File string `arg:"" name:"POLICY.json" help:"The document."`
}

// Help is the text under the usage line.
func (*policyCheckCmd) Help() string {
	return "What can change at run time and the document's format: docs/operations.md (Run-time policy)."
}

func (c *policyCheckCmd) Run(e *cmdEnv) error {
	data, err := os.ReadFile(c.File)
	if err != nil {
		return err
	}
	d, err := policy.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", c.File, err)
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", d.JSON())
	return err
}

type policyPutCmd struct {
	File  string       `arg:"" name:"POLICY.json" help:"The document."`
	Where backendFlags `embed:""`
}

func (c *policyPutCmd) Run(e *cmdEnv) error {
	if c.Where.AWS.PolicyParameter == "" {
		return usagef("policy put needs --policy-parameter (the stack output PolicyParameterName)")
	}
	data, err := os.ReadFile(c.File)
	if err != nil {
		return err
	}
	p, err := c.Where.policyParameter(e.ctx)
	if err != nil {
		return err
	}
	v, err := p.Put(e.ctx, data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s: version %d; functions read it within %s\n", p.Name, v, c.Where.AWS.PolicyTTL)
	return err
}
