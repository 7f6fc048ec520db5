"""SVG snapshots of `kilo-loop watch` at 80x24 and 160x50, drawn from a fixed run and a fixed clock.
Refresh them after a deliberate change of the view with `KILO_LOOP_SNAPSHOT_UPDATE=1 pytest tests/tui`."""

from __future__ import annotations

from typing import Any

import pytest

from kilo_loop.tui.app import WatchApp
from tests.tui.fake_state import BUDGET, EVENTS, NOW, STATE


def _app() -> WatchApp:
    return WatchApp(None, state=dict(STATE), events=list(EVENTS), budget=BUDGET, now=lambda: NOW)


@pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=["80x24", "160x50"])
def test_the_run_view(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(_app(), terminal_size=size)


def test_the_question_dialog_at_80x24(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=(80, 24), press=["a"])


def test_the_log_filtered_to_guard_blocks_at_80x24(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=(80, 24), press=["f", "f", "f", "f"])
