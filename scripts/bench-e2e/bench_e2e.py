"""Driver of the end-to-end benchmark (scripts/bench-e2e/bench-e2e.sh).

    bench_e2e.py generate DIR N [DTYPE]    N small striped GeoTIFFs in DIR (uint8, the
                                           end-to-end set; int16 or float32 for cog-defaults.sh)
    bench_e2e.py upload DIR BUCKET PREFIX  create BUCKET, upload DIR's files under PREFIX
    bench_e2e.py mkbucket BUCKET           create BUCKET
    bench_e2e.py seed SRC PREFIX DST       the source document's Python path over every
                                           object under s3://SRC/PREFIX into s3://DST
    bench_e2e.py side S3LOG S3OFF DDBLOG DDBOFF BUCKET N OUT
                                           one run's S3 requests by operation, from the S3 stand-in's
                                           access log S3LOG after byte S3OFF, its DynamoDB requests
                                           from dynalite's request log the same way ("-": not
                                           measured), and the bytes its N files left in BUCKET, as JSON
    bench_e2e.py summarize FILE LABEL [LOAD_START_JSON [JSON_OUT]]  the figure line (CPU ratio first, load average) from "geomigrate python geomigrate-cpu python-cpu [servers' CPU: S3 DynamoDB during geomigrate, S3 DynamoDB during python [side JSON of geomigrate, of python]]" pairs; JSON_OUT: the pair for geomigrate-bench -include
    bench_e2e.py convert DIR OUT           the seed's migrate_raster_to_cog over every file of DIR, its
                                           uploads copied into OUT instead of S3; prints the loop's CPU
                                           (user + system, start-up and imports left out) and bytes
    bench_e2e.py tabulate FILE             the table of cog-defaults.sh from its rounds' lines

Run with /usr/bin/python3 (Debian's rasterio, boto3, tenacity). boto3 1.26
ignores AWS_ENDPOINT_URL_S3, so the S3 clients the seed creates are pointed at
the stand-in here, path-style; the seed's own code is untouched.
"""

import json
import math
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


