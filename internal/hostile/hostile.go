// Package hostile makes small input files that declare huge structures: the
// size bombs that the conversion budgets must refuse from their headers,
// before GDAL allocates anything for them. Tests of the engine and of the
// whole pipeline (under a memory limit) share them.
//
// The TIFFs are hand-encoded because no library writes deliberately
// malformed files: each is a classic little-endian TIFF of one IFD, its
// out-of-line values and 64 bytes of zeros, georeferenced in EPSG:4326 so
// that nothing but its declared sizes can refuse it.
package hostile

import (
	"encoding/binary"
	"math"
	"sort"
)

// File is one hostile input: a file name, what it declares, its bytes.
type File struct {
	Name        string
	Description string
	Data        []byte
}

// SizeBombs are TIFFs of a few hundred bytes, each declaring a structure
// that would need gigabytes once decoded (tens of thousands of bands, a
// tile or strip of billions of pixels, a width of 2^31).
func SizeBombs() []File {
	const short, long = 3, 4
	base := func(w, h, spp uint32, extra ...tiffEntry) []tiffEntry {
		es := []tiffEntry{
			{tag: 256, typ: long, count: 1, value: w}, {tag: 257, typ: long, count: 1, value: h},
			{tag: 258, typ: short, count: 1, value: 8}, {tag: 259, typ: short, count: 1, value: 1},
			{tag: 262, typ: short, count: 1, value: 1}, {tag: 277, typ: short, count: 1, value: spp},
			{tag: 284, typ: short, count: 1, value: 1},
		}
		return append(append(es, extra...), geoTIFFTags()...)
	}
	strips := func(rows uint32) []tiffEntry {
		return []tiffEntry{{tag: 273, typ: long, count: 1, value: zerosOffset}, {tag: 278, typ: long, count: 1, value: rows}, {tag: 279, typ: long, count: 1, value: 64}}
	}
	tiles := func(tw, th uint32) []tiffEntry {
		return []tiffEntry{{tag: 322, typ: long, count: 1, value: tw}, {tag: 323, typ: long, count: 1, value: th}, {tag: 324, typ: long, count: 1, value: zerosOffset}, {tag: 325, typ: long, count: 1, value: 64}}
	}
	deflated := func(es []tiffEntry) []tiffEntry {
		for i := range es {
			if es[i].tag == 259 {
				es[i].value = 8
			}
		}
		return es
	}
	bombs := []struct {
		name, desc string
		entries    []tiffEntry
	}{
		{"bands-60000.tif", "60,000 bands, 64 x 64", base(64, 64, 60000, strips(64)...)},
		{"bands-60000-tiled.tif", "60,000 bands, tiled", base(256, 256, 60000, tiles(256, 256)...)},
		{"tile-1048576.tif", "tile of 1,048,576 x 1,048,576", base(1<<20, 1<<20, 1, tiles(1<<20, 1<<20)...)},
		{"tile-65536.tif", "tile of 65,536 x 65,536 on a 4,096 x 4,096 image", base(4096, 4096, 1, tiles(1<<16, 1<<16)...)},
		{"strip-deflated-60000.tif", "deflated strip of 60,000 x 60,000", deflated(base(60000, 60000, 1, strips(60000)...))},
		{"width-2pow31.tif", "width of 2^31", base(1<<31, 1, 1, strips(1)...)},
	}
	out := make([]File, len(bombs))
	for i, b := range bombs {
		out[i] = File{Name: b.name, Description: b.desc, Data: encodeTIFF(b.entries)}
	}
	return out
}

// tiffEntry is one IFD entry: value inline, or data stored after the IFD
// (count and type must agree with it).
type tiffEntry struct {
	tag, typ uint16
	count    uint32
	value    uint32
	data     []byte
}

// zerosOffset as a value points the entry at the 64 bytes of zeros after
// the IFD and its data.
const zerosOffset = 0xFFFFFFFF

// encodeTIFF encodes one IFD (entries sorted by tag), its out-of-line
// values and 64 bytes of zeros.
func encodeTIFF(entries []tiffEntry) []byte {
	sort.Slice(entries, func(i, j int) bool { return entries[i].tag < entries[j].tag })
	le := binary.LittleEndian
	next := uint32(8 + 2 + 12*len(entries) + 4)
	var extra []byte
	offsets := make([]uint32, len(entries))
	for i, e := range entries {
		if e.data != nil {
			offsets[i] = next + uint32(len(extra))
			extra = append(extra, e.data...)
		}
	}
	zeros := next + uint32(len(extra))
	buf := []byte{'I', 'I', 42, 0, 8, 0, 0, 0}
	buf = le.AppendUint16(buf, uint16(len(entries)))
	for i, e := range entries {
		v := e.value
		switch {
		case e.data != nil:
			v = offsets[i]
		case v == zerosOffset:
			v = zeros
		}
		buf = le.AppendUint16(buf, e.tag)
		buf = le.AppendUint16(buf, e.typ)
		buf = le.AppendUint32(buf, e.count)
		if e.typ == 3 && e.data == nil {
			buf = le.AppendUint16(buf, uint16(v))
			buf = le.AppendUint16(buf, 0)
		} else {
			buf = le.AppendUint32(buf, v)
		}
	}
	buf = le.AppendUint32(buf, 0)
	buf = append(buf, extra...)
	return append(buf, make([]byte, 64)...)
}

// geoTIFFTags georeference a TIFF in EPSG:4326 (ModelPixelScale,
// ModelTiepoint, GeoKeyDirectory).
func geoTIFFTags() []tiffEntry {
	le := binary.LittleEndian
	doubles := func(vs ...float64) []byte {
		var b []byte
		for _, v := range vs {
			b = le.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	shorts := func(vs ...uint16) []byte {
		var b []byte
		for _, v := range vs {
			b = le.AppendUint16(b, v)
		}
		return b
	}
	keys := shorts(1, 1, 0, 3, 1024, 0, 1, 2, 1025, 0, 1, 1, 2048, 0, 1, 4326)
	return []tiffEntry{
		{tag: 33550, typ: 12, count: 3, data: doubles(0.001, 0.001, 0)},
		{tag: 33922, typ: 12, count: 6, data: doubles(0, 0, 0, 10, 50, 0)},
		{tag: 34735, typ: 3, count: uint32(len(keys) / 2), data: keys},
	}
}
