"""One agent session as the loop and the review both run it: the session runner (stream, guard,
kill on Stop) and what the next prompt is told about the guard. Below both the loop and the review,
so neither has to import the other to run an agent."""
