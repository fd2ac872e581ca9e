package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asljudge"
	"github.com/geomigrate/geomigrate/internal/htmlreport"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"golang.org/x/image/webp"
	"golang.org/x/net/html"
)

// reportPage migrates the samples and writes the HTML page of the first
// run's report; it returns the page's path and the report.
func reportPage(t *testing.T) (string, localrun.Report) {
	t.Helper()
	first, _, _ := sampleRun(t)
	page := filepath.Join(t.TempDir(), "run.html")
	stdout, stderr, err := run(t, "report", first, "--html", "-o", page)
	if err != nil {
		t.Fatalf("report --html: %v\n%s\n%s", err, stdout, stderr)
	}
	if stderr != "" {
		t.Errorf("report --html left outputs without a quick-look:\n%s", stderr)
	}
	b, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	var r localrun.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return page, r
}

// checkPage checks a report page (as written, or as a browser's DOM): the
// totals table, and one <img> per output of the report whose src is a
// data: URI holding a PNG or a WebP image (decoded by Go's decoders) and
// one relative link to its STAC item; no other URL leads outside the page.
func checkPage(t *testing.T, page string, r localrun.Report) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	outputs := 0
	for _, o := range r.Files {
		outputs += len(o.Outputs)
	}
	if outputs == 0 {
		t.Fatal("the report has no outputs")
	}
	var imgs []string
	totals, stacLinks := false, 0
	var visit func(*html.Node)
	visit = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				if a.Key == "id" && a.Val == "totals" && n.Data == "table" {
					totals = true
				}
				stacLink := n.Data == "a" && a.Key == "href" && strings.HasSuffix(a.Val, ".stac.json") && !strings.Contains(a.Val, ":")
				if stacLink {
					stacLinks++
				}
				if (a.Key == "src" || a.Key == "href") && !strings.HasPrefix(a.Val, "data:") && !strings.HasPrefix(a.Val, "#") && !stacLink {
					t.Errorf("<%s %s=%.80q>: a URL outside the page", n.Data, a.Key, a.Val)
				}
				if n.Data == "img" && a.Key == "src" {
					imgs = append(imgs, a.Val)
				}
			}
			if n.Data == "script" || n.Data == "link" {
				t.Errorf("<%s> in the page", n.Data)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c)
		}
	}
	visit(doc)
	if !totals {
		t.Error("no totals table")
	}
	if len(imgs) != outputs {
		t.Errorf("%d <img>, want one per output (%d)", len(imgs), outputs)
	}
	if stacLinks != outputs {
		t.Errorf("%d links to STAC items, want one per output (%d)", stacLinks, outputs)
	}
	checkQuickLooks(t, imgs)
}

