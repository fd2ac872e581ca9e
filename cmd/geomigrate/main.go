// Command geomigrate migrates geospatial files to cloud-native formats
// (Cloud Optimized GeoTIFF, GeoParquet, FlatGeobuf) through the same state
// machine that runs on AWS Step Functions, here on one machine.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/geomigrate/geomigrate/internal/buildinfo"
)

// command is one subcommand.
type command struct {
	name  string
	usage string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"migrate", "migrate SRC... --dest DIR   convert every source file through the state machine", runMigrate},
		{"backfill", "backfill SRC_DIR --dest DIR [--prefix P]   the Distributed Map backfill, run locally", runBackfill},
		{"replay", "replay --dest DIR [--queue dlq|remediation]   run the jobs a queue holds again", runReplay},
		{"status", "status --dest DIR            what the state store and the queues hold", runStatus},
		{"state", "state repair --dest DIR      rebuild a damaged state store from its readable records", runState},
		{"recipe", "recipe show RECIPE.yaml [PATH...]   the recipe each path resolves to (rules, settings, hash)", runRecipe},
		{"validate", "validate FILE...              check outputs: COG rules (GDAL's validator), GeoParquet 1.1, FlatGeobuf", runValidate},
		{"graph", "graph [--backfill]            the state machine as a Mermaid flowchart", runGraph},
		{"sample-data", "sample-data DIR             write demo rasters and vectors, a few of them bad", runSampleData},
		{"version", "version                       print the version", func(ctx context.Context, _ []string, stdout, _ io.Writer) error {
			_, err := fmt.Fprintln(stdout, "geomigrate", buildinfo.Version)
			return err
		}},
	}
}

// errUsage marks an error already explained to the user.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := interruptible(context.Background())
	err := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "geomigrate:", err)
		os.Exit(1)
	}
}

// abortKey holds, in the command's context, the channel a second signal
// closes.
type abortKey struct{}

// interruptible returns a context cancelled by the first SIGINT/SIGTERM
// (a run starts no new file and gives running ones --grace to finish) and
// carrying a channel the second one closes (running files are stopped and
// rolled back at once). A third signal gets the default behaviour.
func interruptible(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	abort := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(fmt.Errorf("%s received", s))
		case <-done:
			return
		}
		select {
		case <-sigs:
			close(abort)
			signal.Stop(sigs)
		case <-done:
		}
	}()
	return context.WithValue(ctx, abortKey{}, (<-chan struct{})(abort)), func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// abortOf is the channel a second signal closes (nil outside main: never).
func abortOf(ctx context.Context) <-chan struct{} {
	c, _ := ctx.Value(abortKey{}).(<-chan struct{})
	return c
}

func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "geomigrate: unknown command %q\n\n", args[0])
	printUsage(stderr)
	return errUsage
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "geomigrate moves geospatial data into cloud-native formats, safely.\n\nUsage:")
	for _, c := range commands() {
		fmt.Fprintln(w, "  geomigrate", c.usage)
	}
	fmt.Fprintln(w, "\nRun 'geomigrate COMMAND -h' for the flags of a command.")
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("geomigrate "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseInterspersed parses flags that may come after positional arguments
// (geomigrate migrate SRC --dest DIR), which package flag alone does not.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
