package htmlreport

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/geomigrate/geomigrate/internal/signals"
)

// fakeRenderer draws a 2×1 PNG and remembers what it was asked for;
// paths in fail fail.
type fakeRenderer struct {
	thumbnails, extents []string
	fail                map[string]bool
}

func tinyPNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 2, 1))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var pngBytes []byte

// webpHeader is how a WebP file starts (a RIFF container of form WEBP):
// all imageType reads.
var webpHeader = []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00")

func (f *fakeRenderer) draw(list *[]string, path, what string) ([]byte, string, error) {
	*list = append(*list, path)
	if f.fail[path] {
		return nil, "", errors.New("cannot open " + path)
	}
	switch {
	case strings.HasSuffix(path, ".webp.tif"):
		return webpHeader, what + " of " + path, nil
	case strings.HasSuffix(path, ".garbage.tif"):
		return []byte("GIF89a"), what + " of " + path, nil
	}
	return pngBytes, what + " of " + path, nil
}

func (f *fakeRenderer) Thumbnail(path string, px int) ([]byte, string, error) {
	return f.draw(&f.thumbnails, path, "thumb")
}

func (f *fakeRenderer) ExtentMap(path string, px int) ([]byte, string, error) {
	return f.draw(&f.extents, path, "extent")
}

func sampleRun() Run {
	return Run{
		Source: "/tmp/run.json", SchemaVersion: 1, Backend: "local", Dest: "/out", Workers: 2, Generator: "geomigrate test",
		Started: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Finished: time.Date(2026, 11, 30, 12, 0, 2, 0, time.UTC), Seconds: 2,
		Files: []File{
			{Dataset: "a", Key: "dem.tif", Status: "completed", BytesIn: 2048, BytesOut: 1024, Outputs: []Output{{Key: "dem.tif", Path: "/out/dem.tif"}}},
			{Dataset: "a", Key: "city.gpkg", Status: "completed", Warnings: []string{"promoted to multi"},
				Outputs: []Output{{Key: "city/parks.parquet", Path: "/out/city/parks.parquet"}, {Key: "city/roads.fgb", Path: "/out/city/roads.fgb"}}},
			{Dataset: "a", Key: "no_crs.tif", Status: "remediation", Tier: "data_specific", Error: "DataError", Code: "MissingCRS", Message: "no CRS", Hint: "Assign one with gdal_edit.py -a_srs."},
			{Dataset: "b", Key: "<script>alert(1)</script>.tif", Status: "dlq", Tier: "transient", Error: "TransientError", Message: "SlowDown", Hint: "Replay later."},
			{Dataset: "b", Key: "README.txt", Status: "ignored", Reason: "not geospatial"},
			{Dataset: "b", Key: "broken.tif", Status: "completed", Outputs: []Output{{Key: "broken.tif", Path: "/out/broken.tif"}}},
			{Dataset: "b", Key: "remote.tif", Status: "completed", Outputs: []Output{{Key: "remote.tif"}}},
		},
		Signals: func() *signals.Signals {
			s := signals.Compute([]signals.End{{Key: "dem.tif"}, {Key: "city.gpkg"}, {Key: "no_crs.tif", Tier: "data_specific"},
				{Key: "x.tif", Tier: "transient"}, {Key: "broken.tif"}, {Key: "remote.tif"}},
				[]signals.Latency{{Tier: "transient", Duration: 90 * time.Second}}, signals.Thresholds{})
			s.DeadLetter = &signals.QueueAge{Depth: 1, OldestAgeSeconds: 7200}
			return &s
		}(),
	}
}