def generate(out, n, dtype="uint8"):
    import numpy as np
    import rasterio
    from rasterio.transform import from_origin

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    w = h = 1100  # ~1.2 MB of Byte pixels, one strip per rows-per-strip GDAL picks
    rng = np.random.default_rng(14)
    yy, xx = np.mgrid[0:h, 0:w]
    base = (20 + 0.1 * xx + 0.05 * yy + 12 * np.sin(xx / 37) * np.cos(yy / 53)).astype(np.float64)
    nodata = {"uint8": 0, "int16": -32768, "float32": -9999}[dtype]
    for i in range(n):
        if dtype == "uint8":
            px = np.clip(base + i % 50 + rng.integers(0, 4, size=(h, w)), 1, 254).astype("uint8")
        elif dtype == "int16":  # a terrain-like field in metres, 3 bits of noise
            px = (1500 + 400 * np.sin(xx / 90 + i) * np.cos(yy / 130) + rng.integers(0, 8, size=(h, w))).astype("int16")
        else:  # float32: a smooth field with fine-grained noise
            px = (800 + 300 * np.sin(xx / 410 + i) * np.cos(yy / 370) + 0.05 * yy + 4 * rng.random((h, w))).astype("float32")
        with rasterio.open(out / f"tile_{i:04d}.tif", "w", driver="GTiff", width=w, height=h, count=1,
                           dtype=dtype, crs="EPSG:32633", nodata=nodata,
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


def _settled_size(log):
    """The log's size once it stops growing: a request may be logged after
    its response was sent, so the run's last ones may still be on their way."""
    import time
    size = -1
    for _ in range(50):
        now = os.path.getsize(log)
        if now == size:
            break
        size = now
        time.sleep(0.2)
    return size


def _count_ops(log, offset, op_of_line):
    """The operations logged after byte offset, counted by name."""
    size = _settled_size(log)
    ops = {}
    with open(log, "rb") as f:
        f.seek(offset)
        for line in f.read(size - offset).decode("utf-8", "replace").splitlines():
            op = op_of_line(line)
            if op:
                ops[op] = ops.get(op, 0) + 1
    return ops


def _s3_op(line):
    # versitygw's access log (--access-log) names the operation "s3_PutObject" and so on.
    import re
    m = re.search(r" s3_(\w+) ", line)
    return m.group(1) if m else None


def side(s3_log, s3_offset, ddb_log, ddb_offset, bucket, n, out):
    # Counted before the listing below, which is not the run's.
    s3_ops = _count_ops(s3_log, int(s3_offset), _s3_op) if "-" not in (s3_log, s3_offset) else None
    # scripts/dynalite-server.js writes one operation name a line.
    ddb_ops = _count_ops(ddb_log, int(ddb_offset), lambda l: l.strip() or None) if "-" not in (ddb_log, ddb_offset) else None
    s3 = boto3.client("s3", region_name=os.environ.get("AWS_REGION", "us-east-1"))
    raster = total = objects = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            objects += 1
            total += o["Size"]
            if o["Key"].endswith(".tif"):
                raster += o["Size"]
    Path(out).write_text(json.dumps({"files": int(n), "s3_requests": s3_ops, "dynamodb_requests": ddb_ops,
                                     "bytes": {"rasters": raster, "all": total, "objects": objects}}) + "\n")


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


class _LocalS3:
    """The two calls migrate_raster_to_cog makes, on a local directory: no
    object exists yet, and an upload is a copy."""

    def __init__(self, out):
        self.out = Path(out)

    def head_object(self, Bucket, Key):
        from botocore.exceptions import ClientError
        raise ClientError({"Error": {"Code": "404"}}, "HeadObject")

    def upload_file(self, path, bucket, key, ExtraArgs=None):
        import shutil
        dst = self.out / key
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dst)


def convert(src, out):
    # The conversion floor of the seed's path, to set beside the engine's
    # (internal/gdal BenchmarkSmallRasterCOG): no network, no process start.
    import resource
    import seed_migrate

    local = _LocalS3(out)
    seed_migrate.boto3.client = lambda *a, **k: local
    files = sorted(Path(src).iterdir())
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    for p in files:
        res = seed_migrate.migrate_raster_to_cog(str(p), "local", "out/" + p.name)
        if res["status"] != "success":
            sys.exit(f"seed convert: {p}: {res}")
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    size = sum(f.stat().st_size for f in (Path(out) / "out").iterdir())
    print(f"seed convert: files={len(files)} cpu-ms/file={1000 * cpu / len(files):.1f} "
          f"bytes/file={size / len(files):.0f}")


def tabulate(path):
    import re
    rounds = {}  # round -> {name: (cpu, bytes)}
    for line in Path(path).read_text().splitlines():
        m = re.match(r"round (\d+) (.*)", line)
        if not m:
            continue
        r, rest = int(m.group(1)), m.group(2)
        if rest.startswith("seed convert:"):
            name = "seed (DEFLATE 6, no predictor)"
            cpu, size = re.search(r"cpu-ms/file=([\d.]+)", rest), re.search(r"bytes/file=([\d.]+)", rest)
        else:
            name = re.match(r"BenchmarkSmallRasterCOG/(\S+?)(-\d+)?\s", rest).group(1)
            cpu, size = re.search(r"([\d.]+) cpu-ms/file", rest), re.search(r"([\d.]+) bytes/file", rest)
        rounds.setdefault(r, {})[name] = (float(cpu.group(1)), float(size.group(1)))
    seed = "seed (DEFLATE 6, no predictor)"
    names = list(dict.fromkeys(n for r in rounds.values() for n in r))
    print(f"| settings | CPU ms/file, median (range) | CPU ÷ seed's, median (range) | bytes/file | bytes ÷ seed's | rounds |")
    print("|---|---:|---:|---:|---:|---:|")
    for n in names:
        got = [(r[n], r.get(seed)) for r in rounds.values() if n in r]
        cpus = [g[0][0] for g in got]
        ratios = [g[0][0] / g[1][0] for g in got if g[1]]
        sizes = [g[0][1] for g in got]
        seed_size = statistics.median(r[seed][1] for r in rounds.values() if seed in r)
        print(f"| {n} | {statistics.median(cpus):.1f} ({min(cpus):.1f}–{max(cpus):.1f}) | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) | "
              f"{statistics.median(sizes):,.0f} | {statistics.median(sizes) / seed_size:.3f} | {len(got)} |")


