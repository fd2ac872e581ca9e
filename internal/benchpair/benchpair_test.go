package benchpair

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		xs     []float64
		want   Summary
		spread float64
	}{
		{"none", nil, Summary{}, 0},
		{"one", []float64{7}, Summary{N: 1, Median: 7, Min: 7, Max: 7}, 0},
		{"odd, unsorted", []float64{3, 1, 2}, Summary{N: 3, Median: 2, Min: 1, Max: 3}, 1},
		{"even: mean of the middle two", []float64{4, 1, 3, 2}, Summary{N: 4, Median: 2.5, Min: 1, Max: 4}, 1.2},
		{"an outlier moves the range, not the median", []float64{1.1, 1.0, 9.0, 1.2, 1.05}, Summary{N: 5, Median: 1.1, Min: 1.0, Max: 9.0}, 8.0 / 1.1},
		{"negative median", []float64{-2, -4}, Summary{N: 2, Median: -3, Min: -4, Max: -2}, 2.0 / 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.xs)
			got := Summarize(tc.xs)
			if got != tc.want {
				t.Fatalf("Summarize(%v) = %+v, want %+v", tc.xs, got, tc.want)
			}
			if !slices.Equal(in, tc.xs) {
				t.Fatalf("Summarize reordered its input: %v", tc.xs)
			}
			if s := got.Spread(); math.Abs(s-tc.spread) > 1e-12 {
				t.Fatalf("Spread = %v, want %v", s, tc.spread)
			}
		})
	}
}

func TestRatios(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a, b    []float64
		want    []float64
		wantErr string
	}{
		{"pair by pair", []float64{7.35, 7.0, 8.0}, []float64{6.43, 7.0, 4.0}, []float64{7.35 / 6.43, 1, 2}, ""},
		{"not the ratio of the medians", []float64{1, 10}, []float64{2, 4}, []float64{0.5, 2.5}, ""},
		{"unequal lengths", []float64{1, 2}, []float64{1}, nil, "2 samples against 1"},
		{"zero anchor", []float64{1}, []float64{0}, nil, "anchor sample is 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PairRatios(tc.a, tc.b)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("PairRatios = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	got, err := ConstantRatios([]float64{59.4, 20.9}, 20.9)
	if err != nil || !slices.Equal(got, []float64{59.4 / 20.9, 1}) {
		t.Fatalf("ConstantRatios = %v, %v", got, err)
	}
	if _, err := ConstantRatios([]float64{1}, 0); err == nil {
		t.Fatal("ConstantRatios over 0: no error")
	}
}

func TestGoalCheck(t *testing.T) {
	s := func(med, lo, hi float64) Summary { return Summary{N: 3, Median: med, Min: lo, Max: hi} }
	for _, tc := range []struct {
		name string
		goal Goal
		s    Summary
		want Verdict
		text string
	}{
		{"at most, met", Goal{OfRatio, AtMost, 1.05}, s(1.01, 0.98, 1.04), Verdict{Met: true}, "ratio ≤ 1.05"},
		{"at most, on the limit", Goal{OfRatio, AtMost, 1.05}, s(1.05, 1.05, 1.05), Verdict{Met: true}, "ratio ≤ 1.05"},
		{"at most, missed", Goal{OfRatio, AtMost, 1.05}, s(1.14, 1.10, 1.39), Verdict{}, "ratio ≤ 1.05"},
		{"at most, met but the range crosses", Goal{OfRatio, AtMost, 1.05}, s(1.04, 1.0, 1.2), Verdict{Met: true, Crossed: true}, "ratio ≤ 1.05"},
		{"at most, missed but the range crosses", Goal{OfValue, AtMost, 1024}, s(1100, 900, 1200), Verdict{Crossed: true}, "≤ 1024"},
		{"at least, met", Goal{OfRatio, AtLeast, 0.9}, s(1.33, 1.2, 1.4), Verdict{Met: true}, "ratio ≥ 0.9"},
		{"at least, missed", Goal{OfRatio, AtLeast, 0.9}, s(0.8, 0.7, 0.85), Verdict{}, "ratio ≥ 0.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.goal.Check(tc.s); got != tc.want {
				t.Fatalf("Check(%+v) = %+v, want %+v", tc.s, got, tc.want)
			}
			if got := tc.goal.String(); got != tc.text {
				t.Fatalf("String() = %q, want %q", got, tc.text)
			}
		})
	}
}

