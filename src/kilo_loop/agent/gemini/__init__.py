"""Gemini CLI: stream-json sessions with the guard as a BeforeTool hook."""
