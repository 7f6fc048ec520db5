"""When a run reports that its backend's quota is spent, and until when (from its events)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

_KEYS = ("quotaResetAt", "resetAt", "until")


def _epoch(value: Any) -> float | None:
    if isinstance(value, (int, float)) and value > 0:
        return float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return None
    return None


def quota_pause(event: dict[str, Any]) -> float | None:
    """The reset time (epoch seconds) a `waiting-quota` event carries, or None for any other event."""
    data = event.get("data") or {}
    if not isinstance(data, dict):
        return None
    waiting = data.get("status") == "waiting-quota" or event.get("type") in {"quota-wait", "waiting-quota"}
    if not waiting:
        return None
    for key in _KEYS:
        when = _epoch(data.get(key))
        if when is not None:
            return when
    return None
