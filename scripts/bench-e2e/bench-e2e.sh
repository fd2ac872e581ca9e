#!/usr/bin/env bash
# End-to-end figure: N small GeoTIFFs (default 200, ~1.2 MB striped Byte
# tiles) migrated from one bucket of the loopback S3 stand-in to another by
# `geomigrate migrate --backend aws` (DynamoDB stand-in for the state) and by
# the source document's Python path (rasterio + boto3, sequential: the seed
# converts a local file, so each object is downloaded first). Runs are paired
# and alternated (A B, B A, …), every run into fresh buckets/tables; prints
# the median of the per-pair time ratios and its spread, and each side's S3
# requests and output bytes per file. (TestRequestsPerSmallFile, make
# test-integration, asserts the S3 requests per file on 4 files.)
#
#   scripts/with-integration-servers.sh scripts/bench-e2e/bench-e2e.sh BIN [N] [PAIRS]
#
# Needs the servers' environment (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_DYNAMODB,
# static credentials) and /usr/bin/python3 with rasterio, boto3 and tenacity.
# With the servers' PIDs in it (GEOMIGRATE_INTEGRATION_VERSITYGW_PID,
# GEOMIGRATE_INTEGRATION_DYNALITE_PID: integration-up.sh writes them) each run
# also reports the CPU the two servers spent during it: on a small machine they
# compete with either side for the same cores. With the S3 stand-in's access log
# (GEOMIGRATE_INTEGRATION_VERSITYGW_ACCESS_LOG) each run's S3 requests are counted
# by operation from the server's side, not the client's; without it they are
# "not measured"; so are the DynamoDB requests, from dynalite's request log
# (GEOMIGRATE_INTEGRATION_DYNALITE_REQUEST_LOG, scripts/dynalite-server.js). BENCH_E2E_WORKERS, when set, is
# geomigrate's --workers (default: its own).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="$(realpath "${1:?usage: bench-e2e.sh GEOMIGRATE_BIN [N] [PAIRS]}")"
N="${2:-200}"
PAIRS="${3:-3}"
PY=/usr/bin/python3
: "${AWS_ENDPOINT_URL_S3:?no S3 stand-in: run under scripts/with-integration-servers.sh}"
: "${AWS_ENDPOINT_URL_DYNAMODB:?no DynamoDB stand-in: run under scripts/with-integration-servers.sh}"
export AWS_EC2_METADATA_DISABLED=true
"$PY" -c 'import rasterio, boto3, tenacity' 2>/dev/null ||
	{ echo "bench-e2e: $PY lacks rasterio/boto3/tenacity (apt-get install python3-rasterio python3-boto3 python3-tenacity)" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/geomigrate-bench-e2e.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
RUN="e2e$(date +%s)"
SRC="$RUN-src"

"$PY" "$HERE/bench_e2e.py" generate "$WORK/in" "$N"
"$PY" "$HERE/bench_e2e.py" upload "$WORK/in" "$SRC" in/
echo "bench-e2e: $N files of $(stat -c %s "$WORK/in/tile_0000.tif") bytes in s3://$SRC/in/; $PAIRS pairs; $(nproc) CPUs"

now() { date +%s.%N; }
calc() { "$PY" -c "print($1)"; }
# cpu FILE: user + system seconds from GNU time's "%U %S" (the servers' CPU is not counted on
# either side).
cpu() { read -r u s <"$1" && calc "$u + $s"; }
# server_ticks: the user + system clock ticks (/proc/PID/stat fields 14 and 15) of
# versitygw and of dynalite, "S3 DYNAMODB"; "- -" without their PIDs.
TICK="$(getconf CLK_TCK)"
server_ticks() {
	local pid stat out=""
	for pid in "${GEOMIGRATE_INTEGRATION_VERSITYGW_PID:-}" "${GEOMIGRATE_INTEGRATION_DYNALITE_PID:-}"; do
		if [[ -n "$pid" && -r "/proc/$pid/stat" ]]; then
			read -r stat <"/proc/$pid/stat"
			# The command name (field 2) may hold spaces: count from after its ')'.
			read -r -a f <<<"${stat##*) }"
			out+="$((f[11] + f[12])) "
		else
			out+="- "
		fi
	done
	echo "$out"
}
# server_cpu BEFORE AFTER: the seconds each server spent between two server_ticks, "S3 DYNAMODB".
server_cpu() {
	local -a b=($1) a=($2)
	local i out=""
	for i in 0 1; do
		if [[ "${b[i]}" == - || "${a[i]}" == - ]]; then out+="nan "; else out+="$(calc "(${a[i]} - ${b[i]}) / $TICK") "; fi
	done
	echo "$out"
}
# log_offset: the S3 access log's and the DynamoDB request log's sizes in bytes now, "S3,DYNAMODB",
# where the next run's requests start; "-" for a log the servers do not write.
ACCESS_LOG="${GEOMIGRATE_INTEGRATION_VERSITYGW_ACCESS_LOG:-}"
DDB_LOG="${GEOMIGRATE_INTEGRATION_DYNALITE_REQUEST_LOG:-}"
log_offset() {
	local l out=""
	for l in "$ACCESS_LOG" "$DDB_LOG"; do
		if [[ -n "$l" && -r "$l" ]]; then out+="$(stat -c %s "$l"),"; else out+="-,"; fi
	done
	echo "${out%,}"
}
# side NAME OFFSETS BUCKET: the run's requests since OFFSETS and the bytes it left in BUCKET,
# written to $WORK/side-NAME.json; prints that path.
side() {
	"$PY" "$HERE/bench_e2e.py" side "${ACCESS_LOG:--}" "${2%,*}" "${DDB_LOG:--}" "${2#*,}" "$3" "$N" "$WORK/side-$1.json" >&2
	echo "$WORK/side-$1.json"
}
WORKERS=()
[[ -z "${BENCH_E2E_WORKERS:-}" ]] || WORKERS=(--workers "$BENCH_E2E_WORKERS")

run_geomigrate() { # index
	local dst="$RUN-gm-$1" t0 t1 s0 s1 off
	# The seed creates its bucket in its run: counted on both sides.
	off=$(log_offset)
	"$PY" "$HERE/bench_e2e.py" mkbucket "$dst"
	s0=$(server_ticks)
	t0=$(now)
	/usr/bin/time -f "%U %S" -o "$WORK/gm-$1.cpu" \
		"$BIN" migrate "s3://$SRC/in/" --backend aws --dest "s3://$dst/out" --state-table "$RUN-state-$1" \
		--create-table --state-dir "$WORK/state-$1" --progress plain "${WORKERS[@]}" >"$WORK/gm-$1.log" 2>&1 ||
		{ echo "bench-e2e: geomigrate run $1 failed:" >&2; tail -20 "$WORK/gm-$1.log" >&2; exit 1; }
	t1=$(now)
	s1=$(server_ticks)
	local report done
	report="$(sed -n 's/^report: //p' "$WORK/gm-$1.log" | tail -1)"
	done="$("$PY" -c "import json,sys; r=json.load(open(sys.argv[1])); print(sum(f['status']=='completed' for f in r['files']))" "$report")"
	[[ "$done" == "$N" ]] || { echo "bench-e2e: geomigrate run $1 completed $done of $N files" >&2; exit 1; }
	echo "$(calc "$t1 - $t0") $(cpu "$WORK/gm-$1.cpu") $(server_cpu "$s0" "$s1") $(side "gm-$1" "$off" "$dst")"
}

run_seed() { # index
	local t0 t1 s0 s1 off
	off=$(log_offset)
	s0=$(server_ticks)
	t0=$(now)
	(cd "$HERE" && /usr/bin/time -f "%U %S" -o "$WORK/py-$1.cpu" "$PY" bench_e2e.py seed "$SRC" in/ "$RUN-py-$1") >"$WORK/py-$1.log" 2>&1 ||
		{ echo "bench-e2e: seed run $1 failed:" >&2; tail -20 "$WORK/py-$1.log" >&2; exit 1; }
	t1=$(now)
	s1=$(server_ticks)
	echo "$(calc "$t1 - $t0") $(cpu "$WORK/py-$1.cpu") $(server_cpu "$s0" "$s1") $(side "py-$1" "$off" "$RUN-py-$1")"
}

: >"$WORK/pairs"
"$PY" -B -c 'import json, sys; sys.path.insert(0, sys.argv[1]); import bench_e2e; print(json.dumps(bench_e2e.loadavg()))' "$HERE" >"$WORK/load-start.json"
for ((i = 1; i <= PAIRS; i++)); do
	# Alternate which side goes first, so neither always runs on a warm cache.
	if ((i % 2)); then
		read -r g gc gs3 gddb gside < <(run_geomigrate "$i"); read -r p pc ps3 pddb pside < <(run_seed "$i")
	else
		read -r p pc ps3 pddb pside < <(run_seed "$i"); read -r g gc gs3 gddb gside < <(run_geomigrate "$i")
	fi
	printf 'pair %d: geomigrate %.2f s (CPU %.2f s; servers S3 %.2f s, DynamoDB %.2f s), seed %.2f s (CPU %.2f s; servers S3 %.2f s, DynamoDB %.2f s), ratio %.3f\n' \
		"$i" "$g" "$gc" "$gs3" "$gddb" "$p" "$pc" "$ps3" "$pddb" "$(calc "$g / $p")"
	echo "$g $p $gc $pc $gs3 $gddb $ps3 $pddb $gside $pside" >>"$WORK/pairs"
done
"$PY" "$HERE/bench_e2e.py" summarize "$WORK/pairs" "e2e-$N-small" "$WORK/load-start.json" ${BENCH_E2E_JSON:+"$BENCH_E2E_JSON"}
