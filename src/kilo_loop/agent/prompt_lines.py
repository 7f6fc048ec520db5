"""The lines of the loop's prompt that an agent can read back (the dry-run simulator, a test stub).

`loop.prompt` writes them; they are defined here, below the loop, so a backend can read them
without importing the loop.
"""

from __future__ import annotations

import re

STAGE_LINE = re.compile(r"^Current stage: (?P<id>\S+) — (?P<title>.+)$", re.MULTILINE)
ITERATION_LINE = re.compile(r"^Iteration (?P<n>\d+) of \d+\.$", re.MULTILINE)
# The report contract names the files to write: "write `.kilocode-loop/progress.json`".
REPORT_FILE = re.compile(r"write `(?P<path>[^`\n]+)`")
