package geoparquet

// Size: the writer's external sort: row spill, runs and the k-way merge share one row encoding.

// External sort for layers larger than Options.SpillBytes (decision 0024).
//
// The Hilbert key of a row needs the extent of the whole layer, known only
// after the last feature. So:
//
//  1. collect: rows are held columnar (table) until they hold SpillBytes,
//     then written in input order to an unsorted chunk file;
//  2. sort: each chunk is read back (one chunk in memory at a time), keyed
//     with the final extent, sorted and written as a sorted run; the last
//     chunk, still in memory, is sorted directly;
//  3. merge: the runs are merged by (Hilbert key, input row), at most
//     mergeFanIn at once, into row groups written as they fill.
//
// Each row group takes the next rows in (key, row) order and writes them
// in input order. This is the in-memory path's order (a stable sort by
// key, ties by input row), so both paths write the same bytes.
//
// Temporary files are unlinked as soon as they are created: they vanish
// when closed or when the process dies, whatever happens in between.

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// mergeFanIn is the most runs merged at once (open files, read buffers);
// a variable so that tests can merge in several passes.
var mergeFanIn = 64

// spillBufSize is the buffer of each run reader and writer.
const spillBufSize = 256 << 10

// errSpillCorrupt reports a spill file that does not read back as written.
var errSpillCorrupt = errors.New("geoparquet: spill file corrupt")

// held is about what the rows of t take in memory (slice lengths).
func (t *table) held() int64 {
	n := int64(len(t.geom)) + 8*int64(len(t.geomOffs))
	for _, c := range t.cols {
		n += int64(len(c.valid)) + 8*int64(len(c.ints)) + 8*int64(len(c.f64)) + int64(len(c.bools)) +
			int64(len(c.data)) + 8*int64(len(c.offs)) + 8*int64(len(c.loffs))
	}
	return n
}

// reset empties the rows of t, keeping its capacity, its geometry types and
// its extent (which describe every row seen).
func (t *table) reset() {
	t.rows = 0
	t.geom = t.geom[:0]
	t.geomOffs = t.geomOffs[:1]
	for _, c := range t.cols {
		c.valid, c.ints, c.f64, c.bools, c.data = c.valid[:0], c.ints[:0], c.f64[:0], c.bools[:0], c.data[:0]
		if c.offs != nil {
			c.offs = c.offs[:1]
		}
		if c.loffs != nil {
			c.loffs = c.loffs[:1]
		}
	}
}

// newTable is an empty table of layer's fields.
func newTable(layer Layer) *table {
	t := &table{geomOffs: []int64{0}, types: map[string]struct{}{}}
	t.extent = [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	for _, f := range layer.Fields {
		t.cols = append(t.cols, newColumn(f, f.Type))
	}
	return t
}

// newColumn is an empty column of f, written as as.
func newColumn(f Field, as FieldType) *column {
	c := &column{f: f, as: as}
	if f.Type == String || f.Type == Binary || f.Type == StringList {
		c.offs = []int64{0}
	}
	if f.Type.isList() {
		c.loffs = []int64{0}
	}
	return c
}

// appendRow encodes row r of t: WKB length and bytes, then per column a
// validity byte and the value (varint, 8-byte float, byte, or length and
// bytes; a list: its element count, then each element so).
func (t *table) appendRow(buf []byte, r int32) []byte {
	w := t.wkb(r)
	buf = binary.AppendUvarint(buf, uint64(len(w)))
	buf = append(buf, w...)
	for _, c := range t.cols {
		if !c.valid[r] {
			buf = append(buf, 0)
			continue
		}
		buf = append(buf, 1)
		switch c.f.Type {
		case Int32List, Int64List, Float64List, StringList:
			a, b := c.loffs[r], c.loffs[r+1]
			buf = binary.AppendUvarint(buf, uint64(b-a))
			for e := a; e < b; e++ {
				switch c.f.Type {
				case Float64List:
					buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(c.f64[e]))
				case StringList:
					v := c.data[c.offs[e]:c.offs[e+1]]
					buf = binary.AppendUvarint(buf, uint64(len(v)))
					buf = append(buf, v...)
				default:
					buf = binary.AppendVarint(buf, c.ints[e])
				}
			}
		case Float64:
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(c.f64[r]))
		case Bool:
			b := byte(0)
			if c.bools[r] {
				b = 1
			}
			buf = append(buf, b)
		case String, Binary:
			v := c.data[c.offs[r]:c.offs[r+1]]
			buf = binary.AppendUvarint(buf, uint64(len(v)))
			buf = append(buf, v...)
		default:
			buf = binary.AppendVarint(buf, c.ints[r])
		}
	}
	return buf
}

