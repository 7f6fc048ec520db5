"""Durations as people write them (`90s`, `10m`, `1h30m`) and as messages show them. Pure."""

from __future__ import annotations

import re

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|h|m|s)?", re.IGNORECASE)
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "": 1.0}


def parse_duration(text: str) -> float:
    """Seconds from `90`, `90s`, `10m`, `1h30m`, `500ms`; ValueError for anything else."""
    compact = text.strip().replace(" ", "")
    parts = list(_DURATION_PART.finditer(compact))
    if not compact or "".join(part.group(0) for part in parts) != compact:
        raise ValueError(f"not a duration: {text!r} (write 90s, 10m, 1h)")
    return sum(float(part.group(1)) * _UNIT_SECONDS[(part.group(2) or "").lower()] for part in parts)


def format_duration(seconds: float) -> str:
    """`45s`, `10m`, `1h 30m`: for messages."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, rest = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m" + (f" {rest}s" if rest else "")
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h" + (f" {minutes}m" if minutes else "")
