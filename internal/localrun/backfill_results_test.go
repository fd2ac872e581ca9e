package localrun

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
)

// The result writer spools the items one at a time: its files are what
// json.MarshalIndent of the succeeded and failed lists wrote.
func TestWriteResultsFiles(t *testing.T) {
	tests := []struct {
		name    string
		results []json.RawMessage
	}{
		{"none", nil},
		{"one succeeded", []json.RawMessage{json.RawMessage(`{"Key":"a.tif","migration":{"status":"SUCCEEDED","output":"{\"x\": [1, 2]}"}}`)}},
		{"mixed", []json.RawMessage{
			json.RawMessage(`{"Key":"a.tif","nested":{"list":[1,{"b":[]}],"empty":{}}}`),
			json.RawMessage(`{"Error":"States.TaskFailed","Cause":"boom"}`),
			json.RawMessage(`{"Key":"c.tif"}`),
			json.RawMessage(`{"Error":null,"Key":"d.tif"}`),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, err := dirstore.New("", dirstore.WithBucketDir("ops", t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			params, _ := json.Marshal(map[string]any{"Bucket": "ops", "Prefix": "results", "Other": []int{1}, "Results": tt.results})
			out, err := writeResults(store)(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			var details struct{ ResultWriterDetails struct{ Bucket, Key string } }
			if err := json.Unmarshal(out, &details); err != nil {
				t.Fatal(err)
			}
			var manifest struct {
				ResultFiles map[string][]struct {
					Key   string
					Items int
				}
			}
			if err := readJSON(context.Background(), store, "ops", details.ResultWriterDetails.Key, &manifest); err != nil {
				t.Fatal(err)
			}
			var ok, failed []json.RawMessage
			for _, r := range tt.results {
				var probe struct{ Error *string }
				if json.Unmarshal(r, &probe) == nil && probe.Error != nil {
					failed = append(failed, r)
				} else {
					ok = append(ok, r)
				}
			}
			for name, want := range map[string][]json.RawMessage{"SUCCEEDED": ok, "FAILED": failed} {
				files := manifest.ResultFiles[name]
				if len(files) != 1 || files[0].Items != len(want) {
					t.Fatalf("%s: %+v, want one file of %d items", name, files, len(want))
				}
				rc, err := store.Open(context.Background(), "ops", files[0].Key)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(rc)
				rc.Close()
				wantBytes, _ := json.MarshalIndent(want, "", "  ")
				if !bytes.Equal(got, wantBytes) {
					t.Errorf("%s:\n%s\nwant\n%s", name, got, wantBytes)
				}
			}
		})
	}
}