// readRow appends a row encoded by appendRow. Its geometry was checked when
// it was first collected; the types and extent of t are not touched.
func (t *table) readRow(b []byte) error {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return errSpillCorrupt
	}
	b = b[k:]
	t.geom = append(t.geom, b[:n]...)
	t.geomOffs = append(t.geomOffs, int64(len(t.geom)))
	b = b[n:]
	for _, c := range t.cols {
		if len(b) == 0 {
			return errSpillCorrupt
		}
		valid := b[0] == 1
		b = b[1:]
		if !valid {
			c.appendNull()
			continue
		}
		c.valid = append(c.valid, true)
		switch c.f.Type {
		case Int32List, Int64List, Float64List, StringList:
			var err error
			if b, err = c.readList(b); err != nil {
				return err
			}
		case Float64:
			if len(b) < 8 {
				return errSpillCorrupt
			}
			c.f64 = append(c.f64, math.Float64frombits(binary.LittleEndian.Uint64(b)))
			b = b[8:]
		case Bool:
			if len(b) < 1 {
				return errSpillCorrupt
			}
			c.bools = append(c.bools, b[0] == 1)
			b = b[1:]
		case String, Binary:
			n, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < n {
				return errSpillCorrupt
			}
			c.data = append(c.data, b[k:k+int(n)]...)
			c.offs = append(c.offs, int64(len(c.data)))
			b = b[k+int(n):]
		default:
			v, k := binary.Varint(b)
			if k <= 0 {
				return errSpillCorrupt
			}
			c.ints = append(c.ints, v)
			b = b[k:]
		}
	}
	if len(b) != 0 {
		return errSpillCorrupt
	}
	t.rows++
	return nil
}

// readList appends one list value encoded by appendRow and returns the
// rest of b.
func (c *column) readList(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errSpillCorrupt
	}
	b = b[k:]
	for range n {
		switch c.f.Type {
		case Float64List:
			if len(b) < 8 {
				return nil, errSpillCorrupt
			}
			c.f64 = append(c.f64, math.Float64frombits(binary.LittleEndian.Uint64(b)))
			b = b[8:]
		case StringList:
			m, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < m {
				return nil, errSpillCorrupt
			}
			c.data = append(c.data, b[k:k+int(m)]...)
			c.offs = append(c.offs, int64(len(c.data)))
			b = b[k+int(m):]
		default:
			v, k := binary.Varint(b)
			if k <= 0 {
				return nil, errSpillCorrupt
			}
			c.ints = append(c.ints, v)
			b = b[k:]
		}
	}
	c.loffs = append(c.loffs, int64(c.elements()))
	return b, nil
}

// run is a temporary file of records: Hilbert key, input row, and a row
// as appendRow encodes it, each a uvarint-prefixed field.
type run struct {
	f *os.File
	w *bufio.Writer
}

func newRun(dir string) (*run, error) {
	f, err := os.CreateTemp(dir, ".geoparquet-run-*")
	if err != nil {
		return nil, fmt.Errorf("geoparquet.Write: spill: %w", err)
	}
	// Unlinked at once: the file lives as long as it is open.
	os.Remove(f.Name())
	return &run{f: f, w: bufio.NewWriterSize(f, spillBufSize)}, nil
}

// put writes one record.
func (r *run) put(scratch []byte, key, row uint64, body []byte) ([]byte, error) {
	scratch = binary.AppendUvarint(scratch[:0], key)
	scratch = binary.AppendUvarint(scratch, row)
	scratch = binary.AppendUvarint(scratch, uint64(len(body)))
	if _, err := r.w.Write(scratch); err != nil {
		return scratch, fmt.Errorf("geoparquet.Write: spill: %w", err)
	}
	if _, err := r.w.Write(body); err != nil {
		return scratch, fmt.Errorf("geoparquet.Write: spill: %w", err)
	}
	return scratch, nil
}

