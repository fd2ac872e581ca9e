package geoparquet

import (
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"
)

// pointSource generates n random points with an id and a label, reusing
// one WKB buffer (Write must copy what it keeps).
type pointSource struct {
	n, i int
	rng  *rand.Rand
	wkb  []byte
}

func newPointSource(n int) *pointSource {
	return &pointSource{n: n, rng: rand.New(rand.NewPCG(42, 42)), wkb: make([]byte, 21)}
}

func (s *pointSource) Next() (Feature, error) {
	if s.i >= s.n {
		return Feature{}, io.EOF
	}
	s.i++
	x, y := s.rng.Float64()*360-180, s.rng.Float64()*170-85
	s.wkb[0] = 1
	binary.LittleEndian.PutUint32(s.wkb[1:], 1)
	binary.LittleEndian.PutUint64(s.wkb[5:], math.Float64bits(x))
	binary.LittleEndian.PutUint64(s.wkb[13:], math.Float64bits(y))
	return Feature{WKB: s.wkb, Values: []any{int64(s.i), "label-" + strconv.Itoa(s.i%1000)}}, nil
}

// peakHeap samples the live heap every 2 ms until stopped.
type peakHeap struct {
	stop chan struct{}
	wg   sync.WaitGroup
	peak uint64
}

func startPeakHeap() *peakHeap {
	p := &peakHeap{stop: make(chan struct{})}
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			p.peak = max(p.peak, sample[0].Value.Uint64())
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peakHeap) Stop() uint64 { close(p.stop); p.wg.Wait(); return p.peak }

// BenchmarkWrite1M writes 1,000,000 point features with two attributes
// (make bench; not part of the default test run).
func BenchmarkWrite1M(b *testing.B) {
	st, peak := writeMillionPoints(b, DefaultOptions())
	b.ReportMetric(float64(st.Bytes), "bytes")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(st.RowGroups), "row-groups")
}

// writeMillionPoints writes 1,000,000 point features with an id and a
// label b.N times with opts to io.Discard and reports rows/s; it returns
// the last write's stats and the peak Go heap of any.
func writeMillionPoints(b *testing.B, opts Options) (Stats, uint64) {
	const n = 1_000_000
	layer := Layer{Name: "points", Fields: []Field{{Name: "id", Type: Int64}, {Name: "label", Type: String, Nullable: true}}, IsCRS84: true}
	var st Stats
	var peak uint64
	start := time.Now()
	for i := 0; i < b.N; i++ {
		ph := startPeakHeap()
		var err error
		st, err = Write(io.Discard, layer, newPointSource(n), opts)
		peak = max(peak, ph.Stop())
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/time.Since(start).Seconds(), "rows/s")
	return st, peak
}

// polygonSource generates n squares of `vertices` vertices each (a ring of
// vertices+1 points) with an id, reusing one WKB buffer.
type polygonSource struct {
	n, i, vertices int
	wkb            []byte
}

func (s *polygonSource) Next() (Feature, error) {
	if s.i >= s.n {
		return Feature{}, io.EOF
	}
	s.i++
	pts := s.vertices + 1
	if s.wkb == nil {
		s.wkb = make([]byte, 1+4+4+4+16*pts)
	}
	le := binary.LittleEndian
	s.wkb[0] = 1
	le.PutUint32(s.wkb[1:], 3)
	le.PutUint32(s.wkb[5:], 1)
	le.PutUint32(s.wkb[9:], uint32(pts))
	cx, cy := float64(s.i%1000), float64(s.i/1000)
	for k := 0; k < pts; k++ {
		a := 2 * math.Pi * float64(k%s.vertices) / float64(s.vertices)
		le.PutUint64(s.wkb[13+16*k:], math.Float64bits(cx+0.4*math.Cos(a)))
		le.PutUint64(s.wkb[21+16*k:], math.Float64bits(cy+0.4*math.Sin(a)))
	}
	return Feature{WKB: s.wkb, Values: []any{int64(s.i)}}, nil
}

// BenchmarkWritePolygons writes 50,000 polygons of 200 vertices (160 MB of
// WKB) and reports the peak heap per WKB byte: the per-vertex term of the
// engine's memory model (internal/gdal/vectorbudget.go).
func BenchmarkWritePolygons(b *testing.B) {
	const n, vertices = 50_000, 200
	layer := Layer{Name: "polygons", Fields: []Field{{Name: "id", Type: Int64}}, IsCRS84: true}
	var peak uint64
	var wkbBytes float64
	for i := 0; i < b.N; i++ {
		ph := startPeakHeap()
		src := &polygonSource{n: n, vertices: vertices}
		_, err := Write(io.Discard, layer, src, DefaultOptions())
		peak = max(peak, ph.Stop())
		if err != nil {
			b.Fatal(err)
		}
		wkbBytes = float64(n) * float64(len(src.wkb))
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peak)/wkbBytes, "heap/wkb-byte")
}

// BenchmarkWrite1MSpilled is BenchmarkWrite1M through the external sort
// (16 MiB of rows held at most): the peak heap stays near the threshold
// whatever the row count, the price is the temporary files' I/O.
func BenchmarkWrite1MSpilled(b *testing.B) {
	opts := DefaultOptions()
	opts.SpillBytes, opts.TempDir = 16<<20, b.TempDir()
	st, peak := writeMillionPoints(b, opts)
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(st.Spills), "spills")
}
