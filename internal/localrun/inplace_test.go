package localrun_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// changingEngine converts, then changes the source tree the way a writer
// racing the conversion would.
type changingEngine struct {
	recipe.Engine
	change func()
}

func (e *changingEngine) Convert(ctx context.Context, src, work string, r recipe.Recipe) ([]recipe.Output, error) {
	out, err := e.Engine.Convert(ctx, src, work, r)
	e.change()
	return out, err
}

// TestInPlaceSourceChangedDuringConversion: a source read in place is not
// hashed a second time; its ETag and its sidecars' (as HashCheck saw them)
// are compared after the conversion instead, so a rewrite of the file, or a
// world file appearing beside it, still ends in remediation as
// SourceChanged with nothing published.
func TestInPlaceSourceChangedDuringConversion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string)
	}{
		{"source rewritten", func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, "dem_utm33.tif"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte{0})
			f.Close()
		}},
		{"sidecar appeared", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "dem_utm33.tfw"), []byte("10\n0\n0\n-10\n500000\n5200000\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"unchanged", func(*testing.T, string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _, _ := samples(t)
			p := newPipeline(t, dir)
			p.engine.Engine = &changingEngine{Engine: p.engine.Engine, change: func() { tc.change(t, dir) }}
			out := p.run(t, p.store, []string{"dem_utm33.tif"})["dem_utm33.tif"]
			if tc.name == "unchanged" {
				if out.Status != localrun.StatusCompleted {
					t.Fatalf("unchanged source: %s %s %s", out.Status, out.Error, out.Message)
				}
				return
			}
			if out.Status != localrun.StatusRemediation || out.Code != string(fault.SourceChanged) {
				t.Fatalf("outcome %s %s %s %s, want remediation SourceChanged", out.Status, out.Error, out.Code, out.Message)
			}
			if _, err := os.Stat(filepath.Join(p.destDir, "dem_utm33.tif")); !os.IsNotExist(err) {
				t.Errorf("an output was published for a changed source (%v)", err)
			}
		})
	}
}
