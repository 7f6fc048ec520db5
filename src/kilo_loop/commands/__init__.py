"""The CLI's commands, one module each (imported on first use by `cli.LazyGroup`). Nothing here: the
hot `guard` path imports `commands.guard_fast` without Click."""
