"""kilo-loop: run a headless coding agent against a git repository until a goal is done."""

__version__ = "0.1.0"
