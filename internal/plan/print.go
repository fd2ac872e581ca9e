package plan

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/geomigrate/geomigrate/internal/cost"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/termtable"
)

// Print writes the plan for a person, fitted to width display columns
// (0: no limit; termtable.Width); --json is the Report itself.
func (r *Report) Print(w io.Writer, width int) {
	t := r.Totals
	perFile := r.recipesPerFile()
	recipes := "recipe " + r.RecipeHash
	if perFile {
		recipes = fmt.Sprintf("%d recipe(s) by file, see By recipe", len(r.ByRecipe))
	}
	termtable.WriteText(w, fmt.Sprintf("geomigrate plan: %d file(s), %s in %s (%s backend, GDAL %s, %s); written: %s",
		t.Files, humanBytes(t.Bytes), strings.Join(r.Sources, ", "), r.Backend, r.GDAL, recipes, r.Written), "  ", width)
	if len(r.Clashes) > 0 {
		fmt.Fprintln(w)
		termtable.WriteText(w, fmt.Sprintf("%d output key(s) claimed by more than one source: each of these sources would be routed to remediation (DestinationConflict), the rest migrates; rename all but one of each, or exclude them in the recipe file", len(r.Clashes)), "", width)
		for _, c := range r.Clashes {
			termtable.WriteText(w, fmt.Sprintf("  %s <- %s", c.Dest, strings.Join(c.Sources, ", ")), "     ", width)
		}
	}
	fmt.Fprintln(w)
	termtable.WriteText(w, fmt.Sprintf("Would convert %d (%s), skip %d (%s), refuse %d (%s); %d ignored",
		t.Convert, humanBytes(t.ConvertBytes), t.Skip, humanBytes(t.SkipBytes), t.Refuse, humanBytes(t.RefuseBytes), t.Ignore), "  ", width)
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
		termtable.WriteText(w, "Skipped because: "+strings.Join(parts, ", "), "  ", width)
	}
	printCounts(w, "format", r.ByFormat, width)
	printCounts(w, "dataset", r.ByDataset, width)
	if perFile {
		r.printRecipes(w, width)
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
		list := termtable.New("  ", termtable.Column{Fit: termtable.Middle, Key: true}, termtable.Column{Fit: termtable.Wrap})
		more := 0
		for _, f := range r.Files {
			if f.Action != s.action {
				continue
			}
			if list.Len() == s.limit {
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
			list.Add(f.Bucket+"/"+objectstore.QuoteKey(f.Key), why)
		}
		if list.Len() > 0 {
			fmt.Fprintf(w, "\n%s:\n", s.title)
			_ = list.Write(w, width)
		}
		if more > 0 {
			fmt.Fprintf(w, "  … and %d more (--json lists every file)\n", more)
		}
	}
	e, m := r.Estimate, r.Model
	fmt.Fprintln(w)
	termtable.WriteText(w, fmt.Sprintf("Estimated cost on AWS (%s list prices of %s; %s, convert %d MB, others %d MB, concurrency %d):",
		m.Prices.Region, m.Prices.AsOf, m.Settings.Architecture, m.Settings.ConvertMemoryMB, m.Settings.SmallMemoryMB, m.Settings.Concurrency), "  ", width)
	costs := termtable.New("  ", termtable.Column{Key: true}, termtable.Column{Fit: termtable.Wrap}, termtable.Column{})
	costs.Add("Step Functions Standard", fmt.Sprintf("%d transitions (%d per converted file, %d per skipped, %d per refused)",
		e.Transitions, m.Walks[cost.Converted].Transitions, m.Walks[cost.Skipped].Transitions, m.Walks[cost.Remediation].Transitions), dollars(e.Cost.StepFunctionsStandard))
	if n := r.countStage("hashcheck"); n > 0 {
		costs.Add("", fmt.Sprintf("(%d refused by HashCheck: %d transitions each)", n, m.Walks[cost.Rejected].Transitions), "")
	}
	costs.Add("Step Functions Express", fmt.Sprintf("%d requests, %.1f GB-s", e.Executions, e.ExpressGBSeconds), dollars(e.Cost.StepFunctionsExpress))
	costs.Add("Lambda", fmt.Sprintf("%d requests, %.1f GB-s (%.2f s converting)", e.LambdaInvocations, e.LambdaGBSeconds, e.ConvertSeconds), dollars(e.Cost.Lambda))
	costs.Add("S3", fmt.Sprintf("%d GET/HEAD, %d PUT/COPY/LIST", e.S3GetHead, e.S3PutCopyList), dollars(e.Cost.S3))
	costs.Add("DynamoDB", fmt.Sprintf("%d read units, %d write units", e.DynamoDBReadUnits, e.DynamoDBWriteUnits), dollars(e.Cost.DynamoDB))
	costs.Add("SQS", fmt.Sprintf("%d messages", e.SQSRequests), dollars(e.Cost.SQS))
	costs.Add("Quarantine, one month", humanBytes(e.QuarantineBytes)+" of refused sources", dollars(e.Cost.Quarantine))
	costs.Add("Execution logs", humanBytes(e.LogBytes), dollars(e.Cost.Logs))
	costs.Add("Total, Standard workflow", "", dollars(e.Cost.TotalStandard))
	costs.Add("Total, Express workflow", "", dollars(e.Cost.TotalExpress))
	_ = costs.Write(w, width)
	termtable.WriteText(w, fmt.Sprintf("Cost per 1,000 files: %s (Standard), %s (Express)", dollars(e.PerThousandStandard), dollars(e.PerThousandExpress)), "  ", width)
	printBounds(w, e, m, width)
	if e.OverExpressLimit > 0 {
		termtable.WriteText(w, fmt.Sprintf("%d execution(s) would exceed Express's %d s limit: use Standard", e.OverExpressLimit, cost.ExpressLimitSeconds), "  ", width)
	}
	if s := e.StandInList(); len(s) > 0 {
		termtable.WriteText(w, "Not measured, estimated with another format's rate: "+strings.Join(s, ", "), "  ", width)
	}
	tp := m.Throughput
	var rates []string
	for _, ext := range tp.Measured() {
		rates = append(rates, fmt.Sprintf("%s %.1f MiB/s", ext, tp.Formats[ext].MBPerSecond*1e6/(1<<20)))
	}
	termtable.WriteText(w, fmt.Sprintf("Conversion throughput measured %s on %s (1 thread; %s): %s", tp.MeasuredAt, tp.Machine, tp.Command, strings.Join(rates, ", ")), "  ", width)
}

