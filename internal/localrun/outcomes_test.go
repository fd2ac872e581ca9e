package localrun

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/recipe"
)

// A report written from spooled outcomes is byte for byte the report
// written from the same outcomes in memory, its totals and summary too,
// and the spool gives the outcomes back whole (StagingPrefix, kept out of
// the report, included).
func TestSpooledReportMatchesInMemory(t *testing.T) {
	tests := []struct {
		name     string
		outcomes []Outcome
	}{
		{"none", nil},
		{"one", []Outcome{{Bucket: "src", Key: "a.tif", Status: StatusCompleted, JobID: "j1", Outputs: []string{"a.tif"}, BytesIn: 10, BytesOut: 20, Duration: 3 * time.Millisecond, StagingPrefix: "_staging/x/"}}},
		{"mixed", []Outcome{
			{Bucket: "src", Key: "a.tif", Status: StatusCompleted, Warnings: []string{"w <&>"}, Fidelity: []*recipe.Fidelity{{}}},
			{Bucket: "src", Key: "b\nc.shp", Status: StatusRemediation, Code: "MissingCRS", Message: "no CRS"},
			{Bucket: "src", Key: "d.txt", Status: StatusIgnored, Reason: "not geospatial"},
			{Bucket: "src", Key: "e.tif", Status: StatusNotStarted, Reason: "stopped"},
			{Bucket: "src", Key: "f.tif", Status: StatusDeadLetter, Error: "SystemicError", Hint: "look"},
		}},
	}
	// A backfill's spool is read in the order outcomes ended; a migrate's
	// (ordered) in input order, here put last to first as workers may.
	spools := []struct {
		name string
		fill func([]Outcome) (*Outcomes, error)
	}{
		{"backfill", func(outs []Outcome) (*Outcomes, error) {
			spool, err := newOutcomes()
			for _, o := range outs {
				spool.add(o)
			}
			return spool, err
		}},
		{"migrate", func(outs []Outcome) (*Outcomes, error) {
			spool, err := NewOrderedOutcomes(len(outs))
			for i := len(outs) - 1; i >= 0; i-- {
				spool.Put(i, outs[i])
			}
			return spool, err
		}},
	}
	for _, tt := range tests {
		for _, kind := range spools {
			t.Run(tt.name+"/"+kind.name, func(t *testing.T) {
				spool, err := kind.fill(tt.outcomes)
				if err != nil {
					t.Fatal(err)
				}
				defer spool.Close()
				started := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
				mem := NewReport(started, append([]Outcome(nil), tt.outcomes...))
				spooled := NewSpooledReport(started, spool)
				spooled.Finished, spooled.Seconds = mem.Finished, mem.Seconds
				if spooled.Totals != mem.Totals {
					t.Errorf("totals %+v, want %+v", spooled.Totals, mem.Totals)
				}
				dir := t.TempDir()
				if err := mem.Write(filepath.Join(dir, "mem.json")); err != nil {
					t.Fatal(err)
				}
				if err := spooled.Write(filepath.Join(dir, "spooled.json")); err != nil {
					t.Fatal(err)
				}
				want, _ := os.ReadFile(filepath.Join(dir, "mem.json"))
				got, _ := os.ReadFile(filepath.Join(dir, "spooled.json"))
				if !bytes.Equal(got, want) {
					t.Errorf("spooled report:\n%s\nwant\n%s", got, want)
				}
				var a, b strings.Builder
				mem.PrintSummary(&a, 0)
				spooled.PrintSummary(&b, 0)
				if a.String() != b.String() {
					t.Errorf("summary:\n%s\nwant\n%s", b.String(), a.String())
				}
				back, err := spool.All()
				if err != nil {
					t.Fatal(err)
				}
				if len(back) != len(tt.outcomes) {
					t.Fatalf("%d outcomes read back, want %d", len(back), len(tt.outcomes))
				}
				for i, o := range back {
					if o.StagingPrefix != tt.outcomes[i].StagingPrefix || o.Duration != tt.outcomes[i].Duration || o.Key != tt.outcomes[i].Key {
						t.Errorf("outcome %d read back as %+v, want %+v", i, o, tt.outcomes[i])
					}
				}
			})
		}
	}
}

// An ordered spool refuses to be read with an input missing, and an input
// put twice: the report would silently drop or repeat a file.
func TestOrderedOutcomesRefuseGapsAndRepeats(t *testing.T) {
	tests := []struct {
		name string
		puts []int
		ok   bool
	}{
		{"all", []int{2, 0, 1}, true},
		{"gap", []int{0, 2}, false},
		{"twice", []int{0, 1, 1, 2}, false},
		{"out of range", []int{0, 1, 2, 3}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spool, err := NewOrderedOutcomes(3)
			if err != nil {
				t.Fatal(err)
			}
			defer spool.Close()
			for _, i := range tt.puts {
				spool.Put(i, Outcome{Bucket: "b", Key: fmt.Sprintf("k%d", i), Status: StatusCompleted})
			}
			var keys []string
			err = spool.Each(func(o Outcome) error { keys = append(keys, o.Key); return nil })
			if tt.ok != (err == nil) {
				t.Fatalf("Each: %v, want ok %v", err, tt.ok)
			}
			if tt.ok && strings.Join(keys, ",") != "k0,k1,k2" {
				t.Errorf("read back %v, want k0,k1,k2", keys)
			}
		})
	}
}
