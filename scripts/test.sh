#!/usr/bin/env bash
# The test suite, in parallel (pytest-xdist).
#   scripts/test.sh              everything: unit, integration, web, fleet, browser (Debian's chromium) and
#                                end-to-end with the real agent CLIs (installed pinned into .tools/)
#   scripts/test.sh --quick      the edit-test loop: no real agent CLI, no browser, no Redis, nothing slow
#   scripts/test.sh [--quick] ARGS   pytest arguments are passed on (a path, -k, -m, -n 0 to run serially)
# KILO_LOOP_TEST_WORKERS sets the number of worker processes (default: 2 per core, the e2e tests mostly
# wait on the agent CLIs and the scripted model).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo"
quick=0
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
KILO_LOOP_EXTRAS=test ./kilo-loop --version >/dev/null
args=(-n "${KILO_LOOP_TEST_WORKERS:-$(( $(nproc) * 2 ))}" --dist worksteal --durations=30)
if [ "$quick" = 1 ]; then
  args+=(-m "not e2e and not browser and not fleet and not slow")
else
  scripts/install-system-packages.sh
  scripts/install-agent-clis.sh
fi
exec .venv/bin/python -m pytest "${args[@]}" "$@"