// recordingSide appends "<name><run>" to log and answers run+offset seconds.
func recordingSide(name string, offset int, log *[]string, failAt int) Side {
	return func(_ context.Context, run int) (Measurement, error) {
		*log = append(*log, fmt.Sprintf("%s%d", name, run))
		if run == failAt {
			return Measurement{}, errors.New("boom")
		}
		return Measurement{Wall: time.Duration(run+offset) * time.Second}, nil
	}
}

func TestAlternateOrder(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n             int
		withB         bool
		failA, failB  int
		wantLog       []string
		wantA, wantB  int
		wantErrSuffix string
	}{
		{"pairs alternate", 3, true, -1, -1, []string{"A0", "B0", "A1", "B1", "A2", "B2"}, 3, 3, ""},
		{"one pair", 1, true, -1, -1, []string{"A0", "B0"}, 1, 1, ""},
		{"no anchor command: A alone", 3, false, -1, -1, []string{"A0", "A1", "A2"}, 3, 0, ""},
		{"zero runs", 0, true, -1, -1, nil, 0, 0, ""},
		{"B fails: stops before the next A", 3, true, -1, 1, []string{"A0", "B0", "A1", "B1"}, 2, 1, "B run 2: boom"},
		{"A fails: its B never runs", 3, true, 0, -1, []string{"A0"}, 0, 0, "A run 1: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			var b Side
			if tc.withB {
				b = recordingSide("B", 100, &log, tc.failB)
			}
			as, bs, err := Alternate(context.Background(), tc.n, recordingSide("A", 0, &log, tc.failA), b)
			if tc.wantErrSuffix != "" {
				if err == nil || !strings.HasSuffix(err.Error(), tc.wantErrSuffix) {
					t.Fatalf("err = %v, want …%q", err, tc.wantErrSuffix)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(log, tc.wantLog) {
				t.Fatalf("order %v, want %v", log, tc.wantLog)
			}
			if len(as) != tc.wantA || len(bs) != tc.wantB {
				t.Fatalf("%d A and %d B measurements, want %d and %d", len(as), len(bs), tc.wantA, tc.wantB)
			}
			for i, m := range as {
				if m.Wall != time.Duration(i)*time.Second {
					t.Fatalf("A measurement %d is %v: out of run order", i, m.Wall)
				}
			}
			for i, m := range bs {
				if m.Wall != time.Duration(i+100)*time.Second {
					t.Fatalf("B measurement %d is %v: out of run order", i, m.Wall)
				}
			}
		})
	}
}

func TestAlternateStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var log []string
	a := func(_ context.Context, run int) (Measurement, error) {
		log = append(log, fmt.Sprint("A", run))
		cancel()
		return Measurement{}, nil
	}
	_, _, err := Alternate(ctx, 3, a, recordingSide("B", 0, &log, -1))
	if !errors.Is(err, context.Canceled) || !slices.Equal(log, []string{"A0"}) {
		t.Fatalf("err %v, runs %v", err, log)
	}
}

