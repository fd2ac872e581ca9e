package plan

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/geomigrate/geomigrate/internal/cost"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// Print writes the plan as text; --json is the Report itself.
func (r *Report) Print(w io.Writer) {
	t := r.Totals
	perFile := r.recipesPerFile()
	recipes := "recipe " + r.RecipeHash
	if perFile {
		recipes = fmt.Sprintf("%d recipe(s) by file, see By recipe", len(r.ByRecipe))
	}
	fmt.Fprintf(w, "geomigrate plan: %d file(s), %s in %s (%s backend, GDAL %s, %s); written: %s\n",
		t.Files, humanBytes(t.Bytes), strings.Join(r.Sources, ", "), r.Backend, r.GDAL, recipes, r.Written)
	if len(r.Clashes) > 0 {
		fmt.Fprintf(w, "\n%d output key(s) claimed by more than one source: each of these sources would be routed to remediation (DestinationConflict), the rest migrates; rename all but one of each, or exclude them in the recipe file\n", len(r.Clashes))
		for _, c := range r.Clashes {
			fmt.Fprintf(w, "  %s <- %s\n", c.Dest, strings.Join(c.Sources, ", "))
		}
	}
	fmt.Fprintf(w, "\nWould convert %d (%s), skip %d (%s), refuse %d (%s); %d ignored\n",
		t.Convert, humanBytes(t.ConvertBytes), t.Skip, humanBytes(t.SkipBytes), t.Refuse, humanBytes(t.RefuseBytes), t.Ignore)
	reasons := map[string]int{}
	for _, f := range r.Files {
		if f.Action == ActionSkip {
			reasons[f.Reason]++
		}
	}
	if len(reasons) > 0 {
		var parts []string
		for reason, n := range reasons {
			parts = append(parts, fmt.Sprintf("%s %d", reason, n))
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "Skipped because: %s\n", strings.Join(parts, ", "))
	}
	printCounts(w, "format", r.ByFormat)
	printCounts(w, "dataset", r.ByDataset)
	if perFile {
		r.printRecipes(w)
	}
	// Refusals are what a user acts on; long lists of skipped and ignored
	// files are cut (--json lists every file).
	sections := []struct {
		title, action string
		limit         int
	}{
		{"Would skip", ActionSkip, 20}, {"Would refuse", ActionRefuse, 200}, {"Ignored", ActionIgnore, 20},
	}
	for _, s := range sections {
		var lines []string
		more := 0
		for _, f := range r.Files {
			if f.Action != s.action {
				continue
			}
			if len(lines) == s.limit {
				more++
				continue
			}
			why := f.Reason
			if f.Code != "" {
				why = fmt.Sprintf("%s at %s: %s", f.Error, f.Stage, f.Reason) // Reason starts with the code
			}
			if perFile && f.RecipeHash != "" {
				why += "  (recipe " + f.RecipeHash + ")"
			}
			lines = append(lines, fmt.Sprintf("  %s/%s  %s", f.Bucket, objectstore.QuoteKey(f.Key), why))
		}
		if more > 0 {
			lines = append(lines, fmt.Sprintf("  … and %d more (--json lists every file)", more))
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n%s:\n%s\n", s.title, strings.Join(lines, "\n"))
		}
	}
	e, m := r.Estimate, r.Model
	fmt.Fprintf(w, "\nEstimated cost on AWS (%s list prices of %s; %s, convert %d MB, others %d MB, concurrency %d):\n",
		m.Prices.Region, m.Prices.AsOf, m.Settings.Architecture, m.Settings.ConvertMemoryMB, m.Settings.SmallMemoryMB, m.Settings.Concurrency)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  Step Functions Standard\t%d transitions (%d per converted file, %d per skipped, %d per refused)\t%s\n",
		e.Transitions, m.Walks[cost.Converted].Transitions, m.Walks[cost.Skipped].Transitions, m.Walks[cost.Remediation].Transitions, dollars(e.Cost.StepFunctionsStandard))
	if n := r.countStage("hashcheck"); n > 0 {
		fmt.Fprintf(tw, "  \t(%d refused by HashCheck: %d transitions each)\t\n", n, m.Walks[cost.Rejected].Transitions)
	}
	fmt.Fprintf(tw, "  Step Functions Express\t%d requests, %.1f GB-s\t%s\n", e.Executions, e.ExpressGBSeconds, dollars(e.Cost.StepFunctionsExpress))
	fmt.Fprintf(tw, "  Lambda\t%d requests, %.1f GB-s (%.2f s converting)\t%s\n", e.LambdaInvocations, e.LambdaGBSeconds, e.ConvertSeconds, dollars(e.Cost.Lambda))
	fmt.Fprintf(tw, "  S3\t%d GET/HEAD, %d PUT/COPY/LIST\t%s\n", e.S3GetHead, e.S3PutCopyList, dollars(e.Cost.S3))
	fmt.Fprintf(tw, "  DynamoDB\t%d read units, %d write units\t%s\n", e.DynamoDBReadUnits, e.DynamoDBWriteUnits, dollars(e.Cost.DynamoDB))
	fmt.Fprintf(tw, "  SQS\t%d messages\t%s\n", e.SQSRequests, dollars(e.Cost.SQS))
	fmt.Fprintf(tw, "  Quarantine, one month\t%s of refused sources\t%s\n", humanBytes(e.QuarantineBytes), dollars(e.Cost.Quarantine))
	fmt.Fprintf(tw, "  Execution logs\t%s\t%s\n", humanBytes(e.LogBytes), dollars(e.Cost.Logs))
	fmt.Fprintf(tw, "  Total, Standard workflow\t\t%s\n", dollars(e.Cost.TotalStandard))
	fmt.Fprintf(tw, "  Total, Express workflow\t\t%s\n", dollars(e.Cost.TotalExpress))
	tw.Flush()
	fmt.Fprintf(w, "Cost per 1,000 files: %s (Standard), %s (Express)\n", dollars(e.PerThousandStandard), dollars(e.PerThousandExpress))
	printBounds(w, e, m)
	if e.OverExpressLimit > 0 {
		fmt.Fprintf(w, "%d execution(s) would exceed Express's %d s limit: use Standard\n", e.OverExpressLimit, cost.ExpressLimitSeconds)
	}
	if s := e.StandInList(); len(s) > 0 {
		fmt.Fprintf(w, "Not measured, estimated with another format's rate: %s\n", strings.Join(s, ", "))
	}
	tp := m.Throughput
	var rates []string
	for _, ext := range tp.Measured() {
		rates = append(rates, fmt.Sprintf("%s %.1f MiB/s", ext, tp.Formats[ext].MBPerSecond*1e6/(1<<20)))
	}
	fmt.Fprintf(w, "Conversion throughput measured %s on %s (1 thread; %s): %s\n", tp.MeasuredAt, tp.Machine, tp.Command, strings.Join(rates, ", "))
}

