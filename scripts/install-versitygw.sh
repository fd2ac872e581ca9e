#!/usr/bin/env bash
# Installs versitygw (the S3 stand-in for integration tests) into .tools/bin.
# Skipped when the pinned version is already built. Cold: ~70-90 s.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${VERSITYGW_VERSION:-v1.8.0}"
BIN="$ROOT/.tools/bin"
STAMP="$BIN/.versitygw.version"
if [[ -x "$BIN/versitygw" && -f "$STAMP" && "$(cat "$STAMP")" == "$VERSION" ]]; then
	exit 0
fi
mkdir -p "$BIN"
echo "installing versitygw $VERSION into $BIN (about 70 s the first time)" >&2
GOBIN="$BIN" GOFLAGS=-buildvcs=false go install "github.com/versity/versitygw/cmd/versitygw@$VERSION"
echo "$VERSION" >"$STAMP"
