"""The documentation site builds with `mkdocs build --strict`: every page in the nav, every link and
anchor resolves, and the generated reference pages are filled from the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert "maxCost" in (site / "reference" / "configuration" / "index.html").read_text()
    assert "--max-guard-blocks" in (site / "reference" / "cli" / "index.html").read_text()
    assert "git-push-force" in (site / "reference" / "guard-packs" / "index.html").read_text()
    assert "Keep a Changelog" in (site / "changelog" / "index.html").read_text()
