"""Driver of the end-to-end benchmark (scripts/bench-e2e/bench-e2e.sh).

    bench_e2e.py generate DIR N            N small striped GeoTIFFs in DIR
    bench_e2e.py upload DIR BUCKET PREFIX  create BUCKET, upload DIR's files under PREFIX
    bench_e2e.py mkbucket BUCKET           create BUCKET
    bench_e2e.py seed SRC PREFIX DST       the source document's Python path over every
                                           object under s3://SRC/PREFIX into s3://DST
    bench_e2e.py summarize FILE LABEL [LOAD_START_JSON [JSON_OUT]]  the figure line (CPU ratio first, load average) from "geomigrate python geomigrate-cpu python-cpu" pairs; JSON_OUT: the pair for geomigrate-bench -include

Run with /usr/bin/python3 (Debian's rasterio, boto3, tenacity). boto3 1.26
ignores AWS_ENDPOINT_URL_S3, so the S3 clients the seed creates are pointed at
the stand-in here, path-style; the seed's own code is untouched.
"""

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import boto3
from botocore.config import Config

_client = boto3.client


def _local_client(service, *args, **kwargs):
    if service == "s3" and os.environ.get("AWS_ENDPOINT_URL_S3"):
        kwargs.setdefault("endpoint_url", os.environ["AWS_ENDPOINT_URL_S3"])
        kwargs.setdefault("config", Config(s3={"addressing_style": "path"}))
    return _client(service, *args, **kwargs)


boto3.client = _local_client


def generate(out, n):
    import numpy as np
    import rasterio
    from rasterio.transform import from_origin

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    w = h = 1100  # ~1.2 MB of Byte pixels, one strip per rows-per-strip GDAL picks
    rng = np.random.default_rng(14)
    yy, xx = np.mgrid[0:h, 0:w]
    base = (20 + 0.1 * xx + 0.05 * yy + 12 * np.sin(xx / 37) * np.cos(yy / 53)).astype(np.float64)
    for i in range(n):
        px = np.clip(base + i % 50 + rng.integers(0, 4, size=(h, w)), 1, 254).astype("uint8")
        with rasterio.open(out / f"tile_{i:04d}.tif", "w", driver="GTiff", width=w, height=h, count=1,
                           dtype="uint8", crs="EPSG:32633", nodata=0,
                           transform=from_origin(500000 + i * w * 10, 5100000, 10, 10)) as dst:
            dst.write(px, 1)


def upload(src, bucket, prefix):
    s3 = boto3.client("s3", region_name=os.environ.get("AWS_REGION", "us-east-1"))
    s3.create_bucket(Bucket=bucket)
    for p in sorted(Path(src).iterdir()):
        s3.upload_file(str(p), bucket, prefix + p.name)


def seed(src_bucket, prefix, dst_bucket):
    # Imported here: the seed's module creates its logger at import.
    import seed_migrate

    region = os.environ.get("AWS_REGION", "us-east-1")
    s3 = boto3.client("s3", region_name=region)
    s3.create_bucket(Bucket=dst_bucket)
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=src_bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    ok = 0
    with tempfile.TemporaryDirectory() as tmp:
        for key in keys:
            # The seed converts a local file: fetch the object first, as a
            # bucket-to-bucket migration with it has to.
            local = os.path.join(tmp, Path(key).name)
            s3.download_file(src_bucket, key, local)
            res = seed_migrate.migrate_raster_to_cog(local, dst_bucket, "out/" + key, region=region)
            os.remove(local)
            ok += res["status"] == "success"
    if ok != len(keys) or not keys:
        sys.exit(f"seed path: {ok} of {len(keys)} files migrated")
    print(f"seed path: {ok} files migrated")


def loadavg():
    """The 1, 5 and 15-minute load averages (/proc/loadavg), or None."""
    try:
        one, five, fifteen = Path("/proc/loadavg").read_text().split()[:3]
        return {"1m": float(one), "5m": float(five), "15m": float(fifteen)}
    except (OSError, ValueError):
        return None


def median_range(xs, unit=""):
    u = f" {unit}" if unit else ""
    return f"{statistics.median(xs):.3f}{u} ({min(xs):.3f}..{max(xs):.3f})"


def summarize(path, label, load_start_path=None, json_out=None):
    """The figure line, CPU ratio first; with json_out, the pair and its
    figures as a make bench report fragment (benchpair.Report's
    experiments and figures) for geomigrate-bench -include."""
    pairs = [tuple(map(float, line.split())) for line in Path(path).read_text().splitlines() if line.strip()]
    if not pairs or not all(len(p) >= 4 for p in pairs):
        sys.exit("bench-e2e: a pair lacks its wall or CPU times")
    gm, py = [p[0] for p in pairs], [p[1] for p in pairs]
    gm_cpu, py_cpu = [p[2] for p in pairs], [p[3] for p in pairs]
    ratios = [p[0] / p[1] for p in pairs]
    cpu_ratios = [p[2] / p[3] for p in pairs]
    start = json.loads(Path(load_start_path).read_text()) if load_start_path else None
    end = loadavg()

    def fmt(l):
        return "not measured" if l is None else f"{l['1m']:.2f} / {l['5m']:.2f} / {l['15m']:.2f}"

    print(f"figure: {label} cpu_ratio={median_range(cpu_ratios)} wall_ratio={median_range(ratios)} "
          f"(geomigrate/seed; wall {1 / statistics.median(ratios):.2f}x faster) "
          f"cpu geomigrate={median_range(gm_cpu, 's')} seed={median_range(py_cpu, 's')} "
          f"wall geomigrate={median_range(gm, 's')} seed={median_range(py, 's')} pairs={len(pairs)} "
          f"load average 1/5/15 min {fmt(start)} -> {fmt(end)}")
    if json_out:
        subject = f"`geomigrate migrate s3://… --backend aws` on the S3 and DynamoDB stand-ins (scripts/bench-e2e), {label}"
        anchor = "the seed's Python path (rasterio + boto3, sequential)"
        report = {
            "experiments": [{"key": label, "title": f"end to end, {label}, --backend aws against the seed's Python path",
                             "subject": subject, "anchor": anchor,
                             "a": {"wall_s": gm, "cpu_s": gm_cpu}, "b": {"wall_s": py, "cpu_s": py_cpu},
                             "load_start": start, "load_end": end}],
            "figures": [{"key": label + "-cpu", "title": f"end to end, {label}, CPU time", "unit": "s",
                         "subject": subject + "; user + system CPU of each side's process tree (GNU time), the servers' not counted.",
                         "values": gm_cpu, "anchor": {"name": "seed Python path", "values": py_cpu}},
                        {"key": label + "-wall", "title": f"end to end, {label}, wall time", "unit": "s",
                         "subject": "the same runs, wall time.", "values": gm, "anchor": {"name": "seed Python path", "values": py}}],
        }
        Path(json_out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "generate":
        generate(args[0], int(args[1]))
    elif cmd == "upload":
        upload(*args)
    elif cmd == "mkbucket":
        boto3.client("s3", region_name=os.environ.get("AWS_REGION", "us-east-1")).create_bucket(Bucket=args[0])
    elif cmd == "seed":
        sys.path.insert(0, str(Path(__file__).parent))
        seed(*args)
    elif cmd == "summarize":
        summarize(*args)
    else:
        sys.exit(__doc__)
