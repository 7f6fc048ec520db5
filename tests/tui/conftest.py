"""SVG snapshots of the terminal UI: the app is driven headless by Textual's own pilot, its screen
exported as SVG (Textual's `export_screenshot`) and compared with the file kept beside the tests.
`KILO_LOOP_SNAPSHOT_UPDATE=1` rewrites the files after a deliberate change of the view.

(pytest-textual-snapshot would do this, but it pins syrupy 4.8, which refuses the pytest this suite
pins; the comparison itself is these few lines.)"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from textual.app import App

SNAPSHOTS = Path(__file__).parent / "__snapshots__"

SnapCompare = Callable[..., bool]


async def _screenshot(app: App[object], size: tuple[int, int], press: Sequence[str]) -> str:
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for key in press:
            await pilot.press(key)
            await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        # the export names its CSS classes after a hash of the screen (`terminal-719160972-r1`): the name is
        # not the picture, so it is left out of the comparison
        return re.sub(r"terminal-\d+", "terminal", app.export_screenshot())


@pytest.fixture
def snap_compare(request: pytest.FixtureRequest) -> SnapCompare:
    path = SNAPSHOTS / Path(request.node.path).stem / f"{request.node.name}.svg"

    def compare(app: App[object], terminal_size: tuple[int, int] = (80, 24), press: Sequence[str] = ()) -> bool:
        svg = asyncio.run(_screenshot(app, terminal_size, press))
        if os.environ.get("KILO_LOOP_SNAPSHOT_UPDATE") == "1" or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(svg, encoding="utf-8")
            return os.environ.get("KILO_LOOP_SNAPSHOT_UPDATE") == "1"  # a missing snapshot is a failure
        if svg == path.read_text(encoding="utf-8"):
            return True
        failed = path.with_suffix(".actual.svg")
        failed.write_text(svg, encoding="utf-8")
        pytest.fail(f"the screen differs from {path.name}; this run's is {failed} (open both in a browser)")

    return compare
