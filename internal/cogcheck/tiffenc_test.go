package cogcheck

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// A minimal TIFF/BigTIFF writer for test fixtures. It writes structure only:
// every block holds a few uncompressed bytes, which is all a structural
// validator (this package or GDAL's script) looks at.

type tImage struct {
	w, h    int
	tw, th  int // tile size; tw == 0 means striped with th rows per strip (0: one strip)
	subfile uint32
	spp     int
	photo   int // PhotometricInterpretation; 1 (min-is-black) when 0
}

type tFile struct {
	big, be bool
	// ghost is the structural metadata text after the header; "" for none.
	ghost string
	// leaderTrailer writes a 4-byte little-endian size leader before each
	// block and repeats its last 4 bytes after it, as GDAL's COG driver does.
	leaderTrailer bool
	images        []tImage // IFD chain order; images[0] is the main image
	// dataOrder lists image indices in the order their blocks are written;
	// nil means last IFD first (smallest overview first, main last).
	dataOrder     []int
	ifdsAfterData bool
	blockBytes    int // payload bytes per block; 8 when 0
}

func goodCOG() tFile {
	return tFile{
		ghost:         cogGhost,
		leaderTrailer: true,
		images: []tImage{
			{w: 1024, h: 1024, tw: 512, th: 512},
			{w: 512, h: 512, tw: 512, th: 512, subfile: 1},
		},
	}
}

const cogGhost = "LAYOUT=IFDS_BEFORE_DATA\nBLOCK_ORDER=ROW_MAJOR\nBLOCK_LEADER=SIZE_AS_UINT4\n" +
	"BLOCK_TRAILER=LAST_4_BYTES_REPEATED\nKNOWN_INCOMPATIBLE_EDITION=NO\n "

type tEntry struct {
	tag, typ uint16
	vals     []uint64
}

