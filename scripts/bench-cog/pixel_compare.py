#!/usr/bin/python3
"""Compares every pixel of two rasters, strip by strip: the outside check
that make bench's second COG anchor runs after gdal_translate, so that the
anchor does the work geomigrate's verified conversion does (convert, then
prove the output holds the source's pixels).

    pixel_compare.py SRC DST

Exit 0 when both have the same size, bands, data types and nodata, and
every band's pixels (with their masks) are equal; 1 otherwise, saying where
they first differ.
"""
import sys

import numpy as np
import rasterio
from rasterio.windows import Window

STRIP_ROWS = 512


def main(src_path, dst_path):
    with rasterio.open(src_path) as src, rasterio.open(dst_path) as dst:
        same = (src.width, src.height, src.count, src.dtypes, src.nodatavals) == \
               (dst.width, dst.height, dst.count, dst.dtypes, dst.nodatavals)
        if not same:
            sys.exit(f"pixel_compare: {src_path} and {dst_path} differ in size, bands, types or nodata")
        for row in range(0, src.height, STRIP_ROWS):
            w = Window(0, row, src.width, min(STRIP_ROWS, src.height - row))
            a, b = src.read(window=w, masked=True), dst.read(window=w, masked=True)
            if not (np.array_equal(np.ma.getmaskarray(a), np.ma.getmaskarray(b)) and
                    np.array_equal(a.filled(0), b.filled(0), equal_nan=True)):
                sys.exit(f"pixel_compare: pixels differ in rows {row}–{row + w.height - 1}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
