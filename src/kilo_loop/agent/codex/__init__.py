"""Codex: `codex exec --json` sessions with the guard as a PreToolUse hook."""
