#!/usr/bin/env bash
# Deploy rehearsal: create the synthesized stack in moto's CloudFormation and check what exists
# (infra/rehearsal_integration_test.go). Uses the moto_server at GEOMIGRATE_MOTO_ENDPOINT when set;
# otherwise starts one on a free loopback port and stops it (by PID) on exit.
#   infra/rehearse.sh            (from the repository root; `make rehearse` runs it)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export AWS_EC2_METADATA_DISABLED=true

if [ -z "${GEOMIGRATE_MOTO_ENDPOINT:-}" ]; then
  command -v moto_server >/dev/null || {
    echo "rehearse needs moto_server (moto 5.2.1 with Flask): pip install 'moto[server]==5.2.1'" >&2; exit 2; }
  PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
  LOG="$(mktemp -t geomigrate-rehearse-moto.XXXXXX.log)"
  moto_server -H 127.0.0.1 -p "$PORT" >"$LOG" 2>&1 &
  MOTO_PID=$!
  trap 'kill "$MOTO_PID" 2>/dev/null || true; wait "$MOTO_PID" 2>/dev/null || true; rm -f "$LOG"' EXIT
  export GEOMIGRATE_MOTO_ENDPOINT="http://127.0.0.1:$PORT"
  for _ in $(seq 1 100); do
    if python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1] + '/moto-api/', timeout=1)" "$GEOMIGRATE_MOTO_ENDPOINT" 2>/dev/null; then
      break
    fi
    kill -0 "$MOTO_PID" 2>/dev/null || { echo "moto_server exited:" >&2; cat "$LOG" >&2; exit 1; }
    sleep 0.1
  done
  echo "moto_server pid $MOTO_PID on $GEOMIGRATE_MOTO_ENDPOINT"
fi

cd "$ROOT/infra"
go test -tags integration -count=1 -timeout 5m -run '^TestDeployRehearsalOnMoto$' -v .
