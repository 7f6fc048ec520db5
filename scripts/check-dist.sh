#!/usr/bin/env bash
# Build the wheel and the sdist and check them as PyPI would (`twine check`). CI runs this beside
# scripts/test.sh; tests/docs/test_package.py also installs the wheel into a fresh venv.
# Usage: scripts/check-dist.sh [OUTDIR]   (default: a temporary directory, removed afterwards)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo"
KILO_LOOP_EXTRAS=test ./kilo-loop --version >/dev/null
out="${1:-}"
if [ -z "$out" ]; then
  out="$(mktemp -d)"
  trap 'rm -rf -- "$out"' EXIT
fi
echo "check-dist: building the wheel and the sdist into $out" >&2
.venv/bin/python -m build --outdir "$out" . >&2
.venv/bin/python -m twine check --strict "$out"/*.whl "$out"/*.tar.gz
ls -l "$out"
