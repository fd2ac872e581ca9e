#!/usr/bin/env bash
# Installs dynalite (the DynamoDB stand-in for integration tests) into
# .tools/node_modules. Skipped when already installed. Needs node and npm.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${DYNALITE_VERSION:-4}"
if [[ -x "$ROOT/.tools/node_modules/.bin/dynalite" ]]; then
	exit 0
fi
command -v npm >/dev/null || { echo "install-dynalite: npm not found" >&2; exit 1; }
mkdir -p "$ROOT/.tools"
echo "installing dynalite@$VERSION into $ROOT/.tools/node_modules" >&2
npm install --prefix "$ROOT/.tools" --no-audit --no-fund "dynalite@$VERSION" >&2
