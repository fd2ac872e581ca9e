#!/usr/bin/env bash
# Runs a command (a `go test`, usually), its output streamed as it comes, and
# when it fails prints the heads of its failures once more at the end: CI
# logs are read from their tail, where a crashed test binary leaves only the
# last goroutines of its dump, not the "fatal error:" or signal line above
# them that says what happened.
#
#   scripts/failures-last.sh go test -race ./...
set -uo pipefail
log="$(mktemp "${TMPDIR:-/tmp}/failures-last.XXXXXX")"
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
	echo
	echo "=== failures-last: '$*' exited $status; the head of each failure, as printed above ==="
	# A failed test's line; a crash's header and the 20 lines after it (the
	# crashing goroutine's frames); a data race's report start.
	awk '
		/^(--- FAIL|FAIL[ \t])/ { print; next }
		/^(panic:|fatal error:|SIG[A-Z]+:|\[signal |runtime: |WARNING: DATA RACE|ThreadSanitizer|.*test timed out after)/ {
			if (crashes++ < 5) { left = 21 } else if (crashes == 6) { print "(more crash headers left out)" }
		}
		left > 0 { print; left-- }
	' "$log" | head -n 200
fi
exit "$status"