func TestFigureVerdict(t *testing.T) {
	for _, tc := range []struct {
		name       string
		f          Figure
		wantRatio  []float64
		wantOK     bool
		wantMet    bool
		wantInCell string
	}{
		{"paired anchor, ratio goal",
			Figure{Title: "COG", Unit: "s", Values: []float64{7, 8, 9}, Anchor: &Anchor{Name: "gdal_translate", Values: []float64{7, 7, 10}},
				Goal: &Goal{OfRatio, AtMost, 1.05}},
			[]float64{1, 8.0 / 7, 0.9}, true, true, "1.00 (0.900–1.14)"},
		{"published anchor",
			Figure{Title: "bytes", Unit: "MB", Values: []float64{59.4}, Anchor: &Anchor{Name: "gpq", Published: 20.9}, Goal: &Goal{OfRatio, AtMost, 1}},
			[]float64{59.4 / 20.9}, true, false, "20.9 MB (published)"},
		{"value goal, no anchor",
			Figure{Title: "RSS", Unit: "MiB", Values: []float64{3000, 3100}, Goal: &Goal{OfValue, AtMost, 1024}},
			nil, true, false, "3050 MiB (3000–3100)"},
		{"no goal", Figure{Title: "rows/s", Unit: "rows/s", Values: []float64{239000}}, nil, false, false, "239000 rows/s"},
		{"not measured", Figure{Title: "10M", Unit: "MiB", Error: "refused", Goal: &Goal{OfValue, AtMost, 1024}}, nil, false, false, "10M: not measured: refused"},
		{"equal samples: no range", Figure{Title: "bytes", Unit: "MB", Values: []float64{49.8, 49.8, 49.8}}, nil, false, false, "49.8 MB  "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.f.Ratios()
			if err != nil || !slices.EqualFunc(r, tc.wantRatio, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
				t.Fatalf("Ratios = %v, %v; want %v", r, err, tc.wantRatio)
			}
			v, ok, err := tc.f.Verdict()
			if err != nil || ok != tc.wantOK || v.Met != tc.wantMet {
				t.Fatalf("Verdict = %+v, %v, %v; want ok %v met %v", v, ok, err, tc.wantOK, tc.wantMet)
			}
			var text strings.Builder
			if err := (Report{Figures: []Figure{tc.f}}).WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), tc.wantInCell) {
				t.Fatalf("table lacks %q:\n%s", tc.wantInCell, text.String())
			}
		})
	}
}

func TestNumber(t *testing.T) {
	for x, want := range map[float64]string{239012.4: "239012", 628.4: "628", 20.94: "20.9", 1.138: "1.14", 0.8219: "0.822", 0: "0.000"} {
		if got := Number(x); got != want {
			t.Errorf("Number(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestGoBenchMetrics(t *testing.T) {
	out := []byte(`goos: linux
BenchmarkBackfillOverhead/items=100-2         	       1	3011482091 ns/op	         4.10 overhead-ms/item	         3.90 first10%-ms/item	         4.30 last10%-ms/item
BenchmarkBackfillOverhead/items=1000-2        	       1	30114820910 ns/op	         4.50 overhead-ms/item
BenchmarkBackfillOverheadOther-2              	       1	1 ns/op
BenchmarkWrite1M 	       1	4182301020 ns/op	    239104 rows/s	  50748945 bytes
BenchmarkWrite1M logs a line that is no result
PASS
`)
	for _, tc := range []struct {
		name    string
		bench   string
		want    map[string]map[string]float64
		wantErr bool
	}{
		{"sub-benchmarks by their sub-name", "BenchmarkBackfillOverhead", map[string]map[string]float64{
			"items=100":  {"ns/op": 3011482091, "overhead-ms/item": 4.10, "first10%-ms/item": 3.90, "last10%-ms/item": 4.30},
			"items=1000": {"ns/op": 30114820910, "overhead-ms/item": 4.50},
		}, false},
		{"no GOMAXPROCS suffix", "BenchmarkWrite1M", map[string]map[string]float64{"": {"ns/op": 4182301020, "rows/s": 239104, "bytes": 50748945}}, false},
		{"absent", "BenchmarkCOG", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GoBenchMetrics(out, tc.bench)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error, got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestSplice(t *testing.T) {
	doc := "# Benchmarks\n\nhand text\n\n" + BeginMarker + "\nold figures\n" + EndMarker + "\n\n## e2e (another section)\nkept\n"
	for _, tc := range []struct {
		name, doc, want, wantErr string
	}{
		{"replaces only the block", doc,
			"# Benchmarks\n\nhand text\n\n" + BeginMarker + "\n\nnew figures\n\n" + EndMarker + "\n\n## e2e (another section)\nkept\n", ""},
		{"no markers", "# Benchmarks\n", "", "lacks"},
		{"reversed", EndMarker + "\n" + BeginMarker + "\n", "", "before BEGIN"},
		{"twice", doc + BeginMarker + "\n", "", "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Splice([]byte(tc.doc), []byte("\nnew figures\n"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v\nwant %q", got, err, tc.want)
			}
			again, err := Splice(got, []byte("new figures"))
			if err != nil || string(again) != tc.want {
				t.Fatalf("splicing twice changed the document: %q", again)
			}
		})
	}
}