// reader flushes the run and reads it from the start.
func (r *run) reader() (*runReader, error) {
	if err := r.w.Flush(); err != nil {
		return nil, fmt.Errorf("geoparquet.Write: spill: %w", err)
	}
	r.w = nil
	if _, err := r.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("geoparquet.Write: spill: %w", err)
	}
	return &runReader{r: bufio.NewReaderSize(r.f, spillBufSize)}, nil
}

func (r *run) close() { r.f.Close() }

// runReader reads the records of a run one at a time; body is valid until
// the next call of next.
type runReader struct {
	r        *bufio.Reader
	key, row uint64
	body     []byte
}

// next reads the next record; io.EOF at the end.
func (rr *runReader) next() error {
	key, err := binary.ReadUvarint(rr.r)
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return fmt.Errorf("geoparquet.Write: spill: %w", err)
	}
	row, err := binary.ReadUvarint(rr.r)
	if err != nil {
		return fmt.Errorf("geoparquet.Write: spill: %w", errSpillCorrupt)
	}
	n, err := binary.ReadUvarint(rr.r)
	if err != nil || n > math.MaxInt32 {
		return fmt.Errorf("geoparquet.Write: spill: %w", errSpillCorrupt)
	}
	if uint64(cap(rr.body)) < n {
		rr.body = make([]byte, n)
	}
	rr.body = rr.body[:n]
	if _, err := io.ReadFull(rr.r, rr.body); err != nil {
		return fmt.Errorf("geoparquet.Write: spill: %w", errSpillCorrupt)
	}
	rr.key, rr.row = key, row
	return nil
}

// hilbertKeys are the sort keys of the rows of t over extent: the Hilbert
// index of the bbox centre, MaxUint32 for a row without a bbox, and 0 for
// every row when the layer is not spatially ordered (input order).
func (t *table) hilbertKeys(spatial bool, extent [4]float64) []uint64 {
	keys := make([]uint64, t.rows)
	if !spatial || math.IsNaN(extent[0]) {
		return keys
	}
	for i := range keys {
		k := uint64(math.MaxUint32)
		if b, ok := t.box(int32(i)); ok {
			cx, cy := (b[0]+b[2])/2, (b[1]+b[3])/2
			k = hilbertIndex(gridCell(cx, extent[0], extent[2]), gridCell(cy, extent[1], extent[3]))
		}
		keys[i] = k
	}
	return keys
}

// spiller runs the external sort of one layer.
type spiller struct {
	dir    string
	chunks []*run // unsorted, in input order
	first  []int64
	runs   []*run // sorted
	spills int    // chunks written
	buf    []byte
	hdr    []byte
}

// close closes the files still open (after an error; nil entries are
// files already closed).
func (s *spiller) close() {
	for _, r := range append(s.chunks, s.runs...) {
		if r != nil {
			r.close()
		}
	}
}

// spill writes the rows of t, in input order, to a new chunk.
func (s *spiller) spill(t *table) error {
	c, err := newRun(s.dir)
	if err != nil {
		return err
	}
	s.chunks = append(s.chunks, c)
	s.spills++
	s.first = append(s.first, t.base)
	for r := int32(0); int(r) < t.rows; r++ {
		s.buf = t.appendRow(s.buf[:0], r)
		if s.hdr, err = c.put(s.hdr, 0, uint64(t.base)+uint64(r), s.buf); err != nil {
			return err
		}
	}
	return nil
}

// sortRun writes the rows of t sorted by (key, row) as a run; rows are
// numbered from base.
func (s *spiller) sortRun(t *table, base int64, spatial bool, extent [4]float64) error {
	keys := t.hilbertKeys(spatial, extent)
	idx := make([]uint64, t.rows)
	for i, k := range keys {
		idx[i] = k<<32 | uint64(i)
	}
	keys = nil
	slices.Sort(idx)
	r, err := newRun(s.dir)
	if err != nil {
		return err
	}
	s.runs = append(s.runs, r)
	for _, p := range idx {
		row := int32(uint32(p))
		s.buf = t.appendRow(s.buf[:0], row)
		if s.hdr, err = r.put(s.hdr, p>>32, uint64(base)+uint64(row), s.buf); err != nil {
			return err
		}
	}
	return nil
}

