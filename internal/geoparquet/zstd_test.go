package geoparquet

import (
	"bytes"
	"slices"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// recordingEncoder stands in for libzstd (internal/gdal tests the real
// one): it compresses with the pure-Go encoder's slowest speed, so its
// frames differ from the default's, and records the levels it was asked
// for. refuse makes it give every page back.
type recordingEncoder struct {
	refuse bool
	mu     sync.Mutex
	levels []int
	enc    *zstd.Encoder
}

func (e *recordingEncoder) EncodeZSTD(dst, src []byte, level int) (int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.Contains(e.levels, level) {
		e.levels = append(e.levels, level)
	}
	if e.refuse {
		return 0, false
	}
	out := e.enc.EncodeAll(src, dst[:0])
	if &out[0] != &dst[0] {
		panic("EncodeZSTD: dst was too small for the frame")
	}
	return len(out), true
}

// TestUseZSTD: the encoder given to UseZSTD compresses every ZSTD page at
// the levels the writer picks, a page it gives back is compressed in Go,
// and the file reads back the same either way. Not parallel: the encoder
// is process-wide.
func TestUseZSTD(t *testing.T) {
	feats := pointFeatures(20000, 3)
	layer := Layer{Name: "pts", Fields: pointFields, CRSProjJSON: []byte(utm33)}
	pure, _ := writeBytes(t, layer, feats, DefaultOptions())
	wantTable, _ := readTable(t, pure)

	level9 := DefaultOptions()
	level9.ZSTDLevel = 9
	snappy := DefaultOptions()
	snappy.Compression = "snappy"
	for _, tc := range []struct {
		name       string
		opts       Options
		refuse     bool
		wantLevels []int // levels asked for; nil: never called
		samePure   bool  // the bytes of the pure-Go encoder
	}{
		{"per-kind levels", DefaultOptions(), false, []int{geometryLevel}, false},
		{"Options.ZSTDLevel", level9, false, []int{9}, false},
		{"every page given back", DefaultOptions(), true, []int{geometryLevel}, true},
		{"not ZSTD", snappy, false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zenc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
			if err != nil {
				t.Fatal(err)
			}
			enc := &recordingEncoder{refuse: tc.refuse, enc: zenc}
			UseZSTD(enc)
			defer UseZSTD(nil)
			if !ZSTDEncoderInUse() {
				t.Fatal("ZSTDEncoderInUse after UseZSTD")
			}
			data, _ := writeBytes(t, layer, feats, tc.opts)
			slices.Sort(enc.levels)
			if !slices.Equal(enc.levels, tc.wantLevels) {
				t.Errorf("levels asked for %v, want %v", enc.levels, tc.wantLevels)
			}
			if tc.opts == DefaultOptions() && bytes.Equal(data, pure) != tc.samePure {
				t.Errorf("same bytes as the pure-Go encoder: %v, want %v", bytes.Equal(data, pure), tc.samePure)
			}
			rep, err := Validate(bytes.NewReader(data), int64(len(data)))
			if err != nil || !rep.OK() {
				t.Fatalf("Validate: %v %v", err, rep.Problems)
			}
			got, _ := readTable(t, data)
			if got.NumRows() != wantTable.NumRows() || got.NumCols() != wantTable.NumCols() {
				t.Fatalf("%d rows × %d columns, want %d × %d", got.NumRows(), got.NumCols(), wantTable.NumRows(), wantTable.NumCols())
			}
			for c := 0; c < int(got.NumCols()); c++ {
				g, w := got.Column(c).Data().Chunk(0), wantTable.Column(c).Data().Chunk(0)
				for i := 0; i < g.Len(); i++ {
					if cg, cw := cell(g, i), cell(w, i); cg != cw {
						t.Fatalf("column %d row %d: %v, want %v", c, i, cg, cw)
					}
				}
			}
		})
	}
	UseZSTD(nil)
	if ZSTDEncoderInUse() {
		t.Fatal("ZSTDEncoderInUse after UseZSTD(nil)")
	}
	if again, _ := writeBytes(t, layer, feats, DefaultOptions()); !bytes.Equal(again, pure) {
		t.Fatal("UseZSTD(nil) did not bring back the pure-Go encoder")
	}
}