_REQUESTS_MISSING = "no access log of the S3 stand-in (GEOMIGRATE_INTEGRATION_VERSITYGW_ACCESS_LOG, scripts/integration-up.sh)"


def _requests_per_file(sides, field="s3_requests"):
    """Each pair's requests per file (field: s3_requests or dynamodb_requests)
    on each side, and the median per file of each operation; None unless
    every pair counted both sides."""
    if not sides or any(s is None or s[0].get(field) is None or s[1].get(field) is None for s in sides):
        return None
    out = {}
    for name, i in (("gm", 0), ("py", 1)):
        runs = [s[i] for s in sides]
        out[name] = [sum(r[field].values()) / r["files"] for r in runs]
        ops = sorted({op for r in runs for op in r[field]})
        out[name + "_ops"] = {op: statistics.median(r[field].get(op, 0) / r["files"] for r in runs) for op in ops}
    return out


def _bytes_per_file(sides):
    """Each pair's raster bytes per file on each side (and all objects'),
    None unless every pair listed both sides."""
    if not sides or any(s is None for s in sides):
        return None
    out = {}
    for name, i in (("gm", 0), ("py", 1)):
        runs = [s[i] for s in sides]
        out[name] = [r["bytes"]["rasters"] / r["files"] for r in runs]
        out[name + "_all"] = [r["bytes"]["all"] / r["files"] for r in runs]
        out[name + "_objects"] = int(statistics.median(r["bytes"]["objects"] for r in runs))
    return out


