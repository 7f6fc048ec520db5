"""Claude Code: stream-json sessions with the guard as a PreToolUse hook."""
