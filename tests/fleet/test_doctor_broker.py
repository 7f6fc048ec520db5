"""`kilo-loop doctor --broker` against real redis-servers: the one docs/fleet.md advises passes, one
without an append-only file fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.cli import main
from kilo_loop.fleet.local import RedisServer

pytestmark = [pytest.mark.fleet,
              pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")]


@pytest.mark.parametrize(("persistent", "code", "needle"), [
    (True, 0, "✓ broker: append-only file: on"),
    (False, 1, "✗ broker: append-only file: off"),
])
def test_doctor_judges_a_real_redis_by_its_settings(tmp_path: Path, persistent: bool, code: int, needle: str) -> None:
    server = RedisServer(tmp_path / "redis", persistent=persistent).start()
    try:
        result = CliRunner().invoke(main, ["doctor", "--broker", server.url])
    finally:
        server.stop()
    assert result.exit_code == code, result.output
    assert needle in result.output and "✓ broker: maxmemory-policy: noeviction" in result.output
