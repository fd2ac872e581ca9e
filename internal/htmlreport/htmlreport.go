// Package htmlreport writes a run report as one self-contained HTML page:
// totals per dataset and per failure tier, what needs attention with its
// remediation hint, warnings, and a quick-look of every output (a raster
// thumbnail, a vector extent map) embedded as a data: URI (PNG or WebP,
// a few KB each at 256 px: 300 outputs take under 1 MB). The page loads
// nothing: no external URL, no script, and a Content-Security-Policy that
// says so to the browser.
//
// The images come from a Renderer (internal/gdal implements it); this
// package only lays out the page.
package htmlreport

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"path"
	"slices"
	"time"

	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/signals"
)

// Run is what the page shows: a run report, in the words of
// docs/report-schema.json.
type Run struct {
	Source        string // the report file, as named
	SchemaVersion int
	Started       time.Time
	Finished      time.Time
	Seconds       float64
	Backend       string
	Dest          string
	Workers       int
	Generator     string // "geomigrate 1.2.3"
	Files         []File
	// Signals are the report's fallback rates, recovery latencies and
	// dead-letter queue (nil: a report from before they existed).
	Signals *signals.Signals
}

// File is one input's outcome. Status, Tier: the schema's values
// (completed, skipped, remediation, dlq, failed, ignored, not_started;
// data_specific, transient, systemic, unknown).
type File struct {
	Dataset  string
	Key      string
	Status   string
	Reason   string
	Tier     string
	Error    string
	Code     string
	Message  string
	Hint     string
	Warnings []string
	BytesIn  int64
	BytesOut int64
	Outputs  []Output
}

// Output is one output file.
type Output struct {
	Key  string // destination key, shown
	Path string // where it can be read on this machine; "" when it cannot (an S3 destination)
	// Item is the href of the output's STAC item as seen from the page
	// (relative), "" when it cannot be linked; ItemKey its key, shown
	// when it is not linked.
	Item, ItemKey string
}

// Renderer draws the quick-looks as PNG or WebP images, at most px pixels
// on a side, with a caption saying what is shown.
type Renderer interface {
	Thumbnail(path string, px int) (img []byte, caption string, err error)
	ExtentMap(path string, px int) (img []byte, caption string, err error)
}

// QuickLookPixels is the longer side of every quick-look.
const QuickLookPixels = 256

// Result says what Write could not draw.
type Result struct {
	Images int // quick-looks embedded
	// Missing are "key: why" for outputs shown without one; Failed those
	// of them whose drawing failed (a file missing or unreadable), as
	// opposed to a format without quick-looks or a remote destination.
	Missing, Failed []string
	// Pages is how many pages were written.
	Pages int
}

// Paging splits the quick-looks of a large run over several pages, each
// at most PerPage of them (0: all on one page), so that no page grows
// with the run. Href names page n (1-based) as the pages link to each
// other.
type Paging struct {
	PerPage int
	Href    func(page int) string
}

// Write renders run as one HTML page to w. An output that cannot be drawn
// is listed in the page and in Result.Missing; it does not fail the page.
func Write(w io.Writer, run Run, r Renderer) (Result, error) {
	pages, res, err := Render(run, r, Paging{})
	if err != nil {
		return res, err
	}
	if _, err := w.Write(pages[0]); err != nil {
		return res, fmt.Errorf("htmlreport.Write: %w", err)
	}
	return res, nil
}

