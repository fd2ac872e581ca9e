package quarantine_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

const execution = "arn:aws:states:eu-west-1:123456789012:execution:geomigrate-migrate:run-1"

func put(t *testing.T, s objectstore.Store, bucket, key string, body []byte, meta map[string]string) {
	t.Helper()
	if _, err := s.Put(context.Background(), objectstore.PutRequest{Bucket: bucket, Key: key, Body: bytes.NewReader(body), Size: int64(len(body)), Metadata: meta}); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s objectstore.Store, bucket, key string) []byte {
	t.Helper()
	rc, err := s.Open(context.Background(), bucket, key)
	if err != nil {
		t.Fatalf("open %s/%s: %v", bucket, key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// failingOpen cannot read one key.
type failingOpen struct {
	objectstore.Store
	key string
}

func (s failingOpen) Open(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	if key == s.key {
		return nil, errors.New("AccessDenied")
	}
	return s.Store.Open(ctx, bucket, key)
}

func failure() quarantine.Failure {
	return quarantine.Failure{JobID: "ds:abc:123:loc", DatasetID: "ds", Execution: execution,
		SourceBucket: "src", SourceKey: "roads/roads.shp", SourceSHA256: "abc", RecipeHash: "123",
		Recipe:   recipe.Recipe{VectorFormat: recipe.FormatFlatGeobuf, ZSTDLevel: 5, GeometryPolicy: recipe.GeometryStrict, EngineVersion: "3.6.2"},
		FailedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
		Error: quarantine.ErrorChain{Error: "DataError", Cause: `{"errorType":"DataError","errorMessage":"InvalidGeometry: self-intersection"}`,
			Type: "DataError", Code: "InvalidGeometry", Message: "self-intersection", Tier: "data_specific", Route: "remediation", Attempts: 1}}
}

// TestWriteBundle: a bundle holds a valid manifest, the recipe, the logs
// of its execution and a reference to the input and its sidecars (URI,
// size, SHA-256); asked to copy, under the copy limit, their copies.
// Staging is empty afterwards.
func TestWriteBundle(t *testing.T) {
	shp, dbf := bytes.Repeat([]byte("S"), 600), bytes.Repeat([]byte("D"), 300)
	tests := []struct {
		name       string
		copy       bool
		limit      int64
		removeSrc  bool
		failReads  bool
		wantCopied bool
		wantWhy    string
		wantInput  string
	}{
		{"default: referenced", false, 1000, false, false, false, "referenced, not copied", "s3://src/roads/roads.shp"},
		{"under the limit: copied", true, 1000, false, false, true, "", "input/roads.shp"},
		{"exactly the limit: copied", true, 900, false, false, true, "", "input/roads.shp"},
		{"above the limit with sidecars: referenced", true, 899, false, false, false, "over the copy limit", "s3://src/roads/roads.shp"},
		{"copying off: referenced", true, -1, false, false, false, "over the copy limit", "s3://src/roads/roads.shp"},
		{"source gone: referenced", true, 1000, true, false, false, "cannot be read", "s3://src/roads/roads.shp"},
		{"sidecar unreadable: referenced", true, 1000, false, true, false, "copy failed", "s3://src/roads/roads.shp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := memstore.New("src", "dest")
			if !tt.removeSrc {
				put(t, s, "src", "roads/roads.shp", shp, nil)
				put(t, s, "src", "roads/roads.dbf", dbf, nil)
			}
			put(t, s, "src", "roads/roads_other.dbf", []byte("not a sidecar of roads.shp"), nil)
			var store objectstore.Store = s
			if tt.failReads {
				store = failingOpen{s, "roads/roads.dbf"}
			}
			book := quarantine.NewLogBook(slog.LevelInfo)
			log := slog.New(book.Handler(slog.DiscardHandler)).With(slog.String(quarantine.ExecutionAttr, execution))
			log.Info("convert failed", slog.String("state", "Convert"))
			slog.New(book.Handler(slog.DiscardHandler)).Info("another execution", slog.String("execution", "other"))
			w, err := quarantine.NewWriter(quarantine.Config{Store: store, Bucket: "dest", Prefix: quarantine.DefaultPrefix,
				StagingPrefix: "_staging/quarantine/", CopyInput: tt.copy, CopyLimit: tt.limit, Logs: book, LogQuery: `filter execution = "%s"`,
				Versions: quarantine.Versions{Geomigrate: "test"}})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := w.Write(ctx, failure())
			if err != nil {
				t.Fatal(err)
			}
			wantPrefix := quarantine.DefaultPrefix + "ds_abc_123_loc/run-1/"
			if ref.Prefix != wantPrefix || ref.Location != "s3://dest/"+wantPrefix {
				t.Errorf("ref = %+v, want prefix %s", ref, wantPrefix)
			}
			var m quarantine.Manifest
			if err := json.Unmarshal(read(t, s, "dest", wantPrefix+quarantine.ManifestFile), &m); err != nil {
				t.Fatal(err)
			}
			if m.Version != quarantine.ManifestVersion || m.JobID != "ds:abc:123:loc" || m.Execution != execution || m.Bundle != ref.Location {
				t.Errorf("manifest identity: %+v", m)
			}
			if m.Error.Code != "InvalidGeometry" || m.Error.Route != "remediation" || !strings.Contains(m.Error.Cause, "errorType") {
				t.Errorf("error chain: %+v", m.Error)
			}
			if m.Versions.GDAL != "3.6.2" || m.Versions.Geomigrate != "test" || m.Versions.Note == "" {
				t.Errorf("versions: %+v", m.Versions)
			}
			var r recipe.Recipe
			if err := json.Unmarshal(read(t, s, "dest", wantPrefix+quarantine.RecipeFile), &r); err != nil || r.VectorFormat != recipe.FormatFlatGeobuf || r.BlockSize != recipe.DefaultBlockSize {
				t.Errorf("recipe.json: %+v, %v", r, err)
			}
			logs := strings.Split(strings.TrimSpace(string(read(t, s, "dest", wantPrefix+quarantine.LogsFile))), "\n")
			if len(logs) != 1 || !strings.Contains(logs[0], `"msg":"convert failed"`) || m.Logs.Lines != 1 || m.Logs.Query != `filter execution = "`+execution+`"` {
				t.Errorf("logs: %q, manifest %+v", logs, m.Logs)
			}
			if m.Copied != tt.wantCopied || !strings.Contains(m.NotCopied, tt.wantWhy) || m.Reproduce.Input != tt.wantInput {
				t.Errorf("copied %v (%q), input %q; want %v (%q), %q", m.Copied, m.NotCopied, m.Reproduce.Input, tt.wantCopied, tt.wantWhy, tt.wantInput)
			}
			var inputs []string
			for _, k := range s.Keys("dest") {
				if strings.Contains(k, "/input/") {
					inputs = append(inputs, k)
				}
				if strings.HasPrefix(k, "_staging/") {
					t.Errorf("staging left behind: %s", k)
				}
			}
			if tt.wantCopied {
				if len(inputs) != 2 || len(m.Sidecars) != 1 || m.Input.SHA256 != hexSum(shp) || m.Sidecars[0].SHA256 != hexSum(dbf) ||
					!bytes.Equal(read(t, s, "dest", wantPrefix+"input/roads.dbf"), dbf) {
					t.Errorf("copies %v, manifest %+v %+v", inputs, m.Input, m.Sidecars)
				}
			} else if len(inputs) != 0 {
				t.Errorf("input copied above the limit: %v", inputs)
			}
			if !tt.removeSrc && (m.Input.Size != 600 || len(m.Sidecars) != 1 || m.Sidecars[0].Key != "roads/roads.dbf" ||
				m.Input.URI != "s3://src/roads/roads.shp" || m.Sidecars[0].URI != "s3://src/roads/roads.dbf") {
				t.Errorf("input reference: %+v %+v", m.Input, m.Sidecars)
			}
			if !tt.copy && (m.Input.SHA256 != hexSum(shp) || m.Sidecars[0].SHA256 != hexSum(dbf) || m.Input.Copy != "") {
				t.Errorf("a reference without the digests: %+v %+v", m.Input, m.Sidecars)
			}
			for _, want := range []string{"geomigrate migrate", "--vector-format FlatGeobuf --zstd-level 5", `--dest "$(mktemp -d)"`} {
				if !strings.Contains(m.Reproduce.Command, want) {
					t.Errorf("command %q lacks %q", m.Reproduce.Command, want)
				}
			}
			if m.Reproduce.Expect != (quarantine.Expect{Error: "DataError", Code: "InvalidGeometry", Route: "remediation"}) ||
				len(m.Reproduce.Caveats) != 2 || !strings.Contains(m.Reproduce.Caveats[0], "geometry_policy is strict") {
				t.Errorf("reproduce: %+v", m.Reproduce)
			}
		})
	}
}

// TestBundleNeverOverwritesAnotherObject: a final key holding something
// that is not this bundle's (an output) is left alone and the write fails;
// the bundle's own objects (a retried Classify) are rewritten.
func TestBundleNeverOverwritesAnotherObject(t *testing.T) {
	ctx := context.Background()
	s := memstore.New("src", "dest")
	put(t, s, "src", "roads/roads.shp", []byte("shp"), nil)
	w, err := quarantine.NewWriter(quarantine.Config{Store: s, Bucket: "dest", Prefix: "q/", StagingPrefix: "_staging/q/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx, failure()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx, failure()); err != nil {
		t.Fatalf("rewriting its own bundle: %v", err)
	}
	f := failure()
	f.JobID = "other"
	taken := "q/other/run-1/" + quarantine.ManifestFile
	put(t, s, "dest", taken, []byte("an output"), map[string]string{"src-sha256": "x"})
	if _, err := w.Write(ctx, f); err == nil || !strings.Contains(err.Error(), "not this bundle's") {
		t.Errorf("write over a foreign object: %v", err)
	}
	if got := string(read(t, s, "dest", taken)); got != "an output" {
		t.Errorf("foreign object overwritten: %q", got)
	}
	for _, k := range s.Keys("dest") {
		if strings.HasPrefix(k, "_staging/") {
			t.Errorf("staging left behind after a failed write: %s", k)
		}
	}
}

func TestNewWriterRefusesOverlappingPrefixes(t *testing.T) {
	s := memstore.New("dest")
	tests := []struct {
		name            string
		prefix, staging string
		ok              bool
	}{
		{"default", quarantine.DefaultPrefix, "_staging/quarantine/", true},
		{"own bucket", "", "_staging/", true},
		{"own bucket, staging not marked", "", "staging/", false},
		{"prefix without slash", "q", "_staging/", false},
		{"no staging", "q/", "", false},
		{"bundles inside staging", "_staging/q/", "_staging/", false},
		{"staging inside bundles", "q/", "q/_staging/", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := quarantine.NewWriter(quarantine.Config{Store: s, Bucket: "dest", Prefix: tt.prefix, StagingPrefix: tt.staging})
			if (err == nil) != tt.ok {
				t.Errorf("NewWriter(%q, %q) = %v, want ok %v", tt.prefix, tt.staging, err, tt.ok)
			}
		})
	}
}

func TestDir(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct{ job, execution, want string }{
		{"ds:abc:123:loc", execution, "ds_abc_123_loc/run-1/"},
		{"ds:unhashed:bucket/a b/c.tif", "local-run", "ds_unhashed_bucket_a_b_c.tif/local-run/"},
		{"../..", "..", "unnamed/unnamed/"},
	}
	for _, tt := range tests {
		if got := quarantine.Dir(tt.job, tt.execution); got != tt.want {
			t.Errorf("Dir(%q, %q) = %q, want %q", tt.job, tt.execution, got, tt.want)
		}
	}
	if d := quarantine.Dir(long, "e"); len(d) > 170 || d == quarantine.Dir(long+"y", "e") {
		t.Errorf("long job IDs: %q", d)
	}
}

// lostPut stores the object, then reports a failure (a response lost
// after success), for keys ending in suffix.
type lostPut struct {
	objectstore.Store
	suffix string
}

func (s lostPut) Put(ctx context.Context, req objectstore.PutRequest) (objectstore.Object, error) {
	o, err := s.Store.Put(ctx, req)
	if err == nil && strings.HasSuffix(req.Key, s.suffix) {
		return o, errors.New("connection reset")
	}
	return o, err
}

// TestStagingIsCleanedAfterLostResponses: a staged object whose Put looked
// failed may exist all the same; the writer deletes it too.
func TestStagingIsCleanedAfterLostResponses(t *testing.T) {
	for _, suffix := range []string{quarantine.RecipeFile, quarantine.ManifestFile, "input/roads.dbf"} {
		t.Run(suffix, func(t *testing.T) {
			s := memstore.New("src", "dest")
			put(t, s, "src", "roads/roads.shp", []byte("shp"), nil)
			put(t, s, "src", "roads/roads.dbf", []byte("dbf"), nil)
			w, err := quarantine.NewWriter(quarantine.Config{Store: lostPut{s, suffix}, Bucket: "dest", Prefix: "q/", StagingPrefix: "_staging/q/"})
			if err != nil {
				t.Fatal(err)
			}
			_, werr := w.Write(context.Background(), failure())
			for _, k := range s.Keys("dest") {
				if strings.HasPrefix(k, "_staging/") {
					t.Errorf("staging left behind (write: %v): %s", werr, k)
				}
			}
		})
	}
}
