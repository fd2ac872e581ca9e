package migration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// layersEngine "converts" a source into one GeoParquet per layer, each
// with a fidelity record and a warning the size of a real output's
// (about 1.8 kB of the outputs list per layer).
type layersEngine struct{ layers int }

func (e layersEngine) Version() string { return "fake-1" }

func (e layersEngine) Convert(ctx context.Context, src, workDir string, r recipe.Recipe) ([]recipe.Output, error) {
	info := recipe.Formats[recipe.FormatGeoParquet]
	var outs []recipe.Output
	for i := range e.layers {
		p := filepath.Join(workDir, fmt.Sprintf("layer_%03d.parquet", i))
		if err := os.WriteFile(p, fmt.Appendf(nil, "COG:%d", i), 0o644); err != nil {
			return nil, err
		}
		outs = append(outs, recipe.Output{
			Path: p, Format: info.Format, Extension: info.Extension, ContentType: info.ContentType, Kind: info.Kind,
			Layer: fmt.Sprintf("layer_%03d", i), Warnings: []string{strings.Repeat("w", 1500)},
			Fidelity: &recipe.Fidelity{Checks: []string{"features", "fields"}},
		})
	}
	return outs, nil
}

// TestLargeOutputsListsTravelThroughStaging: a list of a few outputs is
// returned inline; one over InlineOutputsLimit is staged beside the
// outputs and referenced, Promote reads it back, promotes every output,
// deletes it with the rest of staging, and says how many it promoted
// either way; a retry after success does not need the list again.
func TestLargeOutputsListsTravelThroughStaging(t *testing.T) {
	for _, c := range []struct {
		layers int
		byRef  bool
	}{{3, false}, {300, true}} {
		t.Run(fmt.Sprint(c.layers), func(t *testing.T) {
			f := newFixture(t)
			quiet := f.convert.log
			f.convert = NewConvert(f.cfg, f.store, f.tracker, layersEngine{c.layers}, fakeValidator, quiet)
			ctx := context.Background()
			hc, conv := f.converted(t, "e1", "dir/many.gpkg", "layers")
			if got := conv.OutputsRef != nil; got != c.byRef {
				t.Fatalf("by reference %v, want %v", got, c.byRef)
			}
			if c.byRef {
				if len(conv.Outputs) != 0 || conv.OutputsRef.Count != c.layers || !strings.HasPrefix(conv.OutputsRef.Key, hc.Job.StagingPrefix+"dir/many") {
					t.Fatalf("reply %d outputs, ref %+v", len(conv.Outputs), conv.OutputsRef)
				}
				if _, err := f.store.Head(ctx, "dest", conv.OutputsRef.Key); err != nil {
					t.Fatalf("staged list: %v", err)
				}
			} else if len(conv.Outputs) != c.layers {
				t.Fatalf("%d outputs inline, want %d", len(conv.Outputs), c.layers)
			}
			in := PromoteInput{Job: hc.Job, Converted: conv, Context: inv("e1", 0)}
			out, err := f.promote.Handle(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if out.Count != c.layers || out.Size == 0 || (len(out.Outputs) == 0) != c.byRef {
				t.Errorf("promote reply: %d outputs inline, count %d, size %d", len(out.Outputs), out.Count, out.Size)
			}
			for i := range c.layers {
				if _, err := f.store.Head(ctx, "dest", fmt.Sprintf("dir/many/layer_%03d.parquet", i)); err != nil {
					t.Fatalf("layer %d not promoted: %v", i, err)
				}
			}
			var left []string
			_ = f.store.List(ctx, "dest", hc.Job.StagingPrefix, func(o objectstore.Object) error { left = append(left, o.Key); return nil })
			if len(left) != 0 {
				t.Errorf("staging holds %v after promotion", left)
			}
			// The response was lost: the retry finds the job COMPLETED and
			// the list gone, and succeeds again with the same count.
			in.Context.Attempt = 1
			again, err := f.promote.Handle(ctx, in)
			if err != nil || again.Count != c.layers {
				t.Fatalf("retry: %+v, %v", again, err)
			}
		})
	}
}

// TestAStagedOutputsListIsChecked: a list that is not the one Convert
// referenced (changed, or gone before anything was promoted) is a
// systemic error, and a routed job's list goes with its staged outputs.
func TestAStagedOutputsListIsChecked(t *testing.T) {
	f := newFixture(t)
	f.convert = NewConvert(f.cfg, f.store, f.tracker, layersEngine{100}, fakeValidator, f.convert.log)
	ctx := context.Background()
	hc, conv := f.converted(t, "e1", "many.gpkg", "layers")
	if conv.OutputsRef == nil {
		t.Fatal("100 layers travelled inline")
	}
	key := conv.OutputsRef.Key
	put := func(body string) {
		if _, err := f.store.Put(ctx, objectstore.PutRequest{Bucket: "dest", Key: key, Body: strings.NewReader(body), Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
	}
	systemic := func(what string) {
		t.Helper()
		_, err := f.promote.Handle(ctx, PromoteInput{Job: hc.Job, Converted: conv, Context: inv("e1", 0)})
		var se *fault.SystemicError
		if !errors.As(err, &se) {
			t.Errorf("%s: err = %v, want SystemicError", what, err)
		}
	}
	put("[]")
	systemic("changed list")
	if err := f.store.Delete(ctx, "dest", key); err != nil {
		t.Fatal(err)
	}
	systemic("missing list")
	outside := conv
	outside.OutputsRef = &OutputsRef{Key: "elsewhere/list.json", Count: 1, SHA256: conv.OutputsRef.SHA256}
	if _, err := readOutputs(ctx, f.store, hc.Job, outside); err == nil {
		t.Error("read a list outside the job's staging")
	}
	put("[]")
	n, err := removeStaged(ctx, f.store, f.cfg, hc.Job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Head(ctx, "dest", key); !errors.Is(err, objectstore.ErrNotFound) || n != 100+1 {
		t.Errorf("routed job: %d staged objects removed (100 outputs and the list), list: %v", n, err)
	}
}