// printBounds is the duration and what binds it: every quota's bound,
// longest first, with what to raise.
func printBounds(w io.Writer, e cost.Estimate, m Model, width int) {
	if len(e.Bounds) == 0 {
		return
	}
	b := e.Bounds[0]
	termtable.WriteText(w, fmt.Sprintf("Duration: %s, bound by %s (raise: %s); Lambda concurrency %d, backfill MaxConcurrency %d, quotas of %s",
		humanSeconds(e.WallClockSeconds), b.Name, b.Raise, m.Settings.Concurrency, m.Settings.MaxConcurrency, m.Quotas.Region), "  ", width)
	bounds := termtable.New("  ", termtable.Column{Key: true}, termtable.Column{}, termtable.Column{Fit: termtable.Wrap})
	for _, x := range e.Bounds {
		how := fmt.Sprintf("%.0f at %g/s", x.Demand, x.Rate)
		if x.Name == cost.BoundLongestExecution {
			how = "one file's tasks in turn"
		}
		bounds.Add(x.Name, humanSeconds(x.Seconds), how)
	}
	_ = bounds.Write(w, width)
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
func (r *Report) printRecipes(w io.Writer, width int) {
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
	t := termtable.New("  ", termtable.Column{Header: "recipe", Key: true}, termtable.Column{Header: "files", Right: true}, termtable.Column{Header: "bytes", Right: true},
		termtable.Column{Header: "convert", Right: true}, termtable.Column{Header: "skip", Right: true}, termtable.Column{Header: "refuse", Right: true},
		termtable.Column{Header: "first file", Fit: termtable.Middle})
	for _, h := range hashes {
		c := r.ByRecipe[h]
		t.Add(h, strconv.Itoa(c.Files), humanBytes(c.Bytes), strconv.Itoa(c.Convert), strconv.Itoa(c.Skip), strconv.Itoa(c.Refuse), first[h])
	}
	_ = t.Write(w, width)
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

func printCounts(w io.Writer, what string, m map[string]*Counts, width int) {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "\nBy %s:\n", what)
	cols := []termtable.Column{{Header: what, Right: true, Fit: termtable.Middle, Key: true}}
	for _, h := range []string{"files", "bytes", "convert", "skip", "refuse", "ignore"} {
		cols = append(cols, termtable.Column{Header: h, Right: true})
	}
	t := termtable.New("  ", cols...)
	for _, k := range keys {
		c := m[k]
		t.Add(k, strconv.Itoa(c.Files), humanBytes(c.Bytes), strconv.Itoa(c.Convert), strconv.Itoa(c.Skip), strconv.Itoa(c.Refuse), strconv.Itoa(c.Ignore))
	}
	_ = t.Write(w, width)
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
