"""Cursor: `cursor-agent` stream-json sessions (tested on a recorded stream; not installable here)."""
