#!/usr/bin/env python3
"""Prints a built layer zip's sizes and checks them against layers/gdal/manifest.json.

    layer-report.py build/gdal-layer-arm64.zip layers/gdal/manifest.json [build/convert/bootstrap]

Budgets (manifest size_budget): the unzipped layer, the zip, and, with the bootstrap given, layer
plus function under Lambda's 262,144,000-byte unzipped limit with at least 30 MB to spare, and the
function within function_reserve_bytes. Also the /opt layout the manifest names.
"""
import json
import os
import sys
import zipfile


def main(zpath, mpath, bootstrap=None):
    m = json.load(open(mpath))
    b = m["size_budget"]
    z = zipfile.ZipFile(zpath)
    unzipped = sum(i.file_size for i in z.infolist())
    zipped = os.path.getsize(zpath)
    libs = sorted({n.split("/")[-1] for n in z.namelist() if n.startswith("lib/") and ".so" in n and "/gconv/" not in n})
    print(f"layer: {zpath}: {zipped:,} bytes zipped ({zipped/2**20:.1f} MiB), {unzipped:,} bytes unzipped ({unzipped/2**20:.1f} MiB), {len(libs)} libraries in lib/")
    print(f"  budget: layer {b['layer_unzipped_max_bytes']:,} unzipped, {b['layer_zip_max_bytes']:,} zipped")
    bad = []
    if unzipped > b["layer_unzipped_max_bytes"]:
        bad.append(f"unzipped {unzipped:,} > {b['layer_unzipped_max_bytes']:,}")
    if zipped > b["layer_zip_max_bytes"]:
        bad.append(f"zipped {zipped:,} > {b['layer_zip_max_bytes']:,}")
    if bootstrap:
        fn = os.path.getsize(bootstrap)
        total = unzipped + fn
        spare = b["lambda_unzipped_limit_bytes"] - total
        print(f"  with {bootstrap} ({fn:,} bytes): {total:,} of Lambda's {b['lambda_unzipped_limit_bytes']:,} unzipped, {spare:,} bytes ({spare/1e6:.1f} MB) to spare")
        if fn > b["function_reserve_bytes"]:
            bad.append(f"the function is {fn:,} bytes, over its reserve of {b['function_reserve_bytes']:,}")
        if spare < 30_000_000:
            bad.append(f"layer + function leave {spare:,} bytes, less than 30 MB")
    names = set(z.namelist())
    for p in m["layout"]:
        if not any(n.startswith(p) for n in names):
            bad.append(f"layer lacks {p}")
    if bad:
        sys.exit("layer over budget or incomplete: " + "; ".join(bad))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