func TestWrite(t *testing.T) {
	pngBytes = tinyPNG(t)
	r := &fakeRenderer{fail: map[string]bool{"/out/broken.tif": true}}
	var buf bytes.Buffer
	res, err := Write(&buf, sampleRun(), r)
	if err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}

	if strings.Join(r.thumbnails, ",") != "/out/dem.tif,/out/broken.tif" || strings.Join(r.extents, ",") != "/out/city/parks.parquet,/out/city/roads.fgb" {
		t.Errorf("thumbnails %v, extent maps %v", r.thumbnails, r.extents)
	}
	if res.Images != 3 || len(res.Missing) != 2 {
		t.Errorf("result %+v, want 3 images and 2 missing (a failed render, an output not on this machine)", res)
	}

	// Self-contained: nothing to fetch, nothing to run.
	var imgs []string
	walk(doc, func(n *html.Node) {
		switch n.Data {
		case "script", "link", "iframe", "object", "embed":
			t.Errorf("<%s> in the page", n.Data)
		}
		for _, a := range n.Attr {
			if (a.Key == "src" || a.Key == "href") && !strings.HasPrefix(a.Val, "data:") && !strings.HasPrefix(a.Val, "#") {
				t.Errorf("<%s %s=%q>: a URL outside the page", n.Data, a.Key, a.Val)
			}
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("<%s %s>: an event handler", n.Data, a.Key)
			}
		}
		if n.Data == "img" {
			imgs = append(imgs, attr(n, "src"))
		}
	})
	if len(imgs) != 3 {
		t.Fatalf("%d <img>, want 3", len(imgs))
	}
	for _, src := range imgs {
		b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(src, "data:image/png;base64,"))
		if err != nil || !bytes.Equal(b, pngBytes) {
			t.Errorf("img src %.60q… is not the renderer's PNG (%v)", src, err)
		}
	}

	// Totals per dataset: a has 2 completed and 1 data-specific
	// remediation; b 1 transient DLQ, 1 ignored, 2 completed.
	rows := tableRows(t, doc, "totals")
	want := map[string]string{
		"a":   "a|3|2|0|0|1|0|0|0|1|0|0|0|1|2.0 KiB|1.0 KiB",
		"b":   "b|4|2|0|1|0|1|0|0|0|1|0|0|0|0 B|0 B",
		"all": "all|7|4|0|1|1|1|0|0|1|1|0|0|1|2.0 KiB|1.0 KiB",
	}
	for _, row := range rows[2:] { // two header rows
		if w, ok := want[row[0]]; !ok || strings.Join(row, "|") != w {
			t.Errorf("totals row %q, want %q", strings.Join(row, "|"), w)
		}
		delete(want, row[0])
	}
	if len(want) != 0 {
		t.Errorf("totals rows missing: %v", want)
	}
	tierRows := tableRows(t, doc, "tier-totals")
	if got := strings.Join(tierRows[1][:3], "|") + " " + strings.Join(tierRows[2][:3], "|"); got != "data-specific|1|0 transient|0|1" {
		t.Errorf("tier rows %q", got)
	}
	// Fallback rates: 1 of 6 data-specific (16.7 %, above 5 %), 1 of 6
	// transient (above 15 %), by dataset type and format.
	fallback := tableRows(t, doc, "fallback-tiers")
	if got := strings.Join(fallback[1], "|") + " " + strings.Join(fallback[2], "|") + " " + strings.Join(fallback[3], "|"); got !=
		"data-specific|1|16.7 %|5.0 %|above threshold transient|1|16.7 %|15.0 %|above threshold systemic|0|0.0 %|-|" {
		t.Errorf("fallback tier rows %q", got)
	}
	groups := tableRows(t, doc, "fallback-groups")
	if got := len(groups); got != 1+2+2 || strings.Join(groups[1], "|") != "raster|5|2|40.0 %" || strings.Join(groups[4], "|") != ".tif|5|2|40.0 %" {
		t.Errorf("fallback group rows %q", groups)
	}
	for _, s := range []string{"Fallback rate: 2 of 6 jobs that ended were routed (33.3 %)", "1 job(s), median 1m30s", "1 message(s), the oldest 2h0m0s old"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	attention := tableRows(t, doc, "attention-files")
	if len(attention) != 3 || attention[1][5] != "Assign one with gdal_edit.py -a_srs." || attention[2][0] != "b/<script>alert(1)</script>.tif" {
		t.Errorf("attention rows %q", attention)
	}
	for _, s := range []string{"promoted to multi", "not geospatial", "cannot open /out/broken.tif", "not on this machine", "extent of /out/city/parks.parquet", "vector extent map", "raster thumbnail"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}

func TestWriteEmptyRun(t *testing.T) {
	var buf bytes.Buffer
	res, err := Write(&buf, Run{SchemaVersion: 1}, &fakeRenderer{})
	if err != nil || res.Images != 0 {
		t.Fatalf("%v %+v", err, res)
	}
	if !strings.Contains(buf.String(), "No output was written") {
		t.Error("empty run page does not say so")
	}
}

func walk(n *html.Node, fn func(*html.Node)) {
	if n.Type == html.ElementNode {
		fn(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(n)
	return strings.TrimSpace(b.String())
}

// tableRows is the text of the cells of the table with the id, row by row.
func tableRows(t *testing.T, doc *html.Node, id string) [][]string {
	t.Helper()
	var rows [][]string
	found := false
	walk(doc, func(n *html.Node) {
		if n.Data != "table" || attr(n, "id") != id {
			return
		}
		found = true
		walk(n, func(tr *html.Node) {
			if tr.Data != "tr" {
				return
			}
			var row []string
			for c := tr.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
					row = append(row, text(c))
				}
			}
			rows = append(rows, row)
		})
	})
	if !found {
		t.Fatalf("no table #%s", id)
	}
	return rows
}

// TestRenderPages: a run of many outputs is split into pages of PerPage
// quick-looks, each linking every other, the totals on the first only; a
// drawing that fails is in Failed, a remote output only in Missing; each
// output links its STAC item.
func TestRenderPages(t *testing.T) {
	pngBytes = tinyPNG(t)
	run := sampleRun()
	for i := range 117 {
		k := fmt.Sprintf("many/%03d.tif", i)
		run.Files = append(run.Files, File{Dataset: "c", Key: k, Status: "completed",
			Outputs: []Output{{Key: k, Path: "/out/" + k, Item: "../out/" + k + ".stac.json", ItemKey: k + ".stac.json"}}})
	}
	r := &fakeRenderer{fail: map[string]bool{"/out/broken.tif": true}}
	pages, res, err := Render(run, r, Paging{PerPage: 50, Href: func(n int) string { return fmt.Sprintf("p%d.html", n) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 3 || res.Pages != 3 {
		t.Fatalf("%d pages (%d), want 3 for 122 outputs", len(pages), res.Pages)
	}
	if len(res.Failed) != 1 || !strings.HasPrefix(res.Failed[0], "broken.tif:") || len(res.Missing) != 2 {
		t.Errorf("failed %v, missing %v", res.Failed, res.Missing)
	}
	figures := 0
	for i, p := range pages {
		s := string(p)
		figures += strings.Count(s, `<figure class="output">`)
		if strings.Contains(s, `id="totals"`) != (i == 0) {
			t.Errorf("page %d: totals table present %v", i+1, !(i == 0))
		}
		for n := 1; n <= 3; n++ {
			if n != i+1 && !strings.Contains(s, fmt.Sprintf(`href="p%d.html"`, n)) {
				t.Errorf("page %d does not link page %d", i+1, n)
			}
		}
	}
	if figures != 122 {
		t.Errorf("%d figures over the pages, want 122", figures)
	}
	if !strings.Contains(string(pages[2]), `<a class="stac" href="../out/many/116.tif.stac.json">STAC item</a>`) {
		t.Error("the last output does not link its STAC item")
	}
	one, _, err := Render(run, r, Paging{})
	if err != nil || len(one) != 1 || strings.Contains(string(one[0]), `class="pages"`) {
		t.Errorf("without paging: %d pages, %v", len(one), err)
	}
}

// TestQuickLookTypes: a WebP quick-look is embedded as image/webp, a PNG
// as image/png; anything else is a quick-look that failed.
func TestQuickLookTypes(t *testing.T) {
	pngBytes = tinyPNG(t)
	run := Run{SchemaVersion: 1, Files: []File{{Dataset: "a", Key: "x", Status: "completed", Outputs: []Output{
		{Key: "a.tif", Path: "/out/a.tif"}, {Key: "b.webp.tif", Path: "/out/b.webp.tif"}, {Key: "c.garbage.tif", Path: "/out/c.garbage.tif"},
	}}}}
	var buf bytes.Buffer
	res, err := Write(&buf, run, &fakeRenderer{})
	if err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	wantPNG := `src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(pngBytes) + `"`
	wantWebP := `src="data:image/webp;base64,` + base64.StdEncoding.EncodeToString(webpHeader) + `"`
	if !strings.Contains(page, wantPNG) || !strings.Contains(page, wantWebP) {
		t.Errorf("page lacks the PNG or the WebP data: URI")
	}
	if res.Images != 2 || len(res.Failed) != 1 || !strings.Contains(res.Failed[0], "neither PNG nor WebP") {
		t.Errorf("result %+v, want 2 images and the GIF failed", res)
	}
}
