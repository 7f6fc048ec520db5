#!/usr/bin/env bash
# The whole test suite: unit, integration, end-to-end with the real kilo/opencode
# CLIs (installed pinned into .tools/), and browser tests (Debian's chromium).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo"
KILO_LOOP_EXTRAS=test ./kilo-loop --version >/dev/null
scripts/install-agent-clis.sh
exec .venv/bin/python -m pytest "$@"
