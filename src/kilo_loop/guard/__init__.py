"""The destructive-command guard: the runtime check of one agent tool use (`runtime`), the shell
analysis it rests on (`shell`), the rule packs (`packs`), the CLI-side deny rules (`cli_rules`) and
the project's own patterns (`patterns`). Nothing is imported here: the pre-tool hook loads only what
one decision needs."""
