#!/usr/bin/env bash
# Refresh the dashboard screenshot the README and the docs show: the browser test of the run view takes
# it (a dry run of a 12-stage plan under a cost budget, at 1280×800), this copies it into docs/assets/.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo"
KILO_LOOP_EXTRAS=test ./kilo-loop --version >/dev/null
.venv/bin/python -m pytest -q -p no:cacheprovider \
  "tests/browser/test_run_view_browser.py::test_headline_clock_and_budget_chart[desktop]"
mkdir -p docs/assets
cp test-artifacts/run-top-desktop.png docs/assets/dashboard.png
echo "docs/assets/dashboard.png refreshed: commit it"
