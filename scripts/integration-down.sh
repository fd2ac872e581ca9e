#!/usr/bin/env bash
# Stops the servers recorded in a state file by integration-up.sh, by PID
# (checking that each PID still runs the program it started), and removes
# their data directory and the state file.
#
#   scripts/integration-down.sh [STATE_FILE]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${1:-$ROOT/.tools/integration/state.env}"
[[ -f "$STATE" ]] || exit 0
# shellcheck disable=SC1090
. "$STATE"

stop() { # pid expected-name
	local pid="$1" name="$2" i
	[[ -n "$pid" ]] || return 0
	[[ -r "/proc/$pid/cmdline" ]] || return 0
	if ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$name"; then
		echo "integration-down: pid $pid is no longer $name; leaving it alone" >&2
		return 0
	fi
	kill "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
}

stop "${GEOMIGRATE_INTEGRATION_VERSITYGW_PID:-}" versitygw
stop "${GEOMIGRATE_INTEGRATION_DYNALITE_PID:-}" dynalite
stop "${GEOMIGRATE_INTEGRATION_MOTO_PID:-}" moto_server
case "${GEOMIGRATE_INTEGRATION_RUN_DIR:-}" in
*/geomigrate-integration.*) rm -rf "$GEOMIGRATE_INTEGRATION_RUN_DIR" ;;
esac
rm -f "$STATE"