// printBounds is the duration and what binds it: every quota's bound,
// longest first, with what to raise.
func printBounds(w io.Writer, e cost.Estimate, m Model) {
	if len(e.Bounds) == 0 {
		return
	}
	b := e.Bounds[0]
	fmt.Fprintf(w, "Duration: %s, bound by %s (raise: %s); Lambda concurrency %d, backfill MaxConcurrency %d, quotas of %s\n",
		humanSeconds(e.WallClockSeconds), b.Name, b.Raise, m.Settings.Concurrency, m.Settings.MaxConcurrency, m.Quotas.Region)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, x := range e.Bounds {
		how := fmt.Sprintf("%.0f at %g/s", x.Demand, x.Rate)
		if x.Name == cost.BoundLongestExecution {
			how = "one file's tasks in turn"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", x.Name, humanSeconds(x.Seconds), how)
	}
	tw.Flush()
}

// recipesPerFile tells whether the files' recipes differ from the run-wide
// one (a recipe file, --co): the text then shows each file's.
func (r *Report) recipesPerFile() bool {
	for h := range r.ByRecipe {
		if h != r.RecipeHash {
			return true
		}
	}
	return false
}

// printRecipes is the table of recipe hashes: what each would do, and the
// first file of each (`geomigrate recipe show` prints a key's settings).
func (r *Report) printRecipes(w io.Writer) {
	first := map[string]string{}
	for _, f := range r.Files {
		if _, ok := first[f.RecipeHash]; !ok && f.RecipeHash != "" {
			first[f.RecipeHash] = f.Bucket + "/" + objectstore.QuoteKey(f.Key)
		}
	}
	var hashes []string
	for h := range r.ByRecipe {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	fmt.Fprintf(w, "\nBy recipe:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  recipe\tfiles\tbytes\tconvert\tskip\trefuse\tfirst file\n")
	for _, h := range hashes {
		c := r.ByRecipe[h]
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\t%d\t%d\t%s\n", h, c.Files, humanBytes(c.Bytes), c.Convert, c.Skip, c.Refuse, first[h])
	}
	tw.Flush()
}

// countStage counts the files refused at stage.
func (r *Report) countStage(stage string) int {
	n := 0
	for _, f := range r.Files {
		if f.Action == ActionRefuse && f.Stage == stage {
			n++
		}
	}
	return n
}

func printCounts(w io.Writer, what string, m map[string]*Counts) {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "\nBy %s:\n", what)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  %s\tfiles\tbytes\tconvert\tskip\trefuse\tignore\t\n", what)
	for _, k := range keys {
		c := m[k]
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\t%d\t%d\t%d\t\n", k, c.Files, humanBytes(c.Bytes), c.Convert, c.Skip, c.Refuse, c.Ignore)
	}
	tw.Flush()
}

// dollars shows an amount with the precision its size needs.
func dollars(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v >= 1:
		return fmt.Sprintf("$%.2f", v)
	case v >= 0.01:
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.6f", v)
}

// humanBytes writes n in IEC units (KiB, MiB …: powers of 1,024), as every
// size the CLI prints is.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), 0
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i-1])
}

func humanSeconds(s float64) string {
	switch {
	case s < 120:
		return fmt.Sprintf("%.1f s", s)
	case s < 2*3600:
		return fmt.Sprintf("%.1f min", s/60)
	case s < 2*86400:
		return fmt.Sprintf("%.1f h", s/3600)
	}
	return fmt.Sprintf("%.1f days", s/86400)
}
