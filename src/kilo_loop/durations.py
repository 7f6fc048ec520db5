"""Durations as people write them (`90`, `90s`, `10m`, `1h30m`, `2.5h`, `1d`; seconds when bare) and as
messages show them (`45s`, `10m`, `1h 30m`). Pure."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s|ms)?", re.IGNORECASE)
_UNITS = {"d": 86_400.0, "h": 3_600.0, "m": 60.0, "s": 1.0, "ms": 0.001, None: 1.0}


def parse_duration(text: str | float) -> float:
    """Seconds; ValueError with a clear message for anything else."""
    if isinstance(text, bool):
        raise TypeError("a duration is a number of seconds or text like 90s, 5m, 1h30m")
    if isinstance(text, int | float):
        if text < 0:
            raise ValueError("a duration cannot be negative")
        return float(text)
    raw = text.strip().lower().replace(" ", "")
    if not raw:
        raise ValueError("empty duration")
    total, position = 0.0, 0
    for match in _PART.finditer(raw):
        if match.start() != position:
            break
        unit = match.group(2)
        total += float(match.group(1)) * _UNITS[unit.lower() if unit else None]
        position = match.end()
    if position != len(raw):
        raise ValueError(f"not a duration: {text!r} (use e.g. 90, 90s, 5m, 1h30m)")
    return total


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