def summarize(path, label, load_start_path=None, json_out=None):
    """The figure line, CPU ratio first; with json_out, the pair and its
    figures as a make bench report fragment (benchpair.Report's
    experiments and figures) for geomigrate-bench -include."""
    lines = [line.split() for line in Path(path).read_text().splitlines() if line.strip()]
    pairs = [tuple(map(float, f[:8])) for f in lines]
    # Each side's requests and bytes (the JSON of `side`), when the pair has them.
    sides = [tuple(json.loads(Path(x).read_text()) for x in f[8:10]) if len(f) >= 10 else None for f in lines]
    if not pairs or not all(len(p) >= 4 for p in pairs):
        sys.exit("bench-e2e: a pair lacks its wall or CPU times")
    gm, py = [p[0] for p in pairs], [p[1] for p in pairs]
    gm_cpu, py_cpu = [p[2] for p in pairs], [p[3] for p in pairs]
    ratios = [p[0] / p[1] for p in pairs]
    cpu_ratios = [p[2] / p[3] for p in pairs]
    # The servers' CPU during each side's runs (S3 + DynamoDB stand-ins),
    # when every pair has it.
    servers = None
    if all(len(p) >= 8 and not any(math.isnan(x) for x in p[4:8]) for p in pairs):
        servers = {"gm_s3": [p[4] for p in pairs], "gm_ddb": [p[5] for p in pairs],
                   "py_s3": [p[6] for p in pairs], "py_ddb": [p[7] for p in pairs]}
        servers["gm"] = [a + b for a, b in zip(servers["gm_s3"], servers["gm_ddb"])]
        servers["py"] = [a + b for a, b in zip(servers["py_s3"], servers["py_ddb"])]
    start = json.loads(Path(load_start_path).read_text()) if load_start_path else None
    end = loadavg()

    def fmt(l):
        return "not measured" if l is None else f"{l['1m']:.2f} / {l['5m']:.2f} / {l['15m']:.2f}"

    server_line = ""
    if servers:
        cpus = os.cpu_count() or 1
        # No run can take less wall time than its own CPU and the servers'
        # spread over every core.
        bound = [(c + s) / cpus for c, s in zip(gm_cpu, servers["gm"])]
        server_line = (f" servers_cpu geomigrate={median_range(servers['gm'], 's')} "
                       f"(S3 {median_range(servers['gm_s3'], 's')}, DynamoDB {median_range(servers['gm_ddb'], 's')}) "
                       f"seed={median_range(servers['py'], 's')} "
                       f"(S3 {median_range(servers['py_s3'], 's')}, DynamoDB {median_range(servers['py_ddb'], 's')}) "
                       f"geomigrate_wall_floor=(cpu+servers_cpu)/{cpus}={median_range(bound, 's')}")
    reqs = _requests_per_file(sides)
    reqs_why = _REQUESTS_MISSING if all(sides) else "a pair lacks its sides' counts"
    ddb = _requests_per_file(sides, "dynamodb_requests")
    ddb_why = ("no request log of the DynamoDB stand-in (GEOMIGRATE_INTEGRATION_DYNALITE_REQUEST_LOG, scripts/dynalite-server.js)"
               if all(sides) else "a pair lacks its sides' counts")
    outb = _bytes_per_file(sides)
    print(f"figure: {label} cpu_ratio={median_range(cpu_ratios)} wall_ratio={median_range(ratios)} "
          f"(geomigrate/seed; wall {1 / statistics.median(ratios):.2f}x faster) "
          f"cpu geomigrate={median_range(gm_cpu, 's')} seed={median_range(py_cpu, 's')} "
          f"wall geomigrate={median_range(gm, 's')} seed={median_range(py, 's')}{server_line} pairs={len(pairs)} "
          f"load average 1/5/15 min {fmt(start)} -> {fmt(end)}")

    def by_op(ops):
        return ", ".join(f"{k} {v:.2f}" for k, v in ops.items())

    if reqs:
        print(f"figure: {label}-s3-requests per file (the S3 stand-in's access log, whole run / files) "
              f"geomigrate={median_range(reqs['gm'])} [{by_op(reqs['gm_ops'])}] "
              f"seed={median_range(reqs['py'])} [{by_op(reqs['py_ops'])}] "
              f"ratio={median_range([a / b for a, b in zip(reqs['gm'], reqs['py'])])} pairs={len(pairs)}")
    else:
        print(f"figure: {label}-s3-requests not measured: {reqs_why}")
    if ddb:
        print(f"figure: {label}-dynamodb-requests per file (the DynamoDB stand-in's request log, whole run / files) "
              f"geomigrate={median_range(ddb['gm'])} [{by_op(ddb['gm_ops'])}] "
              f"seed={median_range(ddb['py'])} pairs={len(pairs)}")
    else:
        print(f"figure: {label}-dynamodb-requests not measured: {ddb_why}")
    if outb:
        print(f"figure: {label}-output-bytes per file (rasters in the destination bucket) "
              f"geomigrate={median_range(outb['gm'], 'B')} seed={median_range(outb['py'], 'B')} "
              f"ratio={median_range([a / b for a, b in zip(outb['gm'], outb['py'])])}; "
              f"all objects geomigrate={median_range(outb['gm_all'], 'B')} ({outb['gm_objects']} objects) "
              f"seed={median_range(outb['py_all'], 'B')} ({outb['py_objects']} objects)")
    else:
        print(f"figure: {label}-output-bytes not measured: a pair lacks its sides' listings")
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
        if servers:
            report["figures"].append(
                {"key": label + "-servers-cpu", "title": f"end to end, {label}, the S3 and DynamoDB stand-ins' CPU time", "unit": "s",
                 "subject": "the same runs: user + system CPU of versitygw and dynalite (/proc/PID/stat) during each side's run; "
                            "on a 2-CPU machine they share the cores with the side they serve.",
                 "values": servers["gm"], "anchor": {"name": "during the seed Python path's runs", "values": servers["py"]}})
        req_fig = {"key": label + "-s3-requests", "title": f"end to end, {label}, S3 requests per file", "unit": "requests",
                   "subject": "the same runs: every request the S3 stand-in's access log (versitygw --access-log) recorded during each "
                              "side's run, bucket creation included, divided by the files; counted by the server, not the client. "
                              "versitygw ignores conditions on CopyObject, so each conditional copy is a multipart copy (three requests).",
                   "anchor": {"name": "seed Python path", "values": reqs["py"] if reqs else []},
                   "goal": {"of": "value", "op": "<=", "limit": 10}}
        if reqs:
            req_fig["values"] = reqs["gm"]
            req_fig["note"] = ("Median per file by operation: geomigrate " + ", ".join(f"{k} {v:.2f}" for k, v in reqs["gm_ops"].items())
                               + "; seed " + ", ".join(f"{k} {v:.2f}" for k, v in reqs["py_ops"].items()))
        else:
            req_fig["values"], req_fig["error"] = [], reqs_why
        bytes_fig = {"key": label + "-output-bytes", "title": f"end to end, {label}, output bytes per file", "unit": "B",
                     "subject": "the same runs: the bytes of the converted rasters (objects ending .tif) each side left in its "
                                "destination bucket, divided by the files; geomigrate's STAC documents not counted.",
                     "anchor": {"name": "seed Python path", "values": outb["py"] if outb else []},
                     "goal": {"of": "ratio", "op": "<=", "limit": 1}}
        if outb:
            bytes_fig["values"] = outb["gm"]
            bytes_fig["note"] = (f"All objects, STAC documents included: geomigrate {statistics.median(outb['gm_all']):.0f} B per file "
                                 f"({outb['gm_objects']} objects), seed {statistics.median(outb['py_all']):.0f} B per file "
                                 f"({outb['py_objects']} objects)")
        else:
            bytes_fig["values"], bytes_fig["error"] = [], "a pair lacks its sides' listings of the destination buckets"
        # No anchor: the seed keeps no state (its count is in the note), and a ratio to zero is none.
        ddb_fig = {"key": label + "-dynamodb-requests", "title": f"end to end, {label}, DynamoDB requests per file", "unit": "requests",
                   "subject": "the same runs: every request the DynamoDB stand-in received during geomigrate's run (its request log, "
                              "scripts/dynalite-server.js), table creation and the run's scans included, divided by the files."}
        if ddb:
            ddb_fig["values"] = ddb["gm"]
            ddb_fig["note"] = ("Median per file by operation: " + ", ".join(f"{k} {v:.2f}" for k, v in ddb["gm_ops"].items())
                               + f"; the seed's path: {statistics.median(ddb['py']):.2f} per file")
        else:
            ddb_fig["values"], ddb_fig["error"] = [], ddb_why
        report["figures"] += [req_fig, ddb_fig, bytes_fig]
        Path(json_out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "generate":
        generate(args[0], int(args[1]), *args[2:])
    elif cmd == "upload":
        upload(*args)
    elif cmd == "mkbucket":
        boto3.client("s3", region_name=os.environ.get("AWS_REGION", "us-east-1")).create_bucket(Bucket=args[0])
    elif cmd == "seed":
        sys.path.insert(0, str(Path(__file__).parent))
        seed(*args)
    elif cmd == "convert":
        sys.path.insert(0, str(Path(__file__).parent))
        convert(*args)
    elif cmd == "tabulate":
        tabulate(*args)
    elif cmd == "side":
        side(*args)
    elif cmd == "summarize":
        summarize(*args)
    else:
        sys.exit(__doc__)
