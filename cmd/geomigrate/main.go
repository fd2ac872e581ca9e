// Command geomigrate migrates geospatial files to cloud-native formats
// (Cloud Optimized GeoTIFF, GeoParquet, FlatGeobuf) through the same state
// machine that runs on AWS Step Functions, here on one machine.
//
// Its commands and flags are declared as structs below and parsed by kong;
// the settings the handlers share with the Lambda functions are declared
// once in internal/config.
//
// Progress (progress.go) is drawn with github.com/vbauerster/mpb/v8 rather
// than github.com/schollz/progressbar/v3: mpb takes the console writer
// (terminal width and height, redraw in place) as an interface, so tests
// draw into a fake terminal of a chosen width; it is redrawn on a channel
// we feed (a ticker in a run, the test's sends in tests); its decorators
// are cut to the terminal's width at every redraw; and a bar carries extra
// lines (rates, the files being converted), where progressbar draws one
// line, sizes it from the process's stdout and refreshes on its own timer.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
)

// cli is the command line: one field per command.
type cli struct {
	Version versionFlag `name:"version" help:"Print geomigrate, GDAL and PROJ versions and the commit, and exit."`
	// CPUProfile is for measuring the CLI's own cost per file (make
	// bench's tiny-files figures): Go's CPU profile of the whole command.
	CPUProfile string `name:"cpuprofile" hidden:"" type:"path" help:"Write a Go CPU profile of the command to this file."`

	Migrate    migrateCmd    `cmd:"" help:"Convert every source file through the migrate state machine."`
	Plan       planCmd       `cmd:"" help:"What migrate would do, writing nothing, and what it would cost on AWS."`
	Backfill   backfillCmd   `cmd:"" help:"The Distributed Map backfill: run here over a directory, or start the deployed one (--backend aws)."`
	Replay     replayCmd     `cmd:"" help:"Run the jobs a queue holds again."`
	Redrive    redriveCmd    `cmd:"" help:"Resume failed executions of the deployed state machines from the state that failed (--backend aws)."`
	Status     statusCmd     `cmd:"" help:"What the state store and the queues hold."`
	State      stateCmd      `cmd:"" help:"Repair the local state store."`
	Report     reportCmd     `cmd:"" help:"A run report again: the summary, or one self-contained HTML page (--html)."`
	Recipe     recipeCmd     `cmd:"" help:"Recipe files: what each path resolves to (recipe show)."`
	Policy     policyCmd     `cmd:"" help:"The run-time policy document: check one, or store it where the functions read it (policy put)."`
	Validate   validateCmd   `cmd:"" help:"Check outputs: COG rules (GDAL's validator), GeoParquet 1.1, FlatGeobuf."`
	Graph      graphCmd      `cmd:"" help:"Print a state machine as a Mermaid flowchart."`
	SampleData sampleDataCmd `cmd:"" name:"sample-data" help:"Write demo rasters and vectors, a few of them bad."`
	VersionCmd versionCmd    `cmd:"" name:"version" help:"Print geomigrate, GDAL and PROJ versions and the commit."`
	Task       taskCmd       `cmd:"" help:"Container entry points the state machine runs (task convert: the large-object path)."`
}

// cmdEnv is what every command's Run receives.
type cmdEnv struct {
	ctx            context.Context
	stdout, stderr io.Writer
}

// errUsage marks an error already explained to the user.
var errUsage = errors.New("usage")

// usageError is a command line that does not parse or names something
// that cannot be (exit status 2, as for a parse error).
type usageError struct{ msg, cmd string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := interruptible(context.Background())
	err := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err (one line, plus where to find the usage for a usage
// error) and returns the exit status: 0, 1 for a failed run, 2 for a
// command line that does not parse.
func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	var pe *kong.ParseError
	var ce *awsconfig.CredentialsError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ce):
		// What the command was doing when the SDK found no credentials
		// adds nothing to what to do about it.
		fmt.Fprintln(stderr, "geomigrate:", ce)
		return 1
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &pe):
		fmt.Fprintf(stderr, "geomigrate: %v\n", err)
		fmt.Fprintf(stderr, "run 'geomigrate %s--help' for usage\n", commandOf(pe.Context))
		return 2
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "geomigrate: %v\nrun 'geomigrate %s--help' for usage\n", err, ue.cmd)
		return 2
	}
	fmt.Fprintln(stderr, "geomigrate:", err)
	return 1
}

// commandOf names the command a parse error happened in ("migrate "), or
// "" at the top level.
func commandOf(ctx *kong.Context) string {
	if ctx == nil {
		return ""
	}
	if n := ctx.Selected(); n != nil {
		return n.FullPath()[len("geomigrate "):] + " "
	}
	return ""
}

// exitRequest is how kong's exit (after --help or --version) unwinds to
// realMain instead of ending the process inside tests.
type exitRequest struct{ code int }

// newParser returns the kong parser of the command line, writing help to
// stdout.
func newParser(c *cli, stdout, stderr io.Writer) (*kong.Kong, error) {
	opts := append([]kong.Option{},
		kong.NamedMapper("fold", foldMapper{}),
		kong.Name("geomigrate"),
		kong.Description("geomigrate moves geospatial data into cloud-native formats (COG, GeoParquet, FlatGeobuf), safely."),
		kong.Writers(stdout, stderr),
		// GNU getopt's rule: a flag's value is the next argument even when
		// it starts with a dash (--workers -1 reaches validation).
		kong.WithHyphenPrefixedParameters(true),
		kong.Exit(func(code int) { panic(exitRequest{code}) }),
		kong.Vars{"workers": strconv.Itoa(runtime.NumCPU()), "awsWorkersPerCPU": strconv.Itoa(awsWorkersPerCPU)},
		kong.Vars(planVars()),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: true}),
		kong.ExplicitGroups(flagGroups),
	)
	k, err := kong.New(c, opts...)
	if err != nil {
		return nil, err
	}
	orderFlagsByGroup(k.Model.Node)
	return k, nil
}

func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	var c cli
	parser, err := newParser(&c, stdout, stderr)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			x, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			if x.code != 0 || len(args) == 0 {
				err = errUsage
			}
		}
	}()
	switch {
	case len(args) == 0:
		// No command: the usage, on stderr, and a failed exit.
		parser.Stdout = stderr
		_, _ = parser.Parse([]string{"--help"})
		return errUsage
	case args[0] == "help":
		args = append(args[1:], "--help")
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		return err
	}
	if c.CPUProfile != "" {
		stopProfile, perr := startCPUProfile(c.CPUProfile)
		if perr != nil {
			return perr
		}
		defer stopProfile()
	}
	err = checkS3Locations(kctx)
	if err == nil {
		err = kctx.Run(&cmdEnv{ctx: ctx, stdout: stdout, stderr: stderr})
	}
	var ue usageError
	if errors.As(err, &ue) {
		ue.cmd = commandOf(kctx)
		return ue
	}
	return err
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

// startCPUProfile writes Go's CPU profile to path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
