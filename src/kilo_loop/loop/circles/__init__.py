"""Going in circles, caught by the loop itself and without a model: the same verify failure again
and again while files change (thrash), the work tree coming back to where it was (oscillation),
the same tool call over and over inside one session (a doom loop), and the response ladder.

Each concept is a module of pure functions (`signature`, `thrash`, `oscillation`, `doom`,
`ladder`); `fingerprint` reads the changed files' bytes; `watch` is what the orchestrator calls,
and it turns a detector's exception into a warning so no detector can end a run."""