// sortChunks turns every chunk into a sorted run, one chunk in memory at
// a time (scratch is reused for each).
func (s *spiller) sortChunks(scratch *table, spatial bool, extent [4]float64) error {
	for i, c := range s.chunks {
		rr, err := c.reader()
		if err != nil {
			return err
		}
		scratch.reset()
		for {
			err := rr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if err := scratch.readRow(rr.body); err != nil {
				return fmt.Errorf("geoparquet.Write: spill: %w", err)
			}
		}
		c.close()
		s.chunks[i] = nil
		if err := s.sortRun(scratch, s.first[i], spatial, extent); err != nil {
			return err
		}
	}
	s.chunks = nil
	return nil
}

// mergeHeap orders run readers by (key, row).
type mergeHeap []*runReader

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].key != h[j].key {
		return h[i].key < h[j].key
	}
	return h[i].row < h[j].row
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// merge reads runs in (key, row) order and hands each record to emit; the
// runs are closed, whatever happens.
func merge(runs []*run, emit func(rr *runReader) error) error {
	defer func() {
		for _, r := range runs {
			r.close()
		}
	}()
	var h mergeHeap
	for _, r := range runs {
		rr, err := r.reader()
		if err != nil {
			return err
		}
		err = rr.next()
		if err == io.EOF {
			continue
		}
		if err != nil {
			return err
		}
		h = append(h, rr)
	}
	heap.Init(&h)
	for len(h) > 0 {
		rr := h[0]
		if err := emit(rr); err != nil {
			return err
		}
		err := rr.next()
		switch {
		case err == io.EOF:
			heap.Pop(&h)
		case err != nil:
			return err
		default:
			heap.Fix(&h, 0)
		}
	}
	return nil
}

// reduceRuns merges runs mergeFanIn at a time until at most mergeFanIn
// are left.
func (s *spiller) reduceRuns() error {
	for len(s.runs) > mergeFanIn {
		group := s.runs[:mergeFanIn]
		out, err := newRun(s.dir)
		if err != nil {
			return err
		}
		rest := append([]*run{}, s.runs[mergeFanIn:]...)
		s.runs = append(rest, out)
		err = merge(group, func(rr *runReader) error {
			var err error
			s.hdr, err = out.put(s.hdr, rr.key, rr.row, rr.body)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// write finishes the external sort and writes the row groups of
// groupRows rows: last holds the rows read since the last spill (and the
// layer's types and extent). As in memory, the (key, row) order picks the
// rows of each group and the rows of a group are written in input order.
func (s *spiller) write(last *table, spatial bool, groupRows int, writeGroup func(g *table, idx []int32) error) error {
	extent := last.extent
	if err := s.sortRun(last, last.base, spatial, extent); err != nil {
		return err
	}
	// last is now scratch for the chunks, one at a time.
	if err := s.sortChunks(last, spatial, extent); err != nil {
		return err
	}
	last.reset()
	if err := s.reduceRuns(); err != nil {
		return err
	}
	g := &table{geomOffs: []int64{0}, cols: make([]*column, len(last.cols))}
	for i, c := range last.cols {
		g.cols[i] = newColumn(c.f, c.as)
	}
	idx := make([]int32, 0, groupRows)
	// inputRow is each held row's input row number and position.
	type held struct {
		row uint64
		pos int32
	}
	inputRow := make([]held, 0, groupRows)
	flush := func() error {
		slices.SortFunc(inputRow, func(a, b held) int { return cmp.Compare(a.row, b.row) })
		idx = idx[:0]
		for _, h := range inputRow {
			idx = append(idx, h.pos)
		}
		err := writeGroup(g, idx)
		g.reset()
		inputRow = inputRow[:0]
		return err
	}
	runs := s.runs
	s.runs = nil
	err := merge(runs, func(rr *runReader) error {
		inputRow = append(inputRow, held{rr.row, int32(g.rows)})
		if err := g.readRow(rr.body); err != nil {
			return fmt.Errorf("geoparquet.Write: spill: %w", err)
		}
		if g.rows == groupRows {
			return flush()
		}
		return nil
	})
	if err == nil && g.rows > 0 {
		err = flush()
	}
	return err
}
