"""`kilo-loop doctor --broker`: a fleet's Redis judged by its settings (pure checks; no Redis here —
tests/fleet/test_doctor_broker.py asks a real redis-server)."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from kilo_loop.cli import main
from kilo_loop.fleet.broker_checks import broker_checks


def facts(**config: str) -> dict[str, Any]:
    base = {"appendonly": "yes", "appendfsync": "everysec", "maxmemory-policy": "noeviction", "maxmemory": "0",
            "save": ""}
    return {"url": "redis://h:6379/0", "version": "7.0.15", "config": {**base, **config}}


def by_name(found: list[Any]) -> dict[str, str]:
    return {check.check: check.status for check in found}


def test_the_advised_settings_pass() -> None:
    assert set(by_name(broker_checks(facts())).values()) == {"ok"}
    assert by_name(broker_checks(facts(appendfsync="always")))["broker: appendfsync"] == "ok"


@pytest.mark.parametrize(("config", "name", "status"), [
    ({"appendonly": "no"}, "broker: append-only file", "fail"),
    ({"appendonly": "no"}, "broker: appendfsync", "warn"),
    ({"appendfsync": "no"}, "broker: appendfsync", "warn"),
    ({"maxmemory-policy": "allkeys-lru", "maxmemory": "1073741824"}, "broker: maxmemory-policy", "fail"),
    ({"maxmemory-policy": "volatile-lru"}, "broker: maxmemory-policy", "warn"),
])
def test_each_risky_setting_is_named_with_its_fix(config: dict[str, str], name: str, status: str) -> None:
    found = {check.check: check for check in broker_checks(facts(**config))}
    assert found[name].status == status and found[name].fix


def test_a_redis_that_does_not_answer_fails_one_check_and_names_no_password() -> None:
    found = broker_checks({"url": "redis://:***@h:1/0", "error": "Connection refused."})
    assert [(c.check, c.status) for c in found] == [("broker: reachable", "fail")]
    assert "***" in found[0].detail


def test_a_refused_config_get_is_a_warning_that_says_what_to_check() -> None:
    found = broker_checks({"url": "redis://h/0", "version": "7", "config": None, "configError": "unknown command"})
    assert [c.status for c in found] == ["ok", "warn"] and "noeviction" in found[1].fix


def test_doctor_broker_on_a_redis_nobody_serves_exits_1_without_the_password() -> None:
    result = CliRunner().invoke(main, ["doctor", "--broker", "redis://:hunter2-x@127.0.0.1:1/0"])
    assert result.exit_code == 1 and "✗ broker: reachable" in result.output and "hunter2-x" not in result.output
    assert "claude" not in result.output, "only the broker is checked unless --runtime asks for more"


def test_doctor_broker_that_is_not_a_redis_url_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["doctor", "--broker", "localhost:6379"])
    assert result.exit_code == 2 and "not a Redis URL" in result.output