func (f tFile) encode() []byte {
	var bo binary.ByteOrder = binary.LittleEndian
	if f.be {
		bo = binary.BigEndian
	}
	hdrLen := 8
	entLen, cntLen, nextLen, inline := 12, 2, 4, 4
	offType := uint16(4) // LONG
	if f.big {
		hdrLen, entLen, cntLen, nextLen, inline = 16, 20, 8, 8, 8
		offType = 16 // LONG8
	}
	payload := f.blockBytes
	if payload == 0 {
		payload = 8
	}
	ghost := ""
	if f.ghost != "" {
		ghost = fmt.Sprintf("GDAL_STRUCTURAL_METADATA_SIZE=%06d bytes\n", len(f.ghost)) + f.ghost
	}

	nblocks := make([]int, len(f.images))
	for i, im := range f.images {
		bw, bh := im.tw, im.th
		if bw == 0 {
			bw = im.w
			if bh == 0 {
				bh = im.h
			}
		}
		nblocks[i] = ((im.w + bw - 1) / bw) * ((im.h + bh - 1) / bh)
	}
	typSize := func(t uint16) int {
		switch t {
		case 3:
			return 2
		case 4:
			return 4
		}
		return 8
	}
	entries := func(i int, offs, counts []uint64) []tEntry {
		im := f.images[i]
		photo := im.photo
		if photo == 0 {
			photo = 1
		}
		spp := max(im.spp, 1)
		es := []tEntry{
			{256, 4, []uint64{uint64(im.w)}},
			{257, 4, []uint64{uint64(im.h)}},
			{258, 3, repeat(8, spp)},
			{259, 3, []uint64{1}},
			{262, 3, []uint64{uint64(photo)}},
			{277, 3, []uint64{uint64(spp)}},
			{284, 3, []uint64{1}},
		}
		if im.subfile != 0 {
			es = append(es, tEntry{254, 4, []uint64{uint64(im.subfile)}})
		}
		if im.tw != 0 {
			es = append(es, tEntry{322, 4, []uint64{uint64(im.tw)}}, tEntry{323, 4, []uint64{uint64(im.th)}},
				tEntry{324, offType, offs}, tEntry{325, offType, counts})
		} else {
			rps := im.th
			if rps == 0 {
				rps = im.h
			}
			es = append(es, tEntry{278, 4, []uint64{uint64(rps)}}, tEntry{273, offType, offs}, tEntry{279, offType, counts})
		}
		sort.Slice(es, func(a, b int) bool { return es[a].tag < es[b].tag })
		return es
	}
	// Size of IFD i including its out-of-line arrays.
	ifdSize := func(i int) int {
		es := entries(i, make([]uint64, nblocks[i]), make([]uint64, nblocks[i]))
		n := cntLen + len(es)*entLen + nextLen
		for _, e := range es {
			if sz := len(e.vals) * typSize(e.typ); sz > inline {
				n += sz + sz%2
			}
		}
		return n
	}
	blockLen := payload
	if f.leaderTrailer {
		blockLen += 8
	}
	dataLen := 0
	for _, n := range nblocks {
		dataLen += n * blockLen
	}
	ifdTotal := 0
	for i := range f.images {
		ifdTotal += ifdSize(i)
	}

	start := hdrLen + len(ghost)
	start += start % 2
	ifdStart, dataStart := start, start+ifdTotal
	if f.ifdsAfterData {
		dataStart, ifdStart = start, start+dataLen
	}

	// Place the data.
	order := f.dataOrder
	if order == nil {
		for i := len(f.images) - 1; i >= 0; i-- {
			order = append(order, i)
		}
	}
	offs := make([][]uint64, len(f.images))
	counts := make([][]uint64, len(f.images))
	for i := range f.images {
		offs[i] = make([]uint64, nblocks[i])
		counts[i] = make([]uint64, nblocks[i])
	}
	buf := make([]byte, ifdStart+ifdTotal)
	if dataStart+dataLen > len(buf) {
		buf = make([]byte, dataStart+dataLen)
	}
	pos := dataStart
	for _, i := range order {
		for b := range nblocks[i] {
			if f.leaderTrailer {
				binary.LittleEndian.PutUint32(buf[pos:], uint32(payload))
				pos += 4
			}
			offs[i][b] = uint64(pos)
			counts[i][b] = uint64(payload)
			for k := range payload {
				buf[pos+k] = byte(i*31 + b*7 + k)
			}
			pos += payload
			if f.leaderTrailer {
				copy(buf[pos:pos+4], buf[pos-4:pos])
				pos += 4
			}
		}
	}

	// Header and ghost.
	if f.be {
		copy(buf, "MM")
	} else {
		copy(buf, "II")
	}
	if f.big {
		bo.PutUint16(buf[2:], 43)
		bo.PutUint16(buf[4:], 8)
		bo.PutUint64(buf[8:], uint64(ifdStart))
	} else {
		bo.PutUint16(buf[2:], 42)
		bo.PutUint32(buf[4:], uint32(ifdStart))
	}
	copy(buf[hdrLen:], ghost)

	// IFDs.
	pos = ifdStart
	for i := range f.images {
		es := entries(i, offs[i], counts[i])
		p := pos
		if f.big {
			bo.PutUint64(buf[p:], uint64(len(es)))
		} else {
			bo.PutUint16(buf[p:], uint16(len(es)))
		}
		p += cntLen
		extra := pos + cntLen + len(es)*entLen + nextLen
		for _, e := range es {
			bo.PutUint16(buf[p:], e.tag)
			bo.PutUint16(buf[p+2:], e.typ)
			var val []byte
			if f.big {
				bo.PutUint64(buf[p+4:], uint64(len(e.vals)))
				val = buf[p+12 : p+20]
			} else {
				bo.PutUint32(buf[p+4:], uint32(len(e.vals)))
				val = buf[p+8 : p+12]
			}
			sz := typSize(e.typ)
			dst := val
			if len(e.vals)*sz > inline {
				if f.big {
					bo.PutUint64(val, uint64(extra))
				} else {
					bo.PutUint32(val, uint32(extra))
				}
				dst = buf[extra : extra+len(e.vals)*sz]
				extra += len(e.vals)*sz + (len(e.vals)*sz)%2
			}
			for k, v := range e.vals {
				switch sz {
				case 2:
					bo.PutUint16(dst[k*2:], uint16(v))
				case 4:
					bo.PutUint32(dst[k*4:], uint32(v))
				case 8:
					bo.PutUint64(dst[k*8:], v)
				}
			}
			p += entLen
		}
		next := 0
		if i+1 < len(f.images) {
			next = pos + ifdSize(i)
		}
		if f.big {
			bo.PutUint64(buf[p:], uint64(next))
		} else {
			bo.PutUint32(buf[p:], uint32(next))
		}
		pos += ifdSize(i)
	}
	return buf
}

func repeat(v uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
