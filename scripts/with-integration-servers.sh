#!/usr/bin/env bash
# Runs a command with versitygw, dynalite and moto_server started for it alone (own ports,
# own state file) and always stops them afterwards, whatever the exit status.
#
#   scripts/with-integration-servers.sh go test -tags integration ./...
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/install-versitygw.sh"
"$ROOT/scripts/install-dynalite.sh"
STATE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/geomigrate-integration-state.XXXXXX")"
STATE="$STATE_DIR/state.env"
cleanup() {
	"$ROOT/scripts/integration-down.sh" "$STATE"
	rm -rf "$STATE_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
"$ROOT/scripts/integration-up.sh" "$STATE"
# shellcheck disable=SC1090
. "$STATE"
"$@"
