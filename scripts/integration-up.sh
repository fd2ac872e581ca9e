#!/usr/bin/env bash
# Starts versitygw (S3), dynalite (DynamoDB) and moto_server (SQS, and a
# second DynamoDB and S3 on one port) on free 127.0.0.1 ports and writes
# their endpoints, credentials and PIDs to a state file (sourceable shell:
# `export NAME=value` lines).
#
# The endpoints are exported under the SDK's own names, AWS_ENDPOINT_URL_S3
# (versitygw) and AWS_ENDPOINT_URL_DYNAMODB (dynalite), which every
# aws-sdk-go-v2 client honours; moto's single endpoint is
# GEOMIGRATE_MOTO_ENDPOINT, for tests that point clients at it explicitly.
#
#   scripts/integration-up.sh [STATE_FILE]    default .tools/integration/state.env
#
# Stop them with scripts/integration-down.sh STATE_FILE.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${1:-$ROOT/.tools/integration/state.env}"
VGW="$ROOT/.tools/bin/versitygw"
DYNALITE="$ROOT/.tools/node_modules/.bin/dynalite"
[[ -x "$VGW" ]] || { echo "integration-up: $VGW missing; run scripts/install-versitygw.sh" >&2; exit 1; }
[[ -x "$DYNALITE" ]] || { echo "integration-up: $DYNALITE missing; run scripts/install-dynalite.sh" >&2; exit 1; }
MOTO="$(command -v moto_server || true)"
[[ -n "$MOTO" ]] || { echo "integration-up: moto_server missing; install it with: pip install 'moto[server]==5.2.1'" >&2; exit 1; }
if [[ -f "$STATE" ]]; then
	echo "integration-up: $STATE exists (servers already up?); run scripts/integration-down.sh $STATE first" >&2
	exit 1
fi

ACCESS="${GEOMIGRATE_TEST_ACCESS_KEY:-geomigrate-test}"
SECRET="${GEOMIGRATE_TEST_SECRET_KEY:-geomigrate-test-secret}"

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/geomigrate-integration.XXXXXX")"
mkdir -p "$RUN_DIR/s3" "$RUN_DIR/sidecar" "$(dirname "$STATE")"

free_port() {
	local py
	for py in python3 /usr/bin/python3; do
		if command -v "$py" >/dev/null 2>&1; then
			"$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
			return
		fi
	done
	# Fallback: a random high port not currently listening.
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}

wait_port() { # port pid name
	local i
	for ((i = 0; i < 150; i++)); do
		if ! kill -0 "$2" 2>/dev/null; then
			echo "integration-up: $3 exited early; log:" >&2
			cat "$RUN_DIR/$3.log" >&2 || true
			return 1
		fi
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "integration-up: $3 did not listen on 127.0.0.1:$1 within 15 s" >&2
	return 1
}

# versitygw keeps object metadata in user xattrs; fall back to a sidecar
# directory when the filesystem lacks them.
META=()
probe="$RUN_DIR/s3/.xattr-probe"
touch "$probe"
if ! { command -v setfattr >/dev/null && setfattr -n user.geomigrate -v 1 "$probe" 2>/dev/null; } &&
	! { command -v python3 >/dev/null && python3 -c "import os,sys; os.setxattr(sys.argv[1], 'user.geomigrate', b'1')" "$probe" 2>/dev/null; }; then
	META=(--sidecar "$RUN_DIR/sidecar")
fi
rm -f "$probe"

S3_PORT="$(free_port)"
# The access log names each request's S3 operation (s3_PutObject, s3_CopyObject …, which the
# stdout log cannot tell apart): scripts/bench-e2e counts each side's requests from it.
"$VGW" --port "127.0.0.1:$S3_PORT" --access "$ACCESS" --secret "$SECRET" \
	--access-log "$RUN_DIR/versitygw-access.log" posix "${META[@]}" "$RUN_DIR/s3" >"$RUN_DIR/versitygw.log" 2>&1 &
S3_PID=$!
DDB_PORT="$(free_port)"
# Through scripts/dynalite-server.js: dynalite's own CLI dies when a client
# hangs up mid-request (a killed test process).
NODE_PATH="$ROOT/.tools/node_modules" DYNALITE_REQUEST_LOG="$RUN_DIR/dynalite-requests.log" node "$ROOT/scripts/dynalite-server.js" \
	--host 127.0.0.1 --port "$DDB_PORT" --createTableMs 20 --deleteTableMs 20 --updateTableMs 20 \
	>"$RUN_DIR/dynalite.log" 2>&1 &
DDB_PID=$!
MOTO_PORT="$(free_port)"
"$MOTO" -H 127.0.0.1 -p "$MOTO_PORT" >"$RUN_DIR/moto_server.log" 2>&1 &
MOTO_PID=$!

cleanup_on_error() {
	kill "$S3_PID" "$DDB_PID" "$MOTO_PID" 2>/dev/null || true
	rm -rf "$RUN_DIR"
}
trap cleanup_on_error ERR
wait_port "$S3_PORT" "$S3_PID" versitygw
wait_port "$DDB_PORT" "$DDB_PID" dynalite
wait_port "$MOTO_PORT" "$MOTO_PID" moto_server
trap - ERR

cat >"$STATE" <<STATE
# written by scripts/integration-up.sh; stop with scripts/integration-down.sh
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$S3_PORT
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$DDB_PORT
export GEOMIGRATE_MOTO_ENDPOINT=http://127.0.0.1:$MOTO_PORT
export GEOMIGRATE_S3_PATH_STYLE=true
export AWS_EC2_METADATA_DISABLED=true
export AWS_ACCESS_KEY_ID=$ACCESS
export AWS_SECRET_ACCESS_KEY=$SECRET
export AWS_REGION=us-east-1
export GEOMIGRATE_INTEGRATION_VERSITYGW_PID=$S3_PID
export GEOMIGRATE_INTEGRATION_VERSITYGW_ACCESS_LOG=$RUN_DIR/versitygw-access.log
export GEOMIGRATE_INTEGRATION_DYNALITE_PID=$DDB_PID
export GEOMIGRATE_INTEGRATION_DYNALITE_REQUEST_LOG=$RUN_DIR/dynalite-requests.log
export GEOMIGRATE_INTEGRATION_MOTO_PID=$MOTO_PID
export GEOMIGRATE_INTEGRATION_RUN_DIR=$RUN_DIR
STATE
echo "integration-up: versitygw pid $S3_PID at http://127.0.0.1:$S3_PORT, dynalite pid $DDB_PID at http://127.0.0.1:$DDB_PORT, moto_server pid $MOTO_PID at http://127.0.0.1:$MOTO_PORT (state $STATE)" >&2
