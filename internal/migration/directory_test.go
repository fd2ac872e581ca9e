package migration

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/geomigrate/geomigrate/internal/recipe"
)

// dirEngine "converts" a directory source: it records the files GDAL
// would find in it and writes one fake COG.
type dirEngine struct {
	src   string
	files []string
}

func (e *dirEngine) Version() string { return "fake-1" }

func (e *dirEngine) Convert(ctx context.Context, src, workDir string, r recipe.Recipe) ([]recipe.Output, error) {
	e.src, e.files = src, nil
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(src, p)
			e.files = append(e.files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	out := filepath.Join(workDir, "out.tif")
	if err := os.WriteFile(out, []byte("COG:dir"), 0o644); err != nil {
		return nil, err
	}
	info := recipe.Formats[recipe.FormatGeoParquet]
	return []recipe.Output{{Path: out, Format: info.Format, Extension: info.Extension, ContentType: info.ContentType, Kind: info.Kind,
		Fidelity: &recipe.Fidelity{Checks: []string{"files"}}}}, nil
}

// TestDirectorySourceIsOneSource: a File Geodatabase (objects under
// city.gdb/) is one job keyed city.gdb, fingerprinted over all its files;
// an event for one of its files stands for the directory; Convert gives
// the engine the whole directory under its name; an edit of one file is a
// new job.
func TestDirectorySourceIsOneSource(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	members := []string{"a00000001.gdbtable", "a00000001.gdbtablx", "gdb", "timestamps"}
	for _, m := range members {
		f.put(t, "x/city.gdb/"+m, "bytes of "+m)
	}
	f.put(t, "x/city.gdbx", "not a member")
	first := f.check(t, "e1", "x/city.gdb")
	if first.Decision != DecisionConvert || first.Job.SourceKey != "x/city.gdb" || first.Job.Fingerprint != "sha256" {
		t.Fatalf("directory: %s/%s %+v", first.Decision, first.Reason, first.Job)
	}
	var size int64
	for _, m := range members {
		size += int64(len("bytes of " + m))
	}
	if first.Job.SourceSize != size || first.Route.Work.Bytes != size {
		t.Errorf("size %d, route bytes %d, want %d", first.Job.SourceSize, first.Route.Work.Bytes, size)
	}
	eng := &dirEngine{}
	conv := NewConvert(f.cfg, f.store, f.tracker, eng, func(string, string) error { return nil }, slog.New(slog.DiscardHandler))
	if _, err := conv.Handle(ctx, ConvertInput{Job: first.Job, Context: inv("e1", 0)}); err != nil {
		t.Fatal(err)
	}
	if filepath.Base(eng.src) != "city.gdb" || !slices.Equal(eng.files, members) {
		t.Errorf("engine got %s holding %v, want city.gdb holding %v", eng.src, eng.files, members)
	}

	// An event for a member is the directory's.
	again := f.check(t, "e2", "x/city.gdb/a00000001.gdbtable")
	if again.Job.SourceKey != "x/city.gdb" || again.Job.SourceSHA256 != first.Job.SourceSHA256 {
		t.Errorf("member event: %s %s, want the directory's job", again.Job.SourceKey, again.Job.SourceSHA256)
	}
	// An edit of one member changes the identity, and a change during
	// conversion is caught.
	f.put(t, "x/city.gdb/gdb", "edited")
	edited := f.check(t, "e3", "x/city.gdb/gdb")
	if edited.Job.SourceSHA256 == first.Job.SourceSHA256 {
		t.Error("an edited member left the fingerprint unchanged")
	}
	if _, err := conv.Handle(ctx, ConvertInput{Job: first.Job, Context: inv("e4", 0)}); err == nil {
		t.Error("a conversion of the old content succeeded after a member changed")
	}
	if _, err := f.hash.Handle(ctx, HashCheckInput{Source: Source{Bucket: "src", Key: "none.gdb"}, Context: inv("e5", 0)}); err == nil {
		t.Error("an empty directory source was found")
	}
}

func TestDirectoryOf(t *testing.T) {
	for in, want := range map[string]string{
		"city.gdb/a00000001.gdbtable":   "city.gdb",
		"a/b/City.GDB/x/y":              "a/b/City.GDB",
		"city.gdb":                      "",
		"a/city.gdbx/t":                 "",
		"city.gdb.zip":                  "",
		"x/city.gdb.zip/a00000001.gdbt": "",
	} {
		if got := directoryOf(in); got != want {
			t.Errorf("directoryOf(%q) = %q, want %q", in, got, want)
		}
	}
}
