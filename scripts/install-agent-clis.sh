#!/usr/bin/env bash
# Install the pinned agent CLIs into <repo>/.tools for the e2e tests:
# kilo and opencode (the kilo runtimes), Claude Code, Codex and Gemini CLI.
# Cursor's `cursor-agent` is not on a package registry; its backend is tested on a recorded stream.
# Idempotent: does nothing when every binary already reports its pinned version.
# TOOLS_DIR=<dir> installs elsewhere (the e2e tests also look in <repo>/.tools-extra).
set -euo pipefail

KILO_VERSION="7.7.7"
OPENCODE_VERSION="1.18.33"
CLAUDE_VERSION="2.1.328"
CODEX_VERSION="0.169.0"
GEMINI_VERSION="0.61.0"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${TOOLS_DIR:-$repo/.tools}"
bin="$tools/node_modules/.bin"

# binary|what `--version` prints|npm package@version
pins=(
    "kilo|$KILO_VERSION|@kilocode/cli@$KILO_VERSION"
    "opencode|$OPENCODE_VERSION|opencode-ai@$OPENCODE_VERSION"
    "claude|$CLAUDE_VERSION (Claude Code)|@anthropic-ai/claude-code@$CLAUDE_VERSION"
    "codex|codex-cli $CODEX_VERSION|@openai/codex@$CODEX_VERSION"
    "gemini|$GEMINI_VERSION|@google/gemini-cli@$GEMINI_VERSION"
)

reports_version() {
    # $1 = binary path, $2 = expected version line; true when the binary prints exactly that.
    [ -x "$1" ] || return 1
    local got
    got="$("$1" --version 2>/dev/null </dev/null | tail -n 1 | tr -d '\r')" || return 1
    [ "$got" = "$2" ]
}

missing=()
for pin in "${pins[@]}"; do
    IFS='|' read -r name want package <<<"$pin"
    if ! reports_version "$bin/$name" "$want"; then
        missing+=("$package")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "agent CLIs already installed in $tools"
    exit 0
fi

command -v npm >/dev/null 2>&1 || { echo "error: npm not found on PATH (Node.js 20+ is required)" >&2; exit 1; }

mkdir -p "$tools"
npm install --prefix "$tools" --no-audit --no-fund --save-exact "${missing[@]}"

for pin in "${pins[@]}"; do
    IFS='|' read -r name want package <<<"$pin"
    if ! reports_version "$bin/$name" "$want"; then
        echo "error: $bin/$name does not report version '$want' after install" >&2
        exit 1
    fi
done
echo "installed ${missing[*]} into $tools"
