#!/usr/bin/env bash
# Install the pinned agent CLIs (kilo, opencode) into <repo>/.tools for the e2e tests.
# Idempotent: does nothing when both binaries already report the pinned versions.
set -euo pipefail

KILO_VERSION="7.7.7"
OPENCODE_VERSION="1.18.33"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$repo/.tools"
bin="$tools/node_modules/.bin"

reports_version() {
    # $1 = binary path, $2 = expected version; true when the binary prints exactly that version.
    [ -x "$1" ] || return 1
    local got
    got="$("$1" --version 2>/dev/null </dev/null | tail -n 1 | tr -d '[:space:]')" || return 1
    [ "$got" = "$2" ]
}

if reports_version "$bin/kilo" "$KILO_VERSION" && reports_version "$bin/opencode" "$OPENCODE_VERSION"; then
    echo "agent CLIs already installed in $tools (kilo $KILO_VERSION, opencode $OPENCODE_VERSION)"
    exit 0
fi

command -v npm >/dev/null 2>&1 || { echo "error: npm not found on PATH (Node.js 20+ is required)" >&2; exit 1; }

mkdir -p "$tools"
npm install --prefix "$tools" --no-audit --no-fund \
    "@kilocode/cli@$KILO_VERSION" "opencode-ai@$OPENCODE_VERSION"

for pair in "kilo:$KILO_VERSION" "opencode:$OPENCODE_VERSION"; do
    name="${pair%%:*}"
    want="${pair#*:}"
    if ! reports_version "$bin/$name" "$want"; then
        echo "error: $bin/$name does not report version $want after install" >&2
        exit 1
    fi
done
echo "installed kilo $KILO_VERSION and opencode $OPENCODE_VERSION into $tools"
