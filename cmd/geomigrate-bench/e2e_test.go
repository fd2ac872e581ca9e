package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/benchpair"
)

// e2eSide is one run's requests and bytes as scripts/bench-e2e/bench_e2e.py
// side writes them.
type e2eSide struct {
	Files    int            `json:"files"`
	Requests map[string]int `json:"s3_requests"`
	DynamoDB map[string]int `json:"dynamodb_requests"`
	Bytes    map[string]int `json:"bytes"`
}

// TestEndToEndFiguresInTheReport runs the end-to-end benchmark's summarize
// (the producer of make bench's e2e.json) on made-up pairs and reads its
// report as make bench and benchdoc do: the requests and bytes figures are
// complete with their goals judged when both sides were counted, and say
// "not measured" when the stand-in's access log or the listings are missing.
func TestEndToEndFiguresInTheReport(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import boto3").Run(); err != nil {
		t.Skipf("%s lacks boto3 (make bench-e2e installs python3-boto3): %v", py, err)
	}
	script, err := filepath.Abs("../../scripts/bench-e2e/bench_e2e.py")
	if err != nil {
		t.Fatal(err)
	}
	gm := func(puts int) e2eSide {
		return e2eSide{Files: 10, Requests: map[string]int{"HeadObject": 20, "GetObject": 10, "PutObject": puts, "UploadPartCopy": 10, "CreateBucket": 1},
			DynamoDB: map[string]int{"GetItem": 45, "PutItem": 40, "Query": 128},
			Bytes:    map[string]int{"rasters": 6_000_000, "all": 6_050_000, "objects": 22}}
	}
	seed := e2eSide{Files: 10, Requests: map[string]int{"HeadObject": 20, "GetObject": 10, "PutObject": 10, "CreateBucket": 1}, DynamoDB: map[string]int{},
		Bytes: map[string]int{"rasters": 7_500_000, "all": 7_500_000, "objects": 10}}
	unlogged := func(s e2eSide) e2eSide { s.Requests, s.DynamoDB = nil, nil; return s }
	for _, tc := range []struct {
		name  string
		sides [][2]*e2eSide // nil: the pair's line has no side files
		// requestsMet: the verdict of ≤ 10 requests per file; "" when not measured.
		requestsMet, bytesMet string
	}{
		{"both counted, goal met", [][2]*e2eSide{{ptr(gm(20)), &seed}, {ptr(gm(21)), &seed}}, "met", "met"},
		{"both counted, goal missed", [][2]*e2eSide{{ptr(gm(60)), &seed}, {ptr(gm(61)), &seed}}, "missed", "met"},
		{"no access log", [][2]*e2eSide{{ptr(unlogged(gm(20))), ptr(unlogged(seed))}, {ptr(unlogged(gm(20))), ptr(unlogged(seed))}}, "", "met"},
		{"pairs without sides", [][2]*e2eSide{{nil, nil}, {nil, nil}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var pairs strings.Builder
			for i, s := range tc.sides {
				fmt.Fprintf(&pairs, "10 20 5 8 1 1 0.5 0")
				for j, side := range s {
					if side == nil {
						continue
					}
					p := filepath.Join(dir, fmt.Sprintf("side-%d-%d.json", i, j))
					b, _ := json.Marshal(side)
					if err := os.WriteFile(p, b, 0o644); err != nil {
						t.Fatal(err)
					}
					pairs.WriteString(" " + p)
				}
				pairs.WriteString("\n")
			}
			pairsPath, out := filepath.Join(dir, "pairs"), filepath.Join(dir, "e2e.json")
			if err := os.WriteFile(pairsPath, []byte(pairs.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "load.json"), []byte(`{"1m": 1.5, "5m": 1.2, "15m": 1.0}`), 0o644); err != nil {
				t.Fatal(err)
			}
			stdout, err := exec.Command(py, "-B", script, "summarize", pairsPath, "e2e-10-small", filepath.Join(dir, "load.json"), out).CombinedOutput()
			if err != nil {
				t.Fatalf("summarize: %v\n%s", err, stdout)
			}
			exps, figs, err := readFigures(out)
			if err != nil {
				t.Fatal(err)
			}
			// The host's load average is geomigrate-bench's, around the whole make bench.
			load := &benchpair.LoadAvg{One: 1.5, Five: 1.2, Fifteen: 1}
			r := benchpair.Report{Host: benchpair.Host{LoadStart: load, LoadEnd: load}, Experiments: exps, Figures: figs}
			if err := r.Check(); err != nil {
				t.Fatalf("report refused: %v\n%s", err, stdout)
			}
			var text bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			doc, err := r.Generated()
			if err != nil {
				t.Fatal(err)
			}
			// The DynamoDB figure has no goal: "unjudged" when measured.
			ddbWant := ""
			if tc.requestsMet != "" {
				ddbWant = "unjudged"
			}
			for key, want := range map[string]string{"e2e-10-small-s3-requests": tc.requestsMet, "e2e-10-small-output-bytes": tc.bytesMet, "e2e-10-small-dynamodb-requests": ddbWant} {
				f := figureByKey(t, figs, key)
				v, ok, err := f.Verdict()
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				got := ""
				switch {
				case !ok && f.Error == "" && len(f.Values) > 0:
					got = "unjudged"
				case ok && v.Met:
					got = "met"
				case ok:
					got = "missed"
				}
				if got != want {
					t.Errorf("%s: verdict %q, want %q (%+v)", key, got, want, f)
				}
				notMeasured := f.Title + ": not measured"
				if printed := strings.Contains(text.String(), notMeasured) && bytes.Contains(doc, []byte(f.Title)); printed != (want == "") {
					t.Errorf("%s: %q printed %v, want %v:\n%s", key, notMeasured, printed, want == "", text.String())
				}
			}
			if tc.requestsMet != "" {
				// 61 and 62 requests over 10 files on geomigrate's side, 41 on the seed's.
				f := figureByKey(t, figs, "e2e-10-small-s3-requests")
				if m := f.Value().Median; tc.requestsMet == "met" && math.Abs(m-6.15) > 1e-9 {
					t.Errorf("requests per file: median %v, want 6.15", m)
				}
				if m := benchpair.Summarize(f.Anchor.Values).Median; math.Abs(m-4.1) > 1e-9 {
					t.Errorf("the seed's requests per file: median %v, want 4.1", m)
				}
				if !strings.Contains(f.Note, "UploadPartCopy 1.00") {
					t.Errorf("note lacks the operations: %q", f.Note)
				}
				// 213 DynamoDB requests over 10 files.
				if d := figureByKey(t, figs, "e2e-10-small-dynamodb-requests"); math.Abs(d.Value().Median-21.3) > 1e-9 || !strings.Contains(d.Note, "Query 12.80") {
					t.Errorf("DynamoDB requests per file: %+v, want 21.3 with Query 12.80 in the note", d)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func figureByKey(t *testing.T, figs []benchpair.Figure, key string) benchpair.Figure {
	t.Helper()
	for _, f := range figs {
		if f.Key == key {
			return f
		}
	}
	t.Fatalf("no figure %s among %d", key, len(figs))
	return benchpair.Figure{}
}