// Render renders run as pages: the first holds the totals, what needs
// attention, the warnings and the first quick-looks; each further page
// PerPage more quick-looks. Every page links to every other.
func Render(run Run, r Renderer, paging Paging) ([][]byte, Result, error) {
	p := page{Run: run, Duration: time.Duration(run.Seconds * float64(time.Second)).Round(time.Millisecond).String()}
	p.tally()
	var res Result
	var all []figure
	for _, f := range run.Files {
		if f.Status == "remediation" || f.Status == "dlq" || f.Status == "failed" {
			p.Attention = append(p.Attention, f)
		}
		if len(f.Warnings) > 0 {
			p.Warned = append(p.Warned, f)
		}
		if f.Status == "ignored" || f.Status == "not_started" || f.Status == "skipped" {
			p.Others = append(p.Others, f)
		}
		for _, o := range f.Outputs {
			q := quickLook(r, f, o)
			if q.Src != "" {
				res.Images++
			} else {
				res.Missing = append(res.Missing, o.Key+": "+q.Why)
				if q.failed {
					res.Failed = append(res.Failed, o.Key+": "+q.Why)
				}
			}
			all = append(all, q)
		}
	}
	p.OutputCount = len(all)
	per := paging.PerPage
	if per <= 0 || per >= len(all) || paging.Href == nil {
		per = max(len(all), 1)
	}
	n := max((len(all)+per-1)/per, 1)
	var pages [][]byte
	for i := 0; i < n; i++ {
		q := p
		q.Page, q.First = i+1, i*per+1
		q.Outputs = all[i*per : min((i+1)*per, len(all))]
		q.Last = q.First + len(q.Outputs) - 1
		if n > 1 {
			for k := 1; k <= n; k++ {
				q.Nav = append(q.Nav, navLink{N: k, Href: paging.Href(k), Current: k == i+1})
			}
		}
		var buf bytes.Buffer
		if err := pageTemplate.Execute(&buf, q); err != nil {
			return nil, res, fmt.Errorf("htmlreport.Render: %w", err)
		}
		pages = append(pages, buf.Bytes())
	}
	res.Pages = len(pages)
	return pages, res, nil
}

// navLink is one entry of the pages' navigation.
type navLink struct {
	N       int
	Href    string
	Current bool
}

// quickLook draws one output: a thumbnail for a COG, an extent map for a
// GeoParquet or FlatGeobuf layer.
func quickLook(r Renderer, f File, o Output) figure {
	fig := figure{Dataset: f.Dataset, Source: f.Key, Key: o.Key, Item: o.Item, ItemKey: o.ItemKey}
	draw := r.Thumbnail
	fig.Kind = "raster thumbnail"
	switch formats.OutputFormat(o.Key) {
	case "COG":
	case "GeoParquet", "FlatGeobuf":
		draw, fig.Kind = r.ExtentMap, "vector extent map"
	default:
		fig.Kind, fig.Why = "output", "no quick-look for this format"
		return fig
	}
	if o.Path == "" {
		fig.Why = "not on this machine (the report's destination is not a local directory)"
		return fig
	}
	img, caption, err := draw(o.Path, QuickLookPixels)
	if err == nil && imageType(img) == "" {
		err = fmt.Errorf("%s: the quick-look is neither PNG nor WebP", o.Path)
	}
	if err != nil {
		fig.Why, fig.failed = err.Error(), true
		return fig
	}
	fig.Caption = caption
	// Our own image bytes, base64 (A-Z a-z 0-9 + / =): a src attribute
	// html/template may take as it is (as a URL it would write each "+"
	// as "&#43;").
	fig.Src = template.HTMLAttr(`src="data:` + imageType(img) + `;base64,` + base64.StdEncoding.EncodeToString(img) + `"`)
	return fig
}

