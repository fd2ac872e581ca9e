#!/usr/bin/env bash
# The end-to-end benchmark's small files migrated by several geomigrate
# builds and --workers counts (and the seed's Python path), one upload, in
# rounds that repeat the given order; for each run its wall time, CPU (user
# + system, GNU time), the CPU versitygw and dynalite spent during it
# (/proc/PID/stat) and the floor no run on this machine can beat: (own CPU
# + servers' CPU) ÷ CPUs. docs/decisions/0116.
#
#   scripts/with-integration-servers.sh scripts/bench-e2e/workers-sweep.sh N ROUNDS LABEL=BIN:WORKERS ... [seed]
#
# e.g. … workers-sweep.sh 200 3 w2=bin/geomigrate:2 w4=bin/geomigrate:4 seed
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
N="${1:?usage: workers-sweep.sh N ROUNDS LABEL=BIN:WORKERS ... [seed]}"
ROUNDS="${2:?usage: workers-sweep.sh N ROUNDS LABEL=BIN:WORKERS ... [seed]}"
shift 2
PY=/usr/bin/python3
: "${AWS_ENDPOINT_URL_S3:?no S3 stand-in: run under scripts/with-integration-servers.sh}"
: "${GEOMIGRATE_INTEGRATION_VERSITYGW_PID:?no server PIDs: run under scripts/with-integration-servers.sh}"
export AWS_EC2_METADATA_DISABLED=true
WORK="$(mktemp -d "${TMPDIR:-/tmp}/geomigrate-workers-sweep.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
RUN="sw$(date +%s)"
"$PY" "$HERE/bench_e2e.py" generate "$WORK/in" "$N"
"$PY" "$HERE/bench_e2e.py" upload "$WORK/in" "$RUN-src" in/
TICK="$(getconf CLK_TCK)"
# ticks: user + system clock ticks of versitygw, then dynalite.
ticks() {
	local pid stat
	for pid in "$GEOMIGRATE_INTEGRATION_VERSITYGW_PID" "$GEOMIGRATE_INTEGRATION_DYNALITE_PID"; do
		read -r stat <"/proc/$pid/stat"
		read -r -a f <<<"${stat##*) }"
		echo -n "$((f[11] + f[12])) "
	done
}
echo "workers-sweep: $N files, $ROUNDS rounds, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= ROUNDS; r++)); do
	for entry in "$@"; do
		label="${entry%%=*}" i="$r-${entry%%=*}"
		if [[ "$entry" == seed ]]; then
			s0=($(ticks)) t0=$(date +%s.%N)
			(cd "$HERE" && /usr/bin/time -f "%U %S" -o "$WORK/cpu-$i" "$PY" bench_e2e.py seed "$RUN-src" in/ "$RUN-py-$r") >"$WORK/log-$i" 2>&1 ||
				{ tail -20 "$WORK/log-$i" >&2; exit 1; }
		else
			spec="${entry#*=}" bin="$(realpath "${spec%:*}")" workers="${spec##*:}"
			"$PY" "$HERE/bench_e2e.py" mkbucket "$RUN-gm-$i"
			s0=($(ticks)) t0=$(date +%s.%N)
			/usr/bin/time -f "%U %S" -o "$WORK/cpu-$i" "$bin" migrate "s3://$RUN-src/in/" --backend aws --dest "s3://$RUN-gm-$i/out" \
				--state-table "$RUN-st-$i" --create-table --state-dir "$WORK/state-$i" --progress plain --workers "$workers" >"$WORK/log-$i" 2>&1 ||
				{ tail -20 "$WORK/log-$i" >&2; exit 1; }
		fi
		t1=$(date +%s.%N) s1=($(ticks))
		read -r u s <"$WORK/cpu-$i"
		"$PY" -c '
import os, sys
label, r = sys.argv[1], sys.argv[2]
wall = float(sys.argv[4]) - float(sys.argv[3])
u, s = float(sys.argv[5]), float(sys.argv[6])
s3, ddb = int(sys.argv[7]) / int(sys.argv[9]), int(sys.argv[8]) / int(sys.argv[9])
cpus = os.cpu_count() or 1
load = open("/proc/loadavg").read().split()[0]
print(f"{label:10s} round={r} wall={wall:6.2f}s cpu={u + s:6.2f}s servers s3={s3:5.2f}s dynamodb={ddb:5.2f}s floor=(cpu+servers)/{cpus}={(u + s + s3 + ddb) / cpus:5.2f}s load1={load}")
' "$label" "$r" "$t0" "$t1" "$u" "$s" "$((s1[0] - s0[0]))" "$((s1[1] - s0[1]))" "$TICK"
	done
done
