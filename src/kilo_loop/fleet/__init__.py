"""Many plans at once: parallel runs in git worktrees on one machine, and a fleet of workers on
Dramatiq + Redis. Each plan runs as its own `kilo-loop` process; its typed events (events.jsonl)
go out and its commands (inbox.jsonl) come in through files, so nothing here needs a port."""