// imageType is the media type of a PNG or WebP image by its signature
// (PNG: 8 bytes; WebP: a RIFF container of form WEBP), "" for anything
// else.
func imageType(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// page is the template's data.
type page struct {
	Run
	Duration  string
	Datasets  []datasetTotals
	All       datasetTotals
	Tiers     []tierTotals
	Attention []File
	Warned    []File
	Others    []File
	// Outputs are this page's quick-looks: numbers First to Last of
	// OutputCount; Nav links the pages when there are several.
	Outputs           []figure
	Page, First, Last int
	OutputCount       int
	Nav               []navLink
}

type figure struct {
	Dataset, Source, Key string
	Kind                 string
	Src                  template.HTMLAttr // src="data:…"; "" when not drawn
	Caption              string
	Why                  string // why not drawn
	failed               bool   // drawing was tried and failed
	Item, ItemKey        string // the STAC item: href, or key when not linked
}

// datasetTotals counts outcomes of one dataset; Routed is remediation and
// dlq by tier.
type datasetTotals struct {
	Name                                                                  string
	Files, Completed, Skipped, Ignored, Remediation, DLQ, Failed, Pending int
	Warned                                                                int
	Routed                                                                map[string]int
	BytesIn, BytesOut                                                     int64
}

func (d *datasetTotals) add(f File) {
	d.Files++
	d.BytesIn += f.BytesIn
	d.BytesOut += f.BytesOut
	if len(f.Warnings) > 0 {
		d.Warned++
	}
	switch f.Status {
	case "completed":
		d.Completed++
	case "skipped":
		d.Skipped++
	case "ignored":
		d.Ignored++
	case "remediation":
		d.Remediation++
	case "dlq":
		d.DLQ++
	case "not_started":
		d.Pending++
	default:
		d.Failed++
	}
	if f.Status == "remediation" || f.Status == "dlq" {
		if d.Routed == nil {
			d.Routed = map[string]int{}
		}
		d.Routed[tierOf(f)]++
	}
}

func tierOf(f File) string {
	if f.Tier == "" {
		return "unknown"
	}
	return f.Tier
}

// tierTotals: routed files of one tier.
type tierTotals struct {
	Tier, Label, Meaning string
	Remediation, DLQ     int
}

// tiers in the order the page lists them, with what each asks of the
// reader.
var tiers = []tierTotals{
	{Tier: "data_specific", Label: "data-specific", Meaning: "The file itself is at fault: fix it as its hint says and upload it again, or run geomigrate replay --queue remediation."},
	{Tier: "transient", Label: "transient", Meaning: "Throttling or an outage outlasted the retries: run geomigrate replay --queue dlq once the service is healthy."},
	{Tier: "systemic", Label: "systemic", Meaning: "The worker or its environment failed (permissions, buckets, memory, disk): fix it, then replay the DLQ."},
	{Tier: "unknown", Label: "unknown", Meaning: "Unclassified: read the message and the execution history, then replay."},
}

func (p *page) tally() {
	p.Tiers = slices.Clone(tiers)
	at := map[string]int{}
	for i, t := range p.Tiers {
		at[t.Tier] = i
	}
	index := map[string]int{}
	for _, f := range p.Files {
		i, ok := index[f.Dataset]
		if !ok {
			i = len(p.Datasets)
			index[f.Dataset] = i
			p.Datasets = append(p.Datasets, datasetTotals{Name: f.Dataset})
		}
		p.Datasets[i].add(f)
		p.All.add(f)
		if f.Status != "remediation" && f.Status != "dlq" {
			continue
		}
		k := tierOf(f)
		t, ok := at[k]
		if !ok {
			t = len(p.Tiers)
			at[k] = t
			p.Tiers = append(p.Tiers, tierTotals{Tier: k, Label: k, Meaning: "A tier this page does not know: read the message."})
		}
		if f.Status == "remediation" {
			p.Tiers[t].Remediation++
		} else {
			p.Tiers[t].DLQ++
		}
	}
	p.All.Name = "all"
}

var funcs = template.FuncMap{
	"bytes": humanBytes,
	"pct":   func(f float64) string { return fmt.Sprintf("%.1f %%", 100*f) },
	"secs":  func(s float64) string { return time.Duration(s * float64(time.Second)).Round(time.Second).String() },
	"utc":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") },
	"base":  path.Base,
	"tier": func(t string) string {
		for _, x := range tiers {
			if x.Tier == t {
				return x.Label
			}
		}
		return t
	},
}

// humanBytes formats a byte count with binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
