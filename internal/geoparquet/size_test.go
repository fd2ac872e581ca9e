package geoparquet

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// measuredSet is one of the layers make bench's GeoParquet figures are
// measured on (gpqsets_test.go), or a set written like them.
type measuredSet struct {
	name  string
	rows  int
	layer Layer
	src   func() FeatureSource
}

var measuredSets = []measuredSet{
	{"points-1M", 1_000_000, pointSetLayer, func() FeatureSource { return &pointSet{n: 1_000_000} }},
	{"parcels-100k", 100_000, parcelSetLayer, func() FeatureSource { return &parcelSet{n: 100_000} }},
	{"quads-100k", 100_000, quadSetLayer, func() FeatureSource { return &quadSet{n: 100_000} }},
}

// columnSize is one column's compressed and uncompressed bytes over all
// row groups.
type columnSize struct {
	path                     string
	compressed, uncompressed int64
	encodings                string
}

// columnSizes reads a file's footer: the bytes of each column chunk,
// summed over row groups, in schema order.
func columnSizes(t testing.TB, data []byte) []columnSize {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	md := rdr.MetaData()
	var out []columnSize
	for g := 0; g < md.NumRowGroups(); g++ {
		rg := md.RowGroup(g)
		for c := 0; c < rg.NumColumns(); c++ {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if g == 0 {
				var encs []string
				for _, e := range cc.Encodings() {
					encs = append(encs, e.String())
				}
				out = append(out, columnSize{path: cc.PathInSchema().String(), encodings: strings.Join(encs, " ")})
			}
			out[c].compressed += cc.TotalCompressedSize()
			out[c].uncompressed += cc.TotalUncompressedSize()
		}
	}
	return out
}

// TestMeasuredSetsReadBack writes the measured sets with the default
// options and has the three judges and Validate read every row; it logs
// the per-column bytes (the table in docs/benchmarks.md). How the bytes
// compare with gpq's is make bench's figure, against gpq itself.
func TestMeasuredSetsReadBack(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1.2 M features (a few seconds); run without -short")
	}
	for _, set := range measuredSets {
		t.Run(set.name, func(t *testing.T) {
			var ours bytes.Buffer
			st, err := Write(&ours, set.layer, set.src(), DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s: %d bytes in %d row groups\n", set.name, st.Bytes, st.RowGroups)
			for _, c := range columnSizes(t, ours.Bytes()) {
				fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", c.path, c.compressed, c.uncompressed, c.encodings)
			}
			t.Log(b.String())
			if st.Rows != int64(set.rows) || st.Bytes != int64(ours.Len()) {
				t.Fatalf("stats %+v for %d bytes", st, ours.Len())
			}
			judgeEveryRow(t, ours.Bytes(), st.Rows, 0, "read.mjs", "duckdb.mjs", "parquet-wasm.mjs")
			rep, err := Validate(bytes.NewReader(ours.Bytes()), int64(ours.Len()))
			if err != nil || !rep.OK() {
				t.Fatalf("Validate: %v %s", err, rep)
			}
		})
	}
}

// BenchmarkGeoParquetSize writes the measured sets with the default
// options to io.Discard, reporting bytes and rows/s (go test -cpuprofile
// on it profiles the writer alone).
func BenchmarkGeoParquetSize(b *testing.B) {
	for _, set := range measuredSets {
		b.Run(set.name, func(b *testing.B) {
			var n int64
			start := time.Now()
			for i := 0; i < b.N; i++ {
				st, err := Write(io.Discard, set.layer, set.src(), DefaultOptions())
				if err != nil {
					b.Fatal(err)
				}
				n = st.Bytes
			}
			b.ReportMetric(float64(set.rows)*float64(b.N)/time.Since(start).Seconds(), "rows/s")
			b.ReportMetric(float64(n), "bytes")
		})
	}
}
