package htmlreport

import "html/template"

// pageTemplate is the whole page. Everything it shows is in it: inline
// CSS, images as data: URIs, no script; the Content-Security-Policy lets
// the browser load nothing else.
var pageTemplate = template.Must(template.New("page").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>geomigrate run report{{with .Source}} — {{base .}}{{end}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2330; margin: 0 auto; max-width: 1180px; padding: 0 20px 40px; }
h1 { font-size: 22px; margin: 24px 0 4px; }
h2 { font-size: 17px; margin: 30px 0 8px; border-bottom: 1px solid #d5dae3; padding-bottom: 4px; }
.meta { color: #566074; margin: 0 0 8px; }
.meta span { margin-right: 16px; white-space: nowrap; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; font-size: 13px; }
th, td { border: 1px solid #d5dae3; padding: 3px 6px; vertical-align: top; text-align: left; }
td.file { min-width: 11em; }
th { background: #eef1f6; font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.n { white-space: nowrap; }
tfoot td { font-weight: 600; background: #f6f8fb; }
.zero { color: #a3abba; }
.bad { color: #a4161a; font-weight: 600; }
.status { white-space: nowrap; font-weight: 600; }
.remediation { color: #9a5b00; } .dlq, .failed { color: #a4161a; }
.hint { background: #fff8e5; }
code { font: 12px/1.4 ui-monospace, "SFMono-Regular", Menlo, monospace; overflow-wrap: anywhere; }
td.code code { overflow-wrap: normal; white-space: nowrap; }
ul.warn li { margin: 2px 0; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(280px, 1fr)); gap: 14px; }
figure { margin: 0; border: 1px solid #d5dae3; border-radius: 6px; padding: 10px; background: #fff; }
figure img { display: block; max-width: 100%; height: auto; margin: 0 auto 6px; image-rendering: pixelated;
  background: repeating-conic-gradient(#eceff3 0% 25%, #fff 0% 50%) 50% / 16px 16px; }
figure .none { height: 120px; display: flex; align-items: center; justify-content: center; text-align: center; color: #566074; background: #f6f8fb; margin-bottom: 6px; padding: 6px; }
figcaption { font-size: 12px; color: #566074; }
figcaption b { color: #1d2330; word-break: break-all; }
nav.pages { margin: 14px 0; } nav.pages a, nav.pages b { margin: 0 3px; }
footer { margin-top: 30px; color: #8a93a5; font-size: 12px; }
</style>
</head>
<body>
<h1>geomigrate run report</h1>
<p class="meta">
{{with .Source}}<span>report <code>{{.}}</code></span>{{end}}
<span>started {{utc .Started}}</span>
<span>took {{.Duration}}</span>
<span>{{.Backend}} backend → <code>{{.Dest}}</code></span>
<span>{{.Workers}} worker(s)</span>
</p>

{{template "nav" .}}
{{if eq .Page 1}}
<h2 id="totals-per-dataset">Totals per dataset</h2>
<div class="scroll"><table id="totals">
<thead>
<tr><th rowspan="2">dataset</th><th class="n" rowspan="2">files</th><th class="n" rowspan="2">completed</th><th class="n" rowspan="2">skipped</th><th class="n" rowspan="2">ignored</th>
<th colspan="4">routed (remediation + DLQ) by tier</th><th class="n" rowspan="2">remediation</th><th class="n" rowspan="2">DLQ</th><th class="n" rowspan="2">failed</th><th class="n" rowspan="2">not started</th><th class="n" rowspan="2">warned</th><th class="n" rowspan="2">bytes in</th><th class="n" rowspan="2">bytes out</th></tr>
<tr><th class="n">data-specific</th><th class="n">transient</th><th class="n">systemic</th><th class="n">unknown</th></tr>
</thead>
<tbody>
{{range .Datasets}}{{template "totalsRow" .}}{{end}}
</tbody>
<tfoot>{{template "totalsRow" .All}}</tfoot>
</table></div>

<h2 id="tiers">Routed files per tier</h2>
<table id="tier-totals">
<thead><tr><th>tier</th><th class="n">remediation</th><th class="n">DLQ</th><th>what to do</th></tr></thead>
<tbody>
{{range .Tiers}}<tr><td>{{.Label}}</td>{{template "count" .Remediation}}{{template "count" .DLQ}}<td>{{.Meaning}}</td></tr>
{{end}}</tbody>
</table>

{{with .Signals}}
<h2 id="fallback">Fallback rate: {{.Routed}} of {{.Jobs}} jobs that ended were routed ({{pct .Rate}})</h2>
<table id="fallback-tiers">
<thead><tr><th>tier</th><th class="n">routed</th><th class="n">rate</th><th class="n">alarm above</th><th></th></tr></thead>
<tbody>
{{range .Tiers}}<tr><td>{{tier .Tier}}</td>{{template "count" .Routed}}<td class="n">{{pct .Rate}}</td><td class="n">{{if .Threshold}}{{pct .Threshold}}{{else}}-{{end}}</td><td>{{if .Breach}}<strong>above threshold</strong>{{end}}</td></tr>
{{end}}</tbody>
</table>
<table id="fallback-groups">
<thead><tr><th>dataset type or format</th><th class="n">jobs</th><th class="n">routed</th><th class="n">rate</th></tr></thead>
<tbody>
{{range .DatasetTypes}}<tr><td>{{.Name}}</td>{{template "count" .Jobs}}{{template "count" .Routed}}<td class="n">{{pct .Rate}}</td></tr>
{{end}}{{range .Formats}}<tr><td>.{{.Name}}</td>{{template "count" .Jobs}}{{template "count" .Routed}}<td class="n">{{pct .Rate}}</td></tr>
{{end}}</tbody>
</table>
{{with .Recovery}}<p id="recovery">Recovery latency (routed → completed after replay): {{.Count}} job(s), median {{secs .MedianSeconds}}, max {{secs .MaxSeconds}}{{range .Tiers}}; {{tier .Tier}} {{.Count}} (median {{secs .MedianSeconds}}){{end}}.</p>{{end}}
{{with .DeadLetter}}<p id="dead-letter">Dead-letter queue after the run: {{if .Depth}}{{.Depth}} message(s), the oldest {{secs .OldestAgeSeconds}} old{{else}}empty{{end}}.</p>{{end}}
{{end}}

<h2 id="attention">Needs attention{{with .Attention}} ({{len .}}){{end}}</h2>
{{if .Attention}}
<table id="attention-files">
<thead><tr><th>file</th><th>status</th><th>tier</th><th>error</th><th>message</th><th>remediation hint</th></tr></thead>
<tbody>
{{range .Attention}}<tr><td class="file"><code>{{.Dataset}}/{{.Key}}</code></td><td class="status {{.Status}}">{{.Status}}</td><td>{{tier .Tier}}</td><td class="code"><code>{{if .Code}}{{.Code}}{{else}}{{.Error}}{{end}}</code></td><td>{{.Message}}</td><td class="hint">{{.Hint}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p>Nothing: no file was routed to a queue or failed.</p>{{end}}

{{if .Warned}}
<h2 id="warnings">Conversion warnings ({{len .Warned}} file(s); outputs were written)</h2>
<table id="warning-files">
<thead><tr><th>file</th><th>warnings</th></tr></thead>
<tbody>
{{range .Warned}}<tr><td class="file"><code>{{.Dataset}}/{{.Key}}</code></td><td><ul class="warn">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul></td></tr>
{{end}}</tbody>
</table>
{{end}}

{{end}}
<h2 id="outputs">Outputs{{if .OutputCount}} ({{if .Nav}}{{.First}}–{{.Last}} of {{end}}{{.OutputCount}}){{end}}</h2>
{{if .Outputs}}
<div class="grid">
{{range .Outputs}}<figure class="output">
{{if .Src}}<img {{.Src}} alt="{{.Kind}} of {{.Key}}">{{else}}<div class="none">no {{.Kind}}: {{.Why}}</div>{{end}}
<figcaption><b>{{.Key}}</b><br>from {{.Dataset}}/{{.Source}}<br>{{.Kind}}{{with .Caption}}: {{.}}{{end}}{{if .Item}}<br><a class="stac" href="{{.Item}}">STAC item</a>{{else if .ItemKey}}<br>STAC item <code>{{.ItemKey}}</code>{{end}}</figcaption>
</figure>
{{end}}</div>
{{else}}<p>No output was written by this run (files already migrated are skipped; their outputs are from earlier runs).</p>{{end}}

{{template "nav" .}}
{{if and .Others (eq .Page 1)}}
<h2 id="others">Skipped, ignored, not started</h2>
<table id="other-files">
<thead><tr><th>file</th><th>status</th><th>reason</th></tr></thead>
<tbody>
{{range .Others}}<tr><td class="file"><code>{{.Dataset}}/{{.Key}}</code></td><td class="status">{{.Status}}</td><td>{{.Reason}}</td></tr>
{{end}}</tbody>
</table>
{{end}}

<footer>{{.Generator}} · report schema version {{.SchemaVersion}} (docs/report-schema.json) · finished {{utc .Finished}}</footer>
</body>
</html>
{{define "nav"}}{{if .Nav}}<nav class="pages">page {{.Page}} of {{len .Nav}}, outputs {{.First}}–{{.Last}} of {{.OutputCount}}:{{range .Nav}} {{if .Current}}<b>{{.N}}</b>{{else}}<a href="{{.Href}}">{{.N}}</a>{{end}}{{end}}</nav>{{end}}{{end}}
{{define "count"}}<td class="n{{if eq . 0}} zero{{end}}">{{.}}</td>{{end}}
{{define "totalsRow"}}<tr><td>{{.Name}}</td>{{template "count" .Files}}{{template "count" .Completed}}{{template "count" .Skipped}}{{template "count" .Ignored}}{{template "count" (index .Routed "data_specific")}}{{template "count" (index .Routed "transient")}}{{template "count" (index .Routed "systemic")}}{{template "count" (index .Routed "unknown")}}{{template "count" .Remediation}}{{template "count" .DLQ}}{{template "count" .Failed}}{{template "count" .Pending}}{{template "count" .Warned}}<td class="n">{{bytes .BytesIn}}</td><td class="n">{{bytes .BytesOut}}</td></tr>
{{end}}`))
