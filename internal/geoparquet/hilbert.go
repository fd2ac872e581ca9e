package geoparquet

// hilbertOrder is the order of the Hilbert curve used for sorting: a
// 2^16 × 2^16 grid over the layer extent, giving a 32-bit index.
const hilbertOrder = 16

// hilbertIndex maps a cell (x, y) of a 2^16 × 2^16 grid to its distance
// along the Hilbert curve (the classic iterative xy→d conversion).
func hilbertIndex(x, y uint32) uint64 {
	const n = uint32(1) << hilbertOrder
	var d uint64
	for s := n / 2; s > 0; s /= 2 {
		var rx, ry uint32
		if x&s != 0 {
			rx = 1
		}
		if y&s != 0 {
			ry = 1
		}
		d += uint64(s) * uint64(s) * uint64((3*rx)^ry)
		if ry == 0 {
			if rx == 1 {
				x = n - 1 - x
				y = n - 1 - y
			}
			x, y = y, x
		}
	}
	return d
}

// gridCell scales v from [lo, hi] to a cell in [0, 2^16-1].
func gridCell(v, lo, hi float64) uint32 {
	const maxCell = float64(uint32(1)<<hilbertOrder - 1)
	if !(hi > lo) {
		return 0
	}
	f := (v - lo) / (hi - lo) * maxCell
	switch {
	case f <= 0 || f != f:
		return 0
	case f >= maxCell:
		return uint32(maxCell)
	}
	return uint32(f)
}