// checkQuickLooks decodes the quick-looks of img src attributes: PNG or
// WebP data: URIs, 256 px on their longer side.
func checkQuickLooks(t *testing.T, imgs []string) {
	t.Helper()
	for _, src := range imgs {
		decode, data := png.Decode, strings.TrimPrefix(src, "data:image/png;base64,")
		if webpData, ok := strings.CutPrefix(src, "data:image/webp;base64,"); ok {
			decode, data = webp.Decode, webpData
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if data == src || err != nil || len(b) == 0 {
			t.Errorf("img src %.60q… is not a PNG or WebP data: URI (%v)", src, err)
			continue
		}
		img, err := decode(bytes.NewReader(b))
		if err != nil {
			t.Errorf("img %.40q…: %v", src, err)
			continue
		}
		// Useful at a glance: the longer side is the page's 256 px.
		if size := img.Bounds().Size(); max(size.X, size.Y) != htmlreport.QuickLookPixels {
			t.Errorf("img %.40q… is %v, want %d px on its longer side", src, size, htmlreport.QuickLookPixels)
		}
	}
}

// TestReportHTML: `geomigrate report RUN.json --html` over a real run has
// the totals, the hints, and a quick-look of every output; the text form
// and the refusals.
func TestReportHTML(t *testing.T) {
	page, r := reportPage(t)
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkPage(t, string(b), r)
	for _, o := range r.Files {
		if o.Hint != "" && !strings.Contains(string(b), html.EscapeString(o.Hint)) {
			t.Errorf("the page lacks the hint of %s: %q", o.Key, o.Hint)
		}
	}

	reportPath := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(reportPath, mustJSON(t, r), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, err := run(t, "report", reportPath); err != nil || !strings.Contains(out, "Needs attention:") {
		t.Errorf("report (text): %v\n%s", err, out)
	}
	r.SchemaVersion = localrun.ReportSchemaVersion + 1
	if err := os.WriteFile(reportPath, mustJSON(t, r), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "report", reportPath, "--html"); err == nil || !strings.Contains(err.Error(), "schema version") {
		t.Errorf("a report of a newer schema: err = %v", err)
	}
	if _, _, err := run(t, "report"); exitCode(err, io.Discard) != 2 {
		t.Errorf("no report named: err = %v, want a usage error (exit 2)", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chromiumEnv names the headless Chromium binary the page is opened with
// (make test sets it; `make chromium` installs the Debian package).
const chromiumEnv = "GEOMIGRATE_CHROMIUM"

func chromium(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(chromiumEnv)
	if bin == "" {
		if os.Getenv(asljudge.RequireEnv) != "" {
			t.Fatalf("%s is not set and %s is: run `make chromium` and set %s=/usr/bin/chromium", chromiumEnv, asljudge.RequireEnv, chromiumEnv)
		}
		t.Skipf("%s is not set: the HTML report is not opened in a browser (make chromium; %s=/usr/bin/chromium)", chromiumEnv, chromiumEnv)
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("%s=%s: %v (run `make chromium`)", chromiumEnv, bin, err)
	}
	return bin
}

// openInChromium loads a page in headless Chromium once and returns the
// DOM it rendered and the console messages it logged. Nothing leaves the
// machine: the page's CSP allows no fetch, and Chromium's own background
// traffic is switched off.
func openInChromium(t *testing.T, bin, page string) (dom string, console []string) {
	t.Helper()
	// Chromium starts slowly on a loaded 2-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--disable-default-apps", "--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0",
		"--dump-dom", "file://"+page)
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, stderr.String())
	}
	sc := bufio.NewScanner(&stderr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// [pid:tid:time:INFO:CONSOLE:41] "message", source: file:///… (41)
		if l := sc.Text(); strings.Contains(l, ":CONSOLE") || strings.Contains(l, "Uncaught") {
			console = append(console, l)
		}
	}
	return stdout.String(), console
}

// TestReportHTMLInChromium: the page of a real run renders in headless
// Chromium with no console message (no blocked load, no error) and its
// DOM has the totals and one quick-look image per output.
func TestReportHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	page, r := reportPage(t)
	dom, console := openInChromium(t, bin, page)
	if len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
	if !strings.Contains(dom, "Totals per dataset") {
		t.Fatalf("Chromium's DOM is not the page:\n%.2000s", dom)
	}
	checkPage(t, dom, r)
}

// TestChromiumConsoleIsRead: a page that tries to load an outside image
// is caught by openInChromium, so a clean run above means a clean page.
func TestChromiumConsoleIsRead(t *testing.T) {
	bin := chromium(t)
	page := filepath.Join(t.TempDir(), "bad.html")
	bad := `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">` +
		`<title>bad</title></head><body><img src="http://127.0.0.1:9/x.png" alt=""></body></html>`
	if err := os.WriteFile(page, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, console := openInChromium(t, bin, page)
	if len(console) == 0 {
		t.Fatal("a blocked outside image left no console message")
	}
}

// TestReportHTMLFindsOutputsFromTheReport: the page is drawn from the
// report's own dest (relative to the report file), wherever the command
// runs and wherever the page goes; each STAC link resolves to the item;
// a report whose outputs are gone exits 1.
func TestReportHTMLFindsOutputsFromTheReport(t *testing.T) {
	first, _, dest := sampleRun(t)
	r, err := readReport(first)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.IsAbs(r.Dest) || filepath.Join(filepath.Dir(first), r.Dest) != dest {
		t.Fatalf("report dest %q: want it relative to the report file (%s)", r.Dest, dest)
	}
	pageDir := t.TempDir()
	page := filepath.Join(pageDir, "page.html")
	if out, stderr, err := run(t, "report", first, "--html", "-o", page); err != nil || stderr != "" {
		t.Fatalf("report --html: %v\n%s\n%s", err, out, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkPage(t, string(b), *r)
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var visit func(*html.Node)
	visit = func(n *html.Node) {
		for _, a := range n.Attr {
			if n.Data == "a" && a.Key == "href" && strings.HasSuffix(a.Val, ".stac.json") {
				item, err := os.ReadFile(filepath.Join(pageDir, filepath.FromSlash(a.Val)))
				if err != nil || !bytes.Contains(item, []byte(`"type": "Feature"`)) {
					t.Errorf("STAC link %s: %v", a.Val, err)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c)
		}
	}
	visit(doc)

	// The outputs moved away: the page cannot be drawn, and says so.
	if err := os.Rename(dest, dest+".moved"); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := run(t, "report", first, "--html", "-o", page)
	if code := exitCode(err, io.Discard); code != 1 || !strings.Contains(stderr, "no quick-look") {
		t.Fatalf("report --html without its outputs: exit %d (%v), stderr %s", code, err, stderr)
	}
	// --dest names where they are now.
	if out, stderr, err := run(t, "report", first, "--html", "-o", page, "--dest", dest+".moved"); err != nil {
		t.Fatalf("report --html --dest: %v\n%s\n%s", err, out, stderr)
	}
}

func TestReportDest(t *testing.T) {
	for _, tc := range []struct{ report, dest, want string }{
		{"/data/out/.geomigrate-state/reports/run.json", "/data/out", "../.."},
		{"/data/run1.json", "/data/out", "out"},
		{"/elsewhere/r.json", "/data/out", "../data/out"},
	} {
		if got := reportDest(tc.report, tc.dest); got != tc.want {
			t.Errorf("reportDest(%q, %q) = %q, want %q", tc.report, tc.dest, got, tc.want)
		}
	}
}

// TestReportHTMLPagesLargeRuns: a report of 300 outputs (real COGs and
// GeoParquet files, drawn by GDAL) is written as pages of at most 50
// quick-looks linked to each other; together they hold every quick-look,
// each a PNG or WebP at 256 px, in at most 2,000,000 bytes.
func TestReportHTMLPagesLargeRuns(t *testing.T) {
	first, _, dest := sampleRun(t)
	r, err := readReport(first)
	if err != nil {
		t.Fatal(err)
	}
	var real []localrun.Outcome
	for _, o := range r.Files {
		if o.Status == localrun.StatusCompleted && len(o.Outputs) == 1 {
			real = append(real, o)
		}
	}
	if len(real) < 2 {
		t.Fatalf("%d completed files in the sample run", len(real))
	}
	big := *r
	big.Files = nil
	const n = 300
	for i := range n {
		o := real[i%len(real)]
		key := fmt.Sprintf("copies/%03d-%s", i, path.Base(o.Outputs[0]))
		for _, ln := range [][2]string{{o.Outputs[0], key}, {o.STACItems[0], key + ".stac.json"}} {
			to := filepath.Join(dest, filepath.FromSlash(ln[1]))
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(filepath.Join(dest, filepath.FromSlash(ln[0])), to); err != nil {
				t.Fatal(err)
			}
		}
		o.Key, o.Outputs, o.STACItems = fmt.Sprintf("copies/%03d", i), []string{key}, []string{key + ".stac.json"}
		big.Files = append(big.Files, o)
	}
	reportPath := filepath.Join(filepath.Dir(first), "big.json")
	if err := os.WriteFile(reportPath, mustJSON(t, big), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "report", reportPath, "--html")
	if err != nil {
		t.Fatalf("report --html: %v\n%s\n%s", err, out, stderr)
	}
	pages, _ := filepath.Glob(filepath.Join(filepath.Dir(first), "big*.html"))
	if len(pages) != n/reportPerPage {
		t.Fatalf("%d pages %v, want %d", len(pages), pages, n/reportPerPage)
	}
	var total int64
	imgs := 0
	for _, p := range pages {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
		t.Logf("%s: %d bytes", filepath.Base(p), fi.Size())
		b, _ := os.ReadFile(p)
		doc, err := html.Parse(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		var srcs []string
		var visit func(*html.Node)
		visit = func(n *html.Node) {
			for _, a := range n.Attr {
				if n.Type == html.ElementNode && n.Data == "img" && a.Key == "src" {
					srcs = append(srcs, a.Val)
				}
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				visit(c)
			}
		}
		visit(doc)
		checkQuickLooks(t, srcs)
		imgs += len(srcs)
		for _, other := range pages {
			if other != p && !strings.Contains(string(b), `href="`+filepath.Base(other)+`"`) {
				t.Errorf("%s does not link to %s", filepath.Base(p), filepath.Base(other))
			}
		}
	}
	if imgs != n {
		t.Errorf("%d quick-looks over the pages, want %d", imgs, n)
	}
	t.Logf("%d outputs: %d pages, %d bytes together", n, len(pages), total)
	if total > 2_000_000 {
		t.Errorf("%d outputs make %d bytes of pages, over 2,000,000", n, total)
	}
}
